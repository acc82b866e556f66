//! The built `mcp-example` has the functions a stdio server runs laid out together in a section
//! `.text.hot` before `.text` exactly when its build script said it would
//! (`mcp_build::hot_code_first`), and what the linker put there is what the list names: nearly
//! every function in the section matches a pattern of `hot-functions.txt`. Read from the binary's
//! own section headers and symbol table.

#![cfg(all(target_os = "linux", target_pointer_width = "64", target_endian = "little"))]

const BIN: &str = env!("CARGO_BIN_EXE_mcp-example");

/// One section header: its name, address and size.
struct Section {
    name: String,
    kind: u32,
    address: u64,
    offset: usize,
    size: usize,
    link: usize,
}

/// The sections of an ELF64 little-endian file.
fn sections(elf: &[u8]) -> Vec<Section> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    let (shoff, shentsize, shnum, shstrndx) = (u64_at(0x28) as usize, u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let names_at = u64_at(header(shstrndx) + 24) as usize;
    (0..shnum)
        .map(|i| {
            let h = header(i);
            Section {
                name: c_string(elf, names_at + u32_at(h) as usize),
                kind: u32_at(h + 4),
                address: u64_at(h + 16),
                offset: u64_at(h + 24) as usize,
                size: u64_at(h + 32) as usize,
                link: u32_at(h + 40) as usize,
            }
        })
        .collect()
}

fn c_string(bytes: &[u8], at: usize) -> String {
    let end = bytes[at..].iter().position(|&b| b == 0).map_or(bytes.len(), |n| at + n);
    String::from_utf8_lossy(&bytes[at..end]).into_owned()
}

/// The function symbols (`STT_FUNC`) of the symbol table: (address, name).
fn functions(elf: &[u8], sections: &[Section]) -> Vec<(u64, String)> {
    let symtab = sections.iter().find(|s| s.kind == 2).expect("a symbol table (SHT_SYMTAB)");
    let strings = &sections[symtab.link];
    elf[symtab.offset..symtab.offset + symtab.size]
        .chunks_exact(24)
        .filter(|sym| sym[4] & 0xf == 2)
        .map(|sym| {
            let name = u32::from_le_bytes(sym[..4].try_into().unwrap()) as usize;
            let address = u64::from_le_bytes(sym[8..16].try_into().unwrap());
            (address, c_string(elf, strings.offset + name))
        })
        .collect()
}

/// Whether `text` matches `pattern`, whose only wildcard is `*` (any run of characters).
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

#[test]
fn globs_match_as_the_linker_does() {
    assert!(glob("_ZN3mcp4read17h*", "_ZN3mcp4read17h0123456789abcdefE"));
    assert!(glob("_RNvCs*_4core3fmt", "_RNvCsabc_4core3fmt"));
    assert!(!glob("_RNvCs*_4core3fmt", "_RNvCsabc_4core3fmtX"));
    assert!(!glob("_ZN3mcp4read17h*", "_ZN3mcp5write17h0123E"));
    assert!(glob("main", "main") && !glob("main", "mains"));
}

#[test]
fn hot_code_exactly_when_the_build_script_said_so() {
    let elf = std::fs::read(BIN).expect("read the binary");
    let sections = sections(&elf);
    let hot = sections.iter().position(|s| s.name == ".text.hot");
    let said = env!("MCP_HOT_LAYOUT");
    assert_eq!(hot.is_some(), said == "yes", "the build script said {said}; .text.hot present: {}", hot.is_some());
    let Some(hot) = hot else { return };
    let text = sections.iter().position(|s| s.name == ".text").expect(".text");
    assert!(hot < text && sections[hot].address < sections[text].address, ".text.hot comes before .text");

    let patterns: Vec<&str> = mcp_build::hot_patterns().collect();
    let range = sections[hot].address..sections[hot].address + sections[hot].size as u64;
    let inside: Vec<String> =
        functions(&elf, &sections).into_iter().filter(|(at, _)| range.contains(at)).map(|(_, name)| name).collect();
    assert!(inside.len() >= 100, "only {} functions in .text.hot", inside.len());
    // The linker moves sections, not functions: a function that shares its section with a named
    // one (a few of the standard library's precompiled ones do) comes along. Nearly all are named.
    let strays: Vec<&String> = inside.iter().filter(|name| !patterns.iter().any(|p| glob(p, name))).collect();
    assert!(
        strays.len() * 20 <= inside.len(),
        "{} of the {} functions in .text.hot are not named by the list: {strays:?}",
        strays.len(),
        inside.len()
    );
    // The read loop of the stdio transport is the hottest code there is: it must be in.
    assert!(
        inside.iter().any(|name| name.contains("9transport5stdio")),
        "no function of mcp::transport::stdio in .text.hot"
    );
}
