//! Progress and cancellation: a long tool reports how far it got (`cx.progress`, sent when the
//! client gave a progress token) and stops when the client cancels the call: the library drops
//! the handler's future at its next `.await` (work spawned elsewhere can wait on
//! `cx.cancelled()`).
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

/// Where a count got to. Dropped before the end, it says so on stderr (where the operator looks;
/// nobody reads a cancelled call's answer): a handler that must clean up after a cancellation
/// does it in `Drop`, since the library drops its future at its next `.await`.
struct Unfinished {
    step: u32,
    to: u32,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if self.step < self.to {
            eprintln!("count_to: cancelled at {} of {}", self.step, self.to);
        }
    }
}

async fn count_to(args: CountTo, cx: RequestContext) -> Result<String, ToolError> {
    if !(1..=10_000).contains(&args.to) {
        return Err(ToolError::new(format!("to is {}: count to a number from 1 to 10000", args.to)));
    }
    let every = Duration::from_millis(args.every_ms.unwrap_or(10).min(1000));
    let mut at = Unfinished { step: 0, to: args.to };
    while at.step < at.to {
        tokio::time::sleep(every).await;
        at.step += 1;
        cx.progress(at.step as f64, Some(at.to as f64), Some(&format!("counted to {}", at.step))).await;
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
