//! Digests the embedded demo data at build time, so that naming the demo database's cache file
//! costs nothing at start-up; links the binaries as `mcp_build::link_binaries` says (packed relative
//! relocations, the hot code together).

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

fn main() {
    mcp_build::link_binaries();
    let mut h = Sha256::new();
    for name in ["companies.csv", "customers.csv", "interactions.csv"] {
        let path = format!("data/{name}");
        println!("cargo:rerun-if-changed={path}");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    let digest = h.finalize().iter().take(8).fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    });
    println!("cargo:rustc-env=CRM_DEMO_DATA_DIGEST={digest}");
}
