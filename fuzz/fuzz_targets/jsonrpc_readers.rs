//! The JSON-RPC envelope and the readers of a request's params (the params' head, the
//! middleware's name, the resource server's scope peek, the budgeted tree): no input panics them,
//! and they agree with each other.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp::fuzzing;
use mcp_types::jsonrpc::{Envelope, MessageKind};
use serde_json::value::RawValue;
use serde_json::Value;

fn router() -> &'static mcp::Router {
    static ROUTER: OnceLock<mcp::Router> = OnceLock::new();
    ROUTER.get_or_init(mcp_fuzz::router)
}

fuzz_target!(|data: &[u8]| {
    let needed = fuzzing::needed_scopes(router(), data);
    assert!(needed.iter().any(|s| s == "mcp"), "the minimum is always needed: {needed:?}");
    if let Ok(envelope) = serde_json::from_slice::<Envelope>(data) {
        if let Ok(MessageKind::Request { method, params, .. } | MessageKind::Notification { method, params }) =
            envelope.kind()
        {
            let text = params.map(RawValue::get);
            let head = fuzzing::params_head(&method, text);
            let named = fuzzing::named_item(&method, text);
            match &head {
                Ok((_, from_head)) => assert_eq!(from_head, &named, "the head and the middleware disagree"),
                Err(e) => assert!(named.is_none(), "refused by the head ({e}), named by the middleware"),
            }
            // The peek reads what the endpoint reads: the tool behind a scope asks for it.
            if method == "tools/call" && named.as_deref() == Some("write") {
                assert!(needed.iter().any(|s| s == "files:write"), "{needed:?}");
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(tree) = fuzzing::bounded_parse(text, 1 << 20) {
            let plain: Value = serde_json::from_str(text).expect("what the budgeted parse takes is JSON");
            assert_eq!(tree, plain, "the budgeted parse reads otherwise");
        }
    }
});
