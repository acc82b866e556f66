//! `mcp tools`, `mcp resources`, `mcp templates`, `mcp prompts`: the server's listings, with a
//! note instead of a request when it did not declare the capability a listing needs.

use mcp::client::Client;
use serde_json::{json, Value};

use crate::cli::Command;
use crate::failure::{protocol, Failure};

/// Whether the server declared the capability a listing command needs (the lifecycle: use only
/// what was negotiated). A remembered modern era is confirmed first.
async fn declared(client: &Client, command: &Command) -> bool {
    let _ = client.era().await;
    let capabilities = client.description().capabilities;
    match command {
        Command::Prompts => capabilities.prompts.is_some(),
        _ => capabilities.resources.is_some(),
    }
}

/// The listing `command` names (`tools`, `resources`, `templates` or `prompts`).
pub(crate) async fn list(client: &Client, command: &Command) -> Result<Value, Failure> {
    match command {
        Command::Tools => Ok(json!({"tools": client.list_tools().await.map_err(protocol)?})),
        Command::Resources | Command::Templates | Command::Prompts if !declared(client, command).await => {
            let (key, capability) = match command {
                Command::Prompts => ("prompts", "prompts"),
                Command::Templates => ("resourceTemplates", "resources"),
                _ => ("resources", "resources"),
            };
            let note = format!("the server offers no {capability}: it did not declare the {capability} capability");
            Ok(json!({key: [], "note": note}))
        }
        Command::Resources => Ok(json!({"resources": client.list_resources().await.map_err(protocol)?})),
        Command::Templates => {
            Ok(json!({"resourceTemplates": client.list_resource_templates().await.map_err(protocol)?}))
        }
        Command::Prompts => Ok(json!({"prompts": client.list_prompts().await.map_err(protocol)?})),
        _ => unreachable!("not a listing"),
    }
}
