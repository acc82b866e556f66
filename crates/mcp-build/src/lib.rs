//! Build-script helpers for MCP server binaries: [`link_binaries`] does both of what follows.
//!
//! [`pack_relative_relocations`] links a package's binaries with packed relative relocations
//! (`DT_RELR`) when the loader that will run them reads that table. A position-independent Rust
//! binary holds a pointer, and so a relocation, for every vtable entry, panic location and static
//! string slice: 35,000 of them in a server with every transport, 850 KB of `.rela.dyn` that the
//! loader reads and applies before `main`. Packed, the same relocations take 9 KB: the process
//! maps that much less of its file and the loader's work before `main` is about halved.
//!
//! [`hot_code_first`] lays out the functions a stdio MCP server runs for a host (the engine, the
//! router, stdio, tokio's runtime, serde_json, the allocator's paths: `hot-functions.txt`, written
//! from a profile by `scripts/hot-functions.sh`) side by side at the start of the binary's code.
//! The kernel maps a binary's code in 64 KiB windows (or whole large folios) around each page it
//! touches; the 700 KB a session runs, scattered over the 12 MB of a server with every transport,
//! kept 4.8 MiB of its code resident; gathered with the other instances of the same generic
//! functions (1.7 MB), 1.65 MiB.

#![allow(clippy::print_stdout)] // a build script speaks to cargo on stdout

use std::process::Command;

/// The environment variable that turns the packing off (`MCP_PACK_RELOCS=0`).
pub const OPT_OUT: &str = "MCP_PACK_RELOCS";

/// The environment variable that turns the hot-code layout off (`MCP_HOT_LAYOUT=0`).
pub const HOT_OPT_OUT: &str = "MCP_HOT_LAYOUT";

/// The hot functions, one pattern of a mangled name per line (`#` lines are comments).
const HOT_FUNCTIONS: &str = include_str!("hot-functions.txt");

/// The first Rust release that links `x86_64-unknown-linux-gnu` with its own `lld` by default.
const FIRST_RUST_WITH_LLD: u32 = 90;

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
    /// `TARGET`, the target triple.
    pub target: String,
    /// The minor version of the `rustc` building it (`1.95.0` is 95), when it says.
    pub rustc_minor: Option<u32>,
    /// Whether the build names a linker of its own (`RUSTC_LINKER`, or `-C linker`,
    /// `-fuse-ld=...`, a linker flavour or feature in the rustflags).
    pub own_linker: bool,
    /// The value of `MCP_HOT_LAYOUT`, when set.
    pub hot_opt_out: Option<String>,
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
            target: var("TARGET"),
            rustc_minor: rustc_minor(&var("RUSTC")),
            own_linker: !var("RUSTC_LINKER").is_empty() || names_a_linker(&var("CARGO_ENCODED_RUSTFLAGS")),
            hot_opt_out: std::env::var(HOT_OPT_OUT).ok(),
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

    /// Whether the binaries of this build get the hot functions laid out first: where the linker
    /// is the `lld` that rustc 1.90 and later brings for `x86_64-unknown-linux-gnu` (whose
    /// treatment of the linker script's `INSERT` is known), not turned off. Another linker (mold
    /// reads no such script) or an older toolchain leaves the layout as it is.
    pub fn lays_out_hot_code(&self) -> bool {
        self.target == "x86_64-unknown-linux-gnu"
            && self.rustc_minor.is_some_and(|minor| minor >= FIRST_RUST_WITH_LLD)
            && !self.own_linker
            && self.hot_opt_out.as_deref() != Some("0")
    }
}

/// Everything this crate does for a package's binaries: [`pack_relative_relocations`] and
/// [`hot_code_first`], each where it applies. Call it from the `build.rs` of a package with
/// binaries:
///
/// ```no_run
/// mcp_build::link_binaries();
/// ```
pub fn link_binaries() {
    // One reading of the build (it asks `getconf` and `rustc`) for both.
    let build = Build::from_env();
    pack_relative_relocations_for(&build);
    hot_code_first_for(&build);
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
    pack_relative_relocations_for(&Build::from_env())
}

fn pack_relative_relocations_for(build: &Build) -> bool {
    println!("cargo:rerun-if-env-changed={OPT_OUT}");
    let packs = build.packs_relocations();
    if packs {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rustc-env=MCP_PACKED_RELOCATIONS={}", if packs { "yes" } else { "no" });
    packs
}

/// Links the calling package's binaries with the functions a stdio MCP server runs for a host
/// (`hot-functions.txt`) together, at the start of their code, where
/// [`Build::lays_out_hot_code`] says the linker takes it; elsewhere it does nothing. The layout
/// is a linker script of one output section, `.text.hot`, inserted before `.text`: the rest of
/// the binary is laid out as the linker would anyway.
///
/// Returns whether it did, and tells the package's code the same as `MCP_HOT_LAYOUT`
/// (`env!("MCP_HOT_LAYOUT")` is `yes` or `no`). `MCP_HOT_LAYOUT=0` turns it off.
pub fn hot_code_first() -> bool {
    hot_code_first_for(&Build::from_env())
}

fn hot_code_first_for(build: &Build) -> bool {
    println!("cargo:rerun-if-env-changed={HOT_OPT_OUT}");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let mut lays_out = build.lays_out_hot_code();
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    // The path goes to the linker through `-Wl,`, which splits at commas.
    lays_out &= !out_dir.is_empty() && !out_dir.contains(',');
    if lays_out {
        let script = std::path::Path::new(&out_dir).join("hot-code.ld");
        match std::fs::write(&script, linker_script(hot_patterns())) {
            Ok(()) => println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display()),
            Err(e) => {
                println!(
                    "cargo:warning=mcp-stack-build: cannot write {}: {e}; the layout is left as it is",
                    script.display()
                );
                lays_out = false;
            }
        }
    }
    println!("cargo:rustc-env=MCP_HOT_LAYOUT={}", if lays_out { "yes" } else { "no" });
    lays_out
}

