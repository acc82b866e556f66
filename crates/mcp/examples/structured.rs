//! Structured output: a tool returning `Json<T>` gets an `outputSchema` derived from `T`, and
//! its result carries `structuredContent` (and the same JSON as text, for older clients).
//!
//! `cargo run --example structured`.

use mcp::server::{Json, RequestContext, Router, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `word_stats`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Text {
    /// The text to measure.
    text: String,
}

/// What `word_stats` finds.
#[derive(Serialize, JsonSchema)]
struct Stats {
    /// Words, split on whitespace.
    words: usize,
    /// Characters (Unicode scalar values).
    characters: usize,
    /// The longest word, if any.
    longest: Option<String>,
}

async fn word_stats(args: Text, _cx: RequestContext) -> Result<Json<Stats>, ToolError> {
    let words: Vec<&str> = args.text.split_whitespace().collect();
    let longest = words.iter().max_by_key(|w| w.chars().count()).map(|w| w.to_string());
    Ok(Json(Stats { words: words.len(), characters: args.text.chars().count(), longest }))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let router = Router::new().info("structured", "1.0.0").tool(
        "word_stats",
        "Counts the words and characters of a text and names its longest word.",
        word_stats,
    );
    mcp::serve(router).await
}
