//! `mcp prompt`: a prompt rendered with `key=value` arguments.

use std::collections::BTreeMap;

use mcp::client::Client;
use serde_json::{json, Value};

use crate::failure::{protocol, Failure};
use crate::setup::split_pair;

/// Renders the prompt `name` with `pairs` as its arguments.
pub(crate) async fn prompt(client: &Client, name: &str, pairs: &[String]) -> Result<Value, Failure> {
    let args: BTreeMap<String, String> = pairs.iter().map(|p| split_pair(p)).collect::<Result<_, _>>()?;
    client.request("prompts/get", json!({"name": name, "arguments": args})).await.map_err(protocol)
}
