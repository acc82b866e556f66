//! The calculator of the README's "Writing a server": one tool, `sum`, served on stdio.
//!
//! `cargo run --example calculator`, then speak MCP on its stdin (or point a host at the binary,
//! `target/debug/examples/calculator`).

use mcp::server::{RequestContext, Router, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `sum`. Doc comments become the schema's descriptions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)] // -> "additionalProperties": false
struct Sum {
    a: f64,
    b: f64,
}

async fn sum(args: Sum, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("{} + {} = {}", args.a, args.b, args.a + args.b))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let router =
        Router::new().info("calculator", "1.0.0").tool("sum", "Adds two numbers. Call this for any addition.", sum);
    mcp::serve(router).await // stdio; every protocol era is handled underneath
}
