//! The README's examples are files that compile and run: "Testing your server" is
//! `tests/readme_example.rs` word for word, and "Writing a server" and "Handlers with state" are
//! `examples/calculator.rs` and `examples/notes.rs` (their code, after the `//!` lines), which
//! `tests/examples.rs` runs.

#[test]
fn the_readme_shows_the_example_that_runs() {
    let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
    let example = include_str!("readme_example.rs");
    assert!(
        readme.contains(&format!("```rust\n{example}```")),
        "README.md's testing example differs from crates/mcp/tests/readme_example.rs: copy the file into it"
    );
}

/// The code of an example: the file without its leading `//!` lines and the blank line after.
fn code_of(file: &str) -> String {
    let lines: Vec<&str> = file.lines().skip_while(|l| l.starts_with("//!")).skip_while(|l| l.is_empty()).collect();
    lines.join("\n") + "\n"
}

#[test]
fn the_readme_shows_the_server_examples_that_run() {
    let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
    let examples =
        [("calculator", include_str!("../examples/calculator.rs")), ("notes", include_str!("../examples/notes.rs"))];
    for (name, file) in examples {
        let code = code_of(file);
        assert!(code.contains("fn main"), "{name}: {code}");
        assert!(
            // `no_run`: as the README's doc test (lib.rs) it is compiled, not run (it serves stdio).
            readme.contains(&format!("```rust,no_run\n{code}```")),
            "README.md's code differs from crates/mcp/examples/{name}.rs: copy the file (after its //! lines) into it"
        );
    }
}

#[test]
fn code_of_leaves_out_the_header_only() {
    assert_eq!(code_of("//! one\n//!\n//! two\n\nuse a;\n\nfn main() {}\n"), "use a;\n\nfn main() {}\n");
    assert_eq!(code_of("fn main() {}\n"), "fn main() {}\n");
}
