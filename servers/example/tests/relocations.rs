//! The built `mcp-example` carries packed relative relocations (`DT_RELR`) exactly when its build
//! script said it would (`mcp_build::pack_relative_relocations`), and on a native Linux build
//! against glibc 2.36 or later it does: its `.rela.dyn` then holds only the few relocations that
//! name a symbol, not one per pointer. Read from the binary's own dynamic section.

#![cfg(all(target_os = "linux", target_pointer_width = "64", target_endian = "little"))]

const BIN: &str = env!("CARGO_BIN_EXE_mcp-example");

/// `DT_RELASZ`: the size in bytes of the `Elf64_Rela` table.
const DT_RELASZ: u64 = 8;
/// `DT_RELR`: the address of the packed relative relocations.
const DT_RELR: u64 = 36;

/// The (tag, value) pairs of an ELF64 little-endian file's `PT_DYNAMIC` segment.
fn dynamic_tags(path: &str) -> Vec<(u64, u64)> {
    let elf = std::fs::read(path).expect("read the binary");
    assert_eq!(&elf[..4], b"\x7fELF", "{path} is not an ELF file");
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    let dynamic = (0..phnum)
        .map(|i| phoff + i * phentsize)
        .find(|&ph| u32::from_le_bytes(elf[ph..ph + 4].try_into().unwrap()) == 2) // PT_DYNAMIC
        .expect("a dynamically linked binary has a PT_DYNAMIC segment");
    let (offset, size) = (u64_at(dynamic + 8) as usize, u64_at(dynamic + 32) as usize);
    elf[offset..offset + size]
        .chunks_exact(16)
        .map(|entry| (u64_at_slice(&entry[..8]), u64_at_slice(&entry[8..])))
        .take_while(|&(tag, _)| tag != 0) // DT_NULL
        .collect()
}

fn u64_at_slice(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().unwrap())
}

fn glibc_reads_relr() -> bool {
    let out = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    mcp_build::parse_glibc_version(&text).is_some_and(|v| v >= (2, 36))
}

#[test]
fn packed_exactly_when_the_build_script_said_so() {
    let tags = dynamic_tags(BIN);
    let packed = tags.iter().any(|&(tag, _)| tag == DT_RELR);
    let said = env!("MCP_PACKED_RELOCATIONS");
    assert_eq!(packed, said == "yes", "the build script said {said}; DT_RELR present: {packed}");
    if packed {
        let rela = tags.iter().find(|&&(tag, _)| tag == DT_RELASZ).map_or(0, |&(_, size)| size);
        assert!(rela < 64 * 1024, "packed, yet {rela} bytes of Elf64_Rela remain");
    }
}

#[test]
fn packed_on_a_native_glibc_that_reads_it() {
    // A test binary runs where it was built, so this machine's C library is the one linked.
    let turned_off = std::env::var("MCP_PACK_RELOCS").as_deref() == Ok("0");
    if cfg!(target_env = "gnu") && glibc_reads_relr() && !turned_off {
        assert_eq!(
            env!("MCP_PACKED_RELOCATIONS"),
            "yes",
            "glibc 2.36 or later reads DT_RELR: the binary should carry it"
        );
    }
}
