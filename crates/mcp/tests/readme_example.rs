//! tests/calculator.rs: a server's tests, over the same bytes a host sends.
use mcp::server::{RequestContext, Router, ToolError};
use mcp::testing::{self, assert_rpc_error, assert_tool_error, assert_tool_ok};
use mcp::types::ErrorCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sum {
    a: f64,
    b: f64,
}

async fn sum(args: Sum, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("{} + {} = {}", args.a, args.b, args.a + args.b))
}

fn router() -> Router {
    Router::new().info("calculator", "1.0.0").tool("sum", "Adds two numbers.", sum)
}

#[tokio::test]
async fn sum_adds_in_both_eras() {
    // In memory: a 2026-07-28 client, then a legacy one that opens with `initialize`.
    for client in [testing::connect(router()).await, testing::connect_legacy(router()).await] {
        let result = client.call_tool("sum", json!({"a": 2, "b": 3})).await.unwrap();
        assert_eq!(assert_tool_ok(&result), "2 + 3 = 5");
        // Arguments that break the schema never reach the handler; the model is told what to fix.
        let result = client.call_tool("sum", json!({"a": "two"})).await.unwrap();
        assert_tool_error(&result, "\"b\" is a required property");
    }
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error() {
    let client = testing::connect(router()).await;
    let outcome = client.call_tool("divide", json!({"a": 1, "b": 0})).await;
    assert_rpc_error(&outcome, ErrorCode::INVALID_PARAMS);
}
