//! Links this package's binaries with packed relative relocations where the loader reads them
//! (see `mcp_build::pack_relative_relocations`): a smaller file to map and less work before `main`.

fn main() {
    mcp_build::pack_relative_relocations();
}
