//! Turns `data/bank_registry.csv` into the flat blob the binary embeds (see `src/blob.rs`), so
//! the server starts without parsing 3 MB of CSV; links the binary as `mcp_build::link_binaries`
//! says (packed relative relocations, the hot code together).

#[path = "src/blob.rs"]
#[allow(dead_code)]
mod blob;

fn main() {
    mcp_build::link_binaries();
    println!("cargo:rerun-if-changed=data/bank_registry.csv");
    println!("cargo:rerun-if-changed=src/blob.rs");
    let csv = std::fs::File::open("data/bank_registry.csv").expect("data/bank_registry.csv");
    let bytes = blob::build(csv).unwrap_or_else(|e| panic!("bank registry: {e}"));
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("registry.bin");
    std::fs::write(out, bytes).expect("write registry.bin");
}
