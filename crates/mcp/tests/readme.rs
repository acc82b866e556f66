//! The README's "Testing your server" example is `tests/readme_example.rs`, word for word, so
//! the example in the README is a test that runs.

#[test]
fn the_readme_shows_the_example_that_runs() {
    let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
    let example = include_str!("readme_example.rs");
    assert!(
        readme.contains(&format!("```rust\n{example}```")),
        "README.md's testing example differs from crates/mcp/tests/readme_example.rs: copy the file into it"
    );
}
