//! `mcp complete`: the server's completions for an argument of a prompt (or, with `--resource`,
//! of a resource template).

use mcp::client::Client;
use mcp::types::completion::{CompletionArgument, CompletionRef};
use serde_json::{json, Value};

use crate::failure::{protocol, Failure};

/// Completes `argument` of `reference`, `value` being what is typed so far.
pub(crate) async fn complete(
    client: &Client,
    reference: &str,
    argument: &str,
    value: &str,
    resource: bool,
) -> Result<Value, Failure> {
    let reference = if resource {
        CompletionRef::Resource { uri: reference.to_owned() }
    } else {
        CompletionRef::Prompt { name: reference.to_owned(), title: None }
    };
    let argument = CompletionArgument { name: argument.to_owned(), value: value.to_owned() };
    client.complete(reference, argument).await.map(|r| json!(r)).map_err(protocol)
}
