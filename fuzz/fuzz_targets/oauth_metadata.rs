//! An authorization server's and a protected resource's metadata as the client reads them: no
//! document panics the readers, every endpoint taken is a URL the fetcher accepts, and a
//! resource is only ever one that covers the server's URL.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::client::auth::discovery::resource_covers;
use mcp::fuzzing;
use serde_json::Value;

const SERVER: &str = "https://mcp.example.com/api/mcp";

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        if let Ok(text) = std::str::from_utf8(data) {
            let (a, b) = text.split_once('\n').unwrap_or((text, SERVER));
            let _ = resource_covers(a, b);
        }
        return;
    };
    if let Ok(server) = fuzzing::server_metadata(&doc) {
        assert!(!server.token_endpoint.is_empty());
        assert!(mcp::fetch::check_url(&server.token_endpoint).is_ok(), "{}", server.token_endpoint);
        if let Some(url) = &server.authorization_endpoint {
            assert!(mcp::fetch::check_url(url).is_ok(), "{url}");
        }
    }
    if let Ok((resource, issuer)) = fuzzing::resource_metadata(&doc, SERVER) {
        assert!(resource_covers(&resource, SERVER), "{resource} taken for {SERVER}");
        assert!(!issuer.is_empty() || doc["authorization_servers"][0] == "");
    }
});
