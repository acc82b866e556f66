//! A test server and a line-level peer with timeouts.

use std::time::Duration;

use mcp::server::{Json, NoArgs, RequestContext, ResourceRequest, Router, ToolError};
use mcp::transport::memory::{connect, MemoryPeer};
use mcp::types::logging::LoggingLevel;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const MODERN: &str = "2026-07-28";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Echo {
    pub text: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct Sleep {
    pub ms: u64,
}

#[derive(Debug, Deserialize, JsonSchema, Serialize)]
pub struct Confirm {
    pub ok: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct Weather {
    pub celsius: f64,
}

pub fn router() -> Router {
    Router::new()
        .info("test-server", "1.0.0")
        .page_size(2)
        .tool("echo", "Echo.", |a: Echo, _cx: RequestContext| async move { Ok::<_, ToolError>(a.text) })
        .tool("fail", "Fails.", |_: NoArgs, _cx: RequestContext| async move {
            Err::<String, _>(ToolError::new("the backend is down; try again later"))
        })
        .tool("panic", "Panics.", |_: NoArgs, _cx: RequestContext| async move {
            if true {
                panic!("boom");
            }
            Ok::<String, ToolError>(String::new())
        })
        .tool("sleep", "Sleeps, reporting progress.", |a: Sleep, cx: RequestContext| async move {
            for i in 0..a.ms / 10 {
                cx.progress(i as f64, Some((a.ms / 10) as f64), Some("sleeping")).await;
                cx.log(LoggingLevel::Info, Some("sleep"), json!({"step": i})).await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok::<_, ToolError>(format!("slept {} ms", a.ms))
        })
        .tool("weather", "Structured.", |_: NoArgs, _cx: RequestContext| async move {
            Ok::<_, ToolError>(Json(Weather { celsius: 21.5 }))
        })
        .tool("confirm_twice", "Asks twice.", |_: NoArgs, cx: RequestContext| async move {
            let first = cx.elicit::<Confirm>("First?").await?;
            let second = cx.elicit::<Confirm>("Second?").await?;
            Ok::<_, ToolError>(format!("{first:?} {second:?}"))
        })
        .resource("test://static", "static", |_r: ResourceRequest, _cx: RequestContext| async move {
            Ok::<_, ToolError>("static text".to_owned())
        })
        .resource_template(
            "test://items/{id}",
            "item",
            |r: ResourceRequest<ItemParams>, _cx: RequestContext| async move {
                Ok::<_, ToolError>(format!("item {}", r.params.id))
            },
        )
        .prompt("greet", "Greets.", |a: GreetArgs, _cx: RequestContext| async move {
            Ok::<_, ToolError>(format!("Hello {}", a.name))
        })
}

#[derive(Deserialize)]
pub struct ItemParams {
    pub id: u32,
}

#[derive(Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// Who.
    pub name: String,
}

pub struct Peer {
    pub inner: MemoryPeer,
}

impl Peer {
    pub fn new(router: Router) -> Self {
        Peer { inner: connect(router) }
    }

    pub async fn send(&mut self, message: Value) {
        self.inner.send(&message).await.unwrap();
    }

    pub async fn send_line(&mut self, line: &str) {
        self.inner.send_line(line).await.unwrap();
    }

    pub async fn recv(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(5), self.inner.recv())
            .await
            .expect("no message within 5 s")
            .unwrap()
            .expect("connection closed")
    }

    /// Asserts nothing arrives within `ms` (on a paused clock: nothing the server sends before
    /// its timers reach `ms`, with no real waiting).
    pub async fn silent_for(&mut self, ms: u64) {
        if let Ok(msg) = tokio::time::timeout(Duration::from_millis(ms), self.inner.recv()).await {
            panic!("expected silence, got {msg:?}");
        }
    }

    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let msg = self.recv().await;
            if msg.get("id") == Some(&json!(id)) && msg.get("method").is_none() {
                return msg;
            }
        }
    }

    /// The methods of the notifications that arrive before the next response.
    pub async fn methods_before_response(&mut self) -> Vec<String> {
        let mut methods = Vec::new();
        loop {
            let m = self.recv().await;
            if m.get("id").is_some() {
                return methods;
            }
            methods.push(m["method"].as_str().unwrap().to_owned());
        }
    }

    pub async fn initialize(&mut self, version: &str) -> Value {
        let params = json!({"protocolVersion": version, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}});
        let r = self.request(0, "initialize", params).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        r
    }
}

/// Params of a 2026-07-28 request: `extra` plus the required `_meta`.
pub fn modern(extra: Value) -> Value {
    modern_with(extra, json!({}))
}

pub fn modern_with(mut extra: Value, capabilities: Value) -> Value {
    extra["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    });
    extra
}
