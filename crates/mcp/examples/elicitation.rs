//! Elicitation in both eras: the handler asks the user with `cx.elicit::<T>(question)` and reads
//! the answer. On a legacy session (2025-11-25 and before) that is a request to the client; on a
//! 2026-07-28 request the call ends with `input_required` and the handler runs again when the
//! client retries with the answer. The handler is the same code either way.
//!
//! `cargo run --example elicitation`.

use mcp::server::{Elicitation, RequestContext, Router, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `book_table`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Booking {
    /// The restaurant.
    restaurant: String,
}

/// What the user is asked.
#[derive(Deserialize, JsonSchema)]
struct Party {
    /// How many people.
    guests: u32,
    /// A name for the booking.
    name: String,
}

async fn book_table(args: Booking, cx: RequestContext) -> Result<String, ToolError> {
    let question = format!("Booking a table at {}: for how many, and under which name?", args.restaurant);
    match cx.elicit::<Party>(&question).await? {
        Elicitation::Accepted(party) if party.guests == 0 => {
            Err(ToolError::new("a table for 0 guests cannot be booked: ask the user how many are coming"))
        }
        Elicitation::Accepted(party) => {
            Ok(format!("booked: {} at {} for {} guests", party.name, args.restaurant, party.guests))
        }
        Elicitation::Declined => Ok("the user declined: nothing was booked".into()),
        Elicitation::Cancelled => Ok("the user dismissed the question: nothing was booked".into()),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let router = Router::new().info("elicitation", "1.0.0").tool(
        "book_table",
        "Books a table at a restaurant, asking the user for the party's size and name.",
        book_table,
    );
    mcp::serve(router).await
}
