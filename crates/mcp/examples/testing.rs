//! Testing a server with `mcp::testing`: the same test in both eras over the same bytes a host
//! sends (in memory here; `testing::spawn(BINARY, args)` does it over real pipes). The server is
//! a dice roller whose state, a seeded generator, is given with `Router::with_state`, so a test
//! can give its own.
//!
//! `cargo test -p mcp-stack --example testing` runs the tests; `cargo run --example testing`
//! serves the roller on stdio.

use std::sync::{Arc, Mutex};

use mcp::server::{RequestContext, Router, State, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// A small generator (xorshift), seeded: good for dice, not for secrets.
struct Dice(Mutex<u64>);

impl Dice {
    fn roll(&self, sides: u64) -> u64 {
        let mut x = self.0.lock().unwrap();
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x % sides + 1
    }
}

/// Arguments of `roll`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Roll {
    /// Sides of the die, 2 to 100.
    sides: u64,
}

async fn roll(State(dice): State<Arc<Dice>>, args: Roll, _cx: RequestContext) -> Result<String, ToolError> {
    if !(2..=100).contains(&args.sides) {
        return Err(ToolError::new(format!("a die has 2 to 100 sides, not {}", args.sides)));
    }
    Ok(format!("rolled {} on a d{}", dice.roll(args.sides), args.sides))
}

fn router(seed: u64) -> Router {
    Router::new().info("dice", "1.0.0").with_state(Arc::new(Dice(Mutex::new(seed | 1)))).tool(
        "roll",
        "Rolls a die with the given number of sides.",
        roll,
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    mcp::serve(router(seed)).await
}

#[cfg(test)]
mod tests {
    use mcp::testing::{self, assert_rpc_error, assert_tool_error, assert_tool_ok};
    use mcp::types::ErrorCode;
    use serde_json::json;

    use super::router;

    #[tokio::test]
    async fn the_same_seed_rolls_the_same_in_both_eras() {
        let mut rolls = Vec::new();
        for client in [testing::connect(router(7)).await, testing::connect_legacy(router(7)).await] {
            let result = client.call_tool("roll", json!({"sides": 6})).await.unwrap();
            let text = assert_tool_ok(&result);
            assert!(text.starts_with("rolled ") && text.ends_with(" on a d6"), "{text}");
            rolls.push(text);
        }
        assert_eq!(rolls[0], rolls[1], "one seed, one roll");
    }

    #[tokio::test]
    async fn a_bad_die_is_a_tool_error_the_model_can_fix() {
        let client = testing::connect(router(7)).await;
        let result = client.call_tool("roll", json!({"sides": 1})).await.unwrap();
        assert_tool_error(&result, "2 to 100 sides");
        let result = client.call_tool("roll", json!({"faces": 6})).await.unwrap();
        assert_tool_error(&result, "sides");
    }

    #[tokio::test]
    async fn an_unknown_tool_is_a_protocol_error() {
        let client = testing::connect(router(7)).await;
        assert_rpc_error(&client.call_tool("flip", json!({})).await, ErrorCode::INVALID_PARAMS);
    }
}
