//! `mcp-client-conformance`: the client the official conformance suite launches. It gets the
//! server URL as its last argument, the scenario in `MCP_CONFORMANCE_SCENARIO`, the protocol
//! version in `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for some scenarios, the calls to make in
//! `MCP_CONFORMANCE_CONTEXT`. It connects with the same client as `mcp`, lists the tools and
//! calls them (with the context's arguments, or with arguments made from each tool's schema).

use std::sync::Arc;
use std::time::Duration;

use mcp::client::auth::{Grant, Headless, OAuth, OAuthConfig, SigningKey};
use mcp::client::{Client, ClientOptions, Handlers};
use serde_json::{json, Map, Value};

#[allow(dead_code)] // the terminal form is `mcp`'s alone; this binary answers with defaults
mod elicit;

/// Arguments for a tool from its schema: defaults where given, simple values otherwise.
fn arguments_for(schema: &Map<String, Value>) -> Value {
    let mut args = Map::new();
    let Some(Value::Object(props)) = schema.get("properties") else { return Value::Object(args) };
    for (name, prop) in props {
        let value = prop.get("default").cloned().unwrap_or_else(|| match prop["type"].as_str() {
            Some("number") | Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("test"),
        });
        args.insert(name.clone(), value);
    }
    Value::Object(args)
}

/// OAuth as the scenario needs it: the grant and credentials its context gives, an agent that
/// follows the mock authorization server's redirects, and a metadata document URL to offer.
fn oauth_for(scenario: &str, context: &Value) -> Result<OAuth, String> {
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut config = OAuthConfig {
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        client_metadata_url: Some("https://conformance-test.local/client-metadata.json".into()),
        client_name: "mcp-rs conformance client".into(),
        ..OAuthConfig::default()
    };
    if let Some(pem) = text("private_key_pem") {
        let algorithm = text("signing_algorithm").unwrap_or_else(|| "ES256".into());
        config.signing_key = Some(SigningKey::from_pem(&pem, &algorithm).map_err(|e| e.to_string())?);
    }
    config.grant = if let Some(jwt) = text("valid_jwt") {
        Grant::JwtBearer { assertion: jwt }
    } else if let (Some(endpoint), Some(id_token)) = (text("idp_token_endpoint"), text("idp_id_token")) {
        Grant::EnterpriseManaged {
            idp_token_endpoint: endpoint,
            idp_client_id: text("idp_client_id").unwrap_or_default(),
            idp_client_secret: text("idp_client_secret"),
            id_token,
        }
    } else if scenario.contains("client-credentials") {
        Grant::ClientCredentials
    } else {
        Grant::AuthorizationCode
    };
    let fetcher = mcp::fetch::Fetcher::new(&[]).map_err(|e| e.to_string())?;
    let agent: Arc<dyn mcp::client::auth::UserAgent> =
        Arc::new(Headless::new(fetcher, "http://127.0.0.1:3000/callback"));
    OAuth::new(config, Some(agent)).map_err(|e| e.to_string())
}

async fn run(url: &str) -> Result<(), String> {
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let elicitation: mcp::client::Handler<_, _> = Arc::new(|params: mcp::types::elicitation::ElicitParams| {
        Box::pin(async move { Ok(elicit::accept_with_defaults(&params)) }) as mcp::server::BoxFuture<_>
    });
    let sampling: mcp::client::Handler<_, _> = Arc::new(|_params: mcp::types::sampling::CreateMessageParams| {
        Box::pin(async move {
            Ok(mcp::types::sampling::CreateMessageResult {
                result_type: None,
                role: mcp::types::content::Role::Assistant,
                content: mcp::types::sampling::OneOrMany::One(mcp::types::content::SamplingContent::Text(
                    mcp::types::content::TextContent::new("This is a test response from the conformance client."),
                )),
                model: "conformance-test-model".into(),
                stop_reason: Some("endTurn".into()),
                meta: None,
            })
        }) as mcp::server::BoxFuture<_>
    });
    let auth: Arc<dyn mcp::client::auth::Authorizer> = Arc::new(oauth_for(&scenario, &context)?);
    let options = ClientOptions {
        auth: Some(auth),
        client_info: mcp::types::lifecycle::Implementation::new("mcp-rs-conformance-client", env!("CARGO_PKG_VERSION")),
        handlers: Handlers { elicitation: Some(elicitation), sampling: Some(sampling), roots: None },
        timeout: Duration::from_secs(20),
        legacy_only: version.starts_with("2024") || version.starts_with("2025"),
        tracer: Some(Arc::new(|direction: mcp::client::Direction, message: &Value| {
            let arrow = if direction == mcp::client::Direction::Out { "→" } else { "←" };
            eprintln!("{arrow} {message}");
        })),
        ..ClientOptions::default()
    };
    let client = Client::connect_http(url, options).await.map_err(|e| format!("connect: {e}"))?;
    if scenario.starts_with("sep-2640-client-") {
        return skills(&client, &scenario).await;
    }
    let tools = client.list_tools().await.map_err(|e| format!("tools/list: {e}"))?;
    match context.get("toolCalls").and_then(Value::as_array) {
        Some(calls) => {
            for call in calls {
                let name = call["name"].as_str().unwrap_or_default();
                let result = client.call_tool(name, call["arguments"].clone()).await;
                eprintln!("tools/call {name}: {result:?}");
            }
        }
        None if scenario == "json-schema-2020-12-preservation" => {
            // Echo the richest schema back through the tool that takes a `schema` argument.
            let focal = tools
                .iter()
                .find(|t| t.input_schema.contains_key("$defs"))
                .map(|t| Value::Object(t.input_schema.clone()));
            let echo = tools.iter().find(|t| t.input_schema.get("properties").and_then(|p| p.get("schema")).is_some());
            if let (Some(schema), Some(echo)) = (focal, echo) {
                let result = client.call_tool(&echo.name, json!({"schema": schema})).await;
                eprintln!("tools/call {}: {result:?}", echo.name);
            }
        }
        None => {
            for tool in &tools {
                let result = client.call_tool(&tool.name, arguments_for(&tool.input_schema)).await;
                eprintln!("tools/call {}: {result:?}", tool.name);
            }
        }
    }
    client.close().await;
    Ok(())
}

/// The skills scenarios: list the skills (reading none of their files), then, as a host does
/// when a skill is needed, load each one; a skill whose files fail verification is refused and
/// nothing after the failing file is read.
async fn skills(client: &Client, scenario: &str) -> Result<(), String> {
    let entries = client.list_skills().await.map_err(|e| format!("skills/list: {e}"))?;
    eprintln!("skills/list: {:?}", entries.iter().map(|e| e.name()).collect::<Vec<_>>());
    if scenario != "sep-2640-client-no-prefetch" {
        for entry in &entries {
            match client.load_skill(entry).await {
                Ok(loaded) => eprintln!("loaded skill {} ({} more files)", entry.name(), loaded.files.len()),
                Err(e) => eprintln!("refused skill {}: {e}", entry.name()),
            }
        }
    }
    client.clone().close().await;
    Ok(())
}

fn main() -> std::process::ExitCode {
    let Some(url) = std::env::args().next_back().filter(|a| a.starts_with("http")) else {
        eprintln!("usage: mcp-client-conformance SERVER_URL");
        return std::process::ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    match runtime.block_on(run(&url)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-client-conformance: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
