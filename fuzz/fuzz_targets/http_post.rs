//! The HTTP endpoint in process (a tower service, no socket): a POST with the input's headers
//! and body. Input: header lines (`Name: value`), a blank line, the body; `$SESSION` in a header
//! is replaced by a live legacy session's id. Every answer is a response the spec allows: never
//! a 500 (a panic caught), JSON-RPC when it is JSON.
#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use libfuzzer_sys::fuzz_target;
use mcp::transport::http::{HttpConfig, McpService};
use serde_json::Value;
use tower_service::Service;

struct World {
    runtime: tokio::runtime::Runtime,
    service: McpService,
    session: String,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let service = runtime.block_on(async { McpService::new(mcp_fuzz::router(), HttpConfig::default()) });
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;
        let request = http::Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from_static(init.as_bytes())))
            .unwrap();
        let mut svc = service.clone();
        let response = runtime.block_on(svc.call(request)).unwrap();
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        World { runtime, service, session }
    })
}

fuzz_target!(|data: &[u8]| {
    let world = world();
    let (head, body) = mcp_fuzz::head_and_body(data);
    let mut request = http::Request::post("/mcp");
    let mut has_host = false;
    for line in String::from_utf8_lossy(head).lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim().replace("$SESSION", &world.session);
        let (Ok(name), Ok(value)) =
            (http::HeaderName::from_bytes(name.trim().as_bytes()), http::HeaderValue::from_str(&value))
        else {
            continue;
        };
        has_host |= name == http::header::HOST;
        request = request.header(name, value);
    }
    if !has_host {
        request = request.header("host", "127.0.0.1");
    }
    let Ok(request) = request.body(Full::new(Bytes::copy_from_slice(body))) else { return };
    let mut service = world.service.clone();
    world.runtime.block_on(async {
        let response = service.call(request).await.unwrap();
        let status = response.status();
        assert_ne!(status, http::StatusCode::INTERNAL_SERVER_ERROR, "a 500 for {:?}", String::from_utf8_lossy(data));
        let is_json = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        let collected = tokio::time::timeout(std::time::Duration::from_secs(5), response.into_body().collect())
            .await
            .expect("the answer ends");
        let bytes = collected.unwrap().to_bytes();
        if is_json {
            let message: Value = serde_json::from_slice(&bytes).expect("a JSON answer is JSON");
            let message = if let Value::Array(items) = message { items.into_iter().next().unwrap_or_default() } else { message };
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            assert!(message.get("result").is_some() != message.get("error").is_some(), "{message}");
        }
    });
});