/// The patterns of `hot-functions.txt`: mangled names whose only wildcard is `*`.
pub fn hot_patterns() -> impl Iterator<Item = &'static str> {
    patterns(HOT_FUNCTIONS)
}

/// The patterns of a list: one per line, blank lines and `#` comments left out.
fn patterns(list: &str) -> impl Iterator<Item = &str> {
    list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// The linker script that gathers the sections of the functions `patterns` names into
/// `.text.hot`, in their order, before `.text`.
pub fn linker_script<'a>(patterns: impl IntoIterator<Item = &'a str>) -> String {
    let mut script = String::from(
        "/* mcp-stack-build: the functions a stdio MCP server runs, together (see hot_code_first). */\n\
         SECTIONS\n{\n  .text.hot : {\n",
    );
    for pattern in patterns {
        // LLVM puts a cold function (`#[cold]`, such as a vector's growth) in `.text.unlikely.`.
        script.push_str(&format!("    *(.text.{pattern} .text.unlikely.{pattern})\n"));
    }
    script.push_str("  }\n}\nINSERT BEFORE .text;\n");
    script
}

/// The minor version of `rustc` (`rustc 1.95.0 (59807616e 2026-04-14)` is 95).
fn rustc_minor(rustc: &str) -> Option<u32> {
    let rustc = if rustc.is_empty() { "rustc" } else { rustc };
    let out = Command::new(rustc).arg("-V").output().ok()?;
    parse_rustc_minor(&String::from_utf8_lossy(&out.stdout))
}

/// Parses `rustc -V`'s answer: the minor version of a 1.x release.
pub fn parse_rustc_minor(text: &str) -> Option<u32> {
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}

/// Whether `CARGO_ENCODED_RUSTFLAGS` (flags separated by 0x1f) choose the linker.
fn names_a_linker(flags: &str) -> bool {
    flags.split('\x1f').any(|flag| flag.contains("fuse-ld") || flag.contains("linker"))
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
        Build {
            target_os: "linux".into(),
            target_env: "gnu".into(),
            native: true,
            glibc,
            opt_out: None,
            target: "x86_64-unknown-linux-gnu".into(),
            rustc_minor: Some(95),
            own_linker: false,
            hot_opt_out: None,
        }
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

    #[test]
    fn reads_rustc_version() {
        assert_eq!(parse_rustc_minor("rustc 1.95.0 (59807616e 2026-04-14)\n"), Some(95));
        assert_eq!(parse_rustc_minor("rustc 1.90.0-nightly (abc 2025-07-01)"), Some(90));
        assert_eq!(parse_rustc_minor("rustc 2.0.0"), None);
        assert_eq!(parse_rustc_minor(""), None);
    }

    #[test]
    fn hot_code_only_with_rusts_own_lld() {
        assert!(linux_gnu(None).lays_out_hot_code());
        assert!(!Build { rustc_minor: Some(89), ..linux_gnu(None) }.lays_out_hot_code(), "GNU ld before 1.90");
        assert!(!Build { rustc_minor: None, ..linux_gnu(None) }.lays_out_hot_code());
        assert!(!Build { own_linker: true, ..linux_gnu(None) }.lays_out_hot_code());
        assert!(!Build { target: "aarch64-unknown-linux-gnu".into(), ..linux_gnu(None) }.lays_out_hot_code());
        assert!(!Build { target: "x86_64-unknown-linux-musl".into(), ..linux_gnu(None) }.lays_out_hot_code());
        assert!(!Build { hot_opt_out: Some("0".into()), ..linux_gnu(None) }.lays_out_hot_code());
        assert!(Build { hot_opt_out: Some("1".into()), ..linux_gnu(None) }.lays_out_hot_code());
    }

    #[test]
    fn a_linker_chosen_in_the_flags_is_seen() {
        assert!(names_a_linker("-Clink-arg=-fuse-ld=mold"));
        assert!(names_a_linker("-C\x1flinker=clang"));
        assert!(names_a_linker("-Clinker-features=-lld"));
        assert!(!names_a_linker("-Ctarget-cpu=native\x1f-Copt-level=3"));
        assert!(!names_a_linker(""));
    }

    #[test]
    fn the_script_gathers_each_pattern_in_order() {
        let script = linker_script(patterns("# a comment\n_ZN3mcp6engine4read17h*\n\n_RNvCs*_4core3fmt5write\n"));
        let lines: Vec<&str> = script.lines().filter(|l| l.trim_start().starts_with("*(")).collect();
        assert_eq!(
            lines,
            [
                "    *(.text._ZN3mcp6engine4read17h* .text.unlikely._ZN3mcp6engine4read17h*)",
                "    *(.text._RNvCs*_4core3fmt5write .text.unlikely._RNvCs*_4core3fmt5write)"
            ]
        );
        assert!(script.contains(".text.hot : {"), "{script}");
        assert!(script.trim_end().ends_with("INSERT BEFORE .text;"), "{script}");
    }

    #[test]
    fn the_shipped_list_is_patterns_the_script_can_hold() {
        let patterns: Vec<&str> = hot_patterns().collect();
        assert!(patterns.len() > 100, "{} patterns", patterns.len());
        for pattern in patterns {
            // A space, a parenthesis or a quote would end the pattern early in the script.
            assert!(!pattern.contains([' ', '(', ')', '"', '\t']), "{pattern}");
        }
    }
}
