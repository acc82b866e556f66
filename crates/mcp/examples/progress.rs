//! Progress and cancellation: a long tool reports how far it got (`cx.progress`, sent when the
//! client gave a progress token) and stops when the client cancels the call (`cx.cancelled()`
//! resolves; the library also drops the handler's future at its next `.await`).
//!
//! `cargo run --example progress`.

use std::time::Duration;

use mcp::server::{RequestContext, Router, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `count_to`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountTo {
    /// Where to stop, 1 to 10000.
    to: u32,
    /// Milliseconds between steps (default 10).
    every_ms: Option<u64>,
}

async fn count_to(args: CountTo, cx: RequestContext) -> Result<String, ToolError> {
    if !(1..=10_000).contains(&args.to) {
        return Err(ToolError::new(format!("to is {}: count to a number from 1 to 10000", args.to)));
    }
    let every = Duration::from_millis(args.every_ms.unwrap_or(10).min(1000));
    for step in 1..=args.to {
        tokio::select! {
            _ = cx.cancelled() => {
                // Nobody reads a cancelled call's answer: say so where the operator looks.
                eprintln!("count_to: cancelled at {step} of {}", args.to);
                return Err(ToolError::new("cancelled"));
            }
            _ = tokio::time::sleep(every) => {}
        }
        cx.progress(step as f64, Some(args.to as f64), Some(&format!("counted to {step}"))).await;
    }
    Ok(format!("counted to {}", args.to))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let router = Router::new().info("progress", "1.0.0").tool(
        "count_to",
        "Counts to a number, one step every every_ms milliseconds, reporting progress.",
        count_to,
    );
    mcp::serve(router).await
}
