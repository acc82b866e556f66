//! `WWW-Authenticate` as the client reads it: schemes and parameter names come out lowercase,
//! and the resource metadata URLs to try are made from any challenge.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::client::auth::challenge::{parse, parse_all};
use mcp::client::auth::discovery::metadata_candidates;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let all = parse_all(text.split('\n'));
    let each: Vec<_> = text.split('\n').flat_map(parse).collect();
    assert_eq!(all, each);
    for challenge in &all {
        assert_eq!(challenge.scheme, challenge.scheme.to_ascii_lowercase());
        assert!(!challenge.scheme.is_empty());
        assert!(challenge.params.keys().all(|k| *k == k.to_ascii_lowercase()));
        let _ = challenge.scopes();
        let urls = metadata_candidates("https://mcp.example.com/v1/mcp", Some(challenge));
        assert!(urls.iter().any(|u| u == "https://mcp.example.com/.well-known/oauth-protected-resource"));
    }
});
