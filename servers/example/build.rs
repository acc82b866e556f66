//! Links this package's binaries as `mcp_build::link_binaries` says: packed relative relocations
//! where the loader reads them, and the code a stdio server runs laid out together, so that a
//! process maps less of its file and starts sooner.

fn main() {
    mcp_build::link_binaries();
}
