//! Build-script helpers for MCP server binaries.
//!
//! [`pack_relative_relocations`] links a package's binaries with packed relative relocations
//! (`DT_RELR`) when the loader that will run them reads that table. A position-independent Rust
//! binary holds a pointer, and so a relocation, for every vtable entry, panic location and static
//! string slice: 35,000 of them in a server with every transport, 850 KB of `.rela.dyn` that the
//! loader reads and applies before `main`. Packed, the same relocations take 9 KB: the process
//! maps that much less of its file and the loader's work before `main` is about halved.

#![allow(clippy::print_stdout)] // a build script speaks to cargo on stdout

use std::process::Command;

/// The environment variable that turns the packing off (`MCP_PACK_RELOCS=0`).
pub const OPT_OUT: &str = "MCP_PACK_RELOCS";

/// The first glibc whose loader applies `DT_RELR` (and defines `GLIBC_ABI_DT_RELR`).
const FIRST_GLIBC: (u32, u32) = (2, 36);

/// What the build script knows about the build it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// `CARGO_CFG_TARGET_OS`, e.g. `linux`.
    pub target_os: String,
    /// `CARGO_CFG_TARGET_ENV`, e.g. `gnu` or `musl`.
    pub target_env: String,
    /// Whether the target is the machine the build runs on (`TARGET` == `HOST`).
    pub native: bool,
    /// The build machine's glibc (`getconf GNU_LIBC_VERSION`), when it has one.
    pub glibc: Option<(u32, u32)>,
    /// The value of `MCP_PACK_RELOCS`, when set.
    pub opt_out: Option<String>,
}

impl Build {
    /// Reads the build from Cargo's environment and the build machine's C library.
    pub fn from_env() -> Build {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        Build {
            target_os: var("CARGO_CFG_TARGET_OS"),
            target_env: var("CARGO_CFG_TARGET_ENV"),
            native: !var("TARGET").is_empty() && var("TARGET") == var("HOST"),
            glibc: host_glibc(),
            opt_out: std::env::var(OPT_OUT).ok(),
        }
    }

    /// Whether the binaries of this build should carry packed relative relocations: a native
    /// Linux build against glibc 2.36 or later, not turned off. A cross build links a C library
    /// that the script cannot ask, so it is left as it is.
    pub fn packs_relocations(&self) -> bool {
        self.target_os == "linux"
            && self.target_env == "gnu"
            && self.native
            && self.glibc.is_some_and(|v| v >= FIRST_GLIBC)
            && self.opt_out.as_deref() != Some("0")
    }
}

/// Links the calling package's binaries with `-z pack-relative-relocs` where
/// [`Build::packs_relocations`] says the loader reads it; elsewhere it does nothing. Call it from
/// the `build.rs` of a package with binaries:
///
/// ```no_run
/// mcp_build::pack_relative_relocations();
/// ```
///
/// The linked binaries then need glibc 2.36 or later wherever they run (the loader says so by
/// name on an older one: ``version `GLIBC_ABI_DT_RELR' not found``); set `MCP_PACK_RELOCS=0` to
/// build binaries for an older system.
///
/// Returns whether it did, and tells the package's code the same as `MCP_PACKED_RELOCATIONS`
/// (`env!("MCP_PACKED_RELOCATIONS")` is `yes` or `no`), so that a test can hold the binary to it.
pub fn pack_relative_relocations() -> bool {
    println!("cargo:rerun-if-env-changed={OPT_OUT}");
    let packs = Build::from_env().packs_relocations();
    if packs {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rustc-env=MCP_PACKED_RELOCATIONS={}", if packs { "yes" } else { "no" });
    packs
}

/// The build machine's glibc version, from `getconf GNU_LIBC_VERSION` (`glibc 2.36`).
fn host_glibc() -> Option<(u32, u32)> {
    let out = Command::new("getconf").arg("GNU_LIBC_VERSION").output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_glibc_version(&String::from_utf8_lossy(&out.stdout))
}

/// Parses `getconf GNU_LIBC_VERSION`'s answer, `glibc 2.36` (a patch level may follow).
pub fn parse_glibc_version(text: &str) -> Option<(u32, u32)> {
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?;
    let minor = minor[..minor.find(|c: char| !c.is_ascii_digit()).unwrap_or(minor.len())].parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux_gnu(glibc: Option<(u32, u32)>) -> Build {
        Build { target_os: "linux".into(), target_env: "gnu".into(), native: true, glibc, opt_out: None }
    }

    #[test]
    fn reads_getconf() {
        assert_eq!(parse_glibc_version("glibc 2.36\n"), Some((2, 36)));
        assert_eq!(parse_glibc_version("glibc 2.41.9000"), Some((2, 41)));
        assert_eq!(parse_glibc_version("glibc 2.39+r2"), Some((2, 39)));
        assert_eq!(parse_glibc_version("musl 1.2"), None);
        assert_eq!(parse_glibc_version(""), None);
        assert_eq!(parse_glibc_version("glibc two"), None);
    }

    #[test]
    fn packs_only_where_the_loader_reads_it() {
        assert!(linux_gnu(Some((2, 36))).packs_relocations());
        assert!(linux_gnu(Some((3, 0))).packs_relocations());
        assert!(!linux_gnu(Some((2, 35))).packs_relocations(), "Ubuntu 22.04's loader ignores DT_RELR");
        assert!(!linux_gnu(None).packs_relocations());
        let cross = Build { native: false, ..linux_gnu(Some((2, 40))) };
        assert!(!cross.packs_relocations());
        let musl = Build { target_env: "musl".into(), ..linux_gnu(Some((2, 40))) };
        assert!(!musl.packs_relocations());
        let mac = Build { target_os: "macos".into(), target_env: String::new(), ..linux_gnu(None) };
        assert!(!mac.packs_relocations());
    }

    #[test]
    fn turned_off_by_zero_only() {
        let off = Build { opt_out: Some("0".into()), ..linux_gnu(Some((2, 36))) };
        assert!(!off.packs_relocations());
        let on = Build { opt_out: Some("1".into()), ..linux_gnu(Some((2, 36))) };
        assert!(on.packs_relocations());
    }
}
