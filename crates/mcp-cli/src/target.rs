//! Where the server is: a command after `--`, a URL, or a named entry of an `mcpServers` JSON
//! file (the format of Claude Desktop and Claude Code).

use std::path::Path;

use mcp::client::{Client, ClientOptions, ServerProcess, StdioCommand};
use serde_json::Value;

/// A server to connect to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A process speaking stdio.
    Stdio(StdioCommand),
    /// A Streamable HTTP (or HTTP+SSE) URL, with extra headers and OAuth settings.
    Http(String, Vec<(String, String)>, OAuthEntry),
}

/// The OAuth settings of an `mcpServers` entry (its `oauth` object, as Claude Code writes it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuthEntry {
    /// `clientId`: a pre-registered client.
    pub client_id: Option<String>,
    /// `clientSecretFile`: where its secret is (else `MCP_CLIENT_SECRET`).
    pub client_secret_file: Option<std::path::PathBuf>,
    /// `clientMetadataUrl`: this client's metadata document.
    pub client_metadata_url: Option<String>,
    /// `callbackPort`: the fixed port of `http://localhost:PORT/callback`.
    pub callback_port: Option<u16>,
    /// `scopes`: one space-separated string.
    pub scopes: Vec<String>,
    /// `"grant": "client_credentials"`: the client authenticates as itself (no person, no
    /// browser), as a gateway in front of the server does.
    pub client_credentials: bool,
}

impl OAuthEntry {
    pub fn from_json(entry: &Value) -> Result<OAuthEntry, String> {
        let Some(oauth) = entry.get("oauth") else { return Ok(OAuthEntry::default()) };
        let text = |k: &str| oauth.get(k).and_then(Value::as_str).map(str::to_owned);
        let callback_port = match oauth.get("callbackPort") {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .filter(|p| *p > 0)
                    .ok_or(format!("oauth.callbackPort must be a port number, not {v}"))?,
            ),
        };
        Ok(OAuthEntry {
            client_id: text("clientId"),
            client_secret_file: text("clientSecretFile").map(Into::into),
            client_metadata_url: text("clientMetadataUrl"),
            callback_port,
            scopes: text("scopes").map(|s| s.split_whitespace().map(str::to_owned).collect()).unwrap_or_default(),
            client_credentials: match text("grant").as_deref() {
                None | Some("authorization_code") => false,
                Some("client_credentials") => true,
                Some(other) => {
                    return Err(format!("oauth.grant {other:?}: use authorization_code or client_credentials"))
                }
            },
        })
    }
}

impl Target {
    /// The server as a person names it: its command line, or its URL.
    pub fn describe(&self) -> String {
        match self {
            Target::Stdio(command) => std::iter::once(command.program.as_str())
                .chain(command.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Target::Http(url, ..) => url.clone(),
        }
    }

    /// Connects, to `early` if it is the process this target names (else `early` is ended).
    pub async fn connect(
        &self,
        mut options: ClientOptions,
        early: Option<ServerProcess>,
    ) -> Result<Client, mcp::Error> {
        match self {
            Target::Stdio(cmd) => match early {
                Some(process) if process.command() == cmd => Client::connect_process(process, options).await,
                other => {
                    drop(other); // not this server: killed and reaped
                    Client::connect_stdio(cmd.clone(), options).await
                }
            },
            Target::Http(url, headers, _) => {
                drop(early);
                options.headers.extend(headers.iter().cloned());
                Client::connect_http(url, options).await
            }
        }
    }
}

/// The `mcpServers` object of a file.
pub fn servers(path: &Path) -> Result<serde_json::Map<String, Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    match config.get("mcpServers") {
        Some(Value::Object(servers)) => Ok(servers.clone()),
        _ => Err(format!("{}: no \"mcpServers\" object", path.display())),
    }
}

/// The entries of an `mcpServers` file: name, transport, and what it runs or reaches.
pub fn list(path: &Path) -> Result<Vec<Value>, String> {
    Ok(servers(path)?
        .iter()
        .map(|(name, entry)| match entry.get("url").and_then(Value::as_str) {
            Some(url) => {
                let transport = entry.get("type").and_then(Value::as_str).unwrap_or("http");
                serde_json::json!({"name": name, "transport": transport, "url": url})
            }
            None => {
                let mut line = vec![entry.get("command").and_then(Value::as_str).unwrap_or("?").to_owned()];
                let args = entry.get("args").and_then(Value::as_array);
                line.extend(args.into_iter().flatten().filter_map(Value::as_str).map(str::to_owned));
                serde_json::json!({"name": name, "transport": "stdio", "command": line.join(" ")})
            }
        })
        .collect())
}

/// The entry `name` of an `mcpServers` file; without a name, its only entry.
pub fn from_config(path: &Path, name: Option<&str>) -> Result<Target, String> {
    let servers = servers(path)?;
    let names = || servers.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
    let (name, entry) = match name {
        Some(name) => match servers.get(name) {
            Some(entry) => (name, entry),
            None => return Err(format!("no server {name:?} in {}; it has: {}", path.display(), names())),
        },
        None if servers.len() == 1 => servers.iter().next().map(|(n, e)| (n.as_str(), e)).expect("one entry"),
        None if servers.is_empty() => return Err(format!("{} lists no servers", path.display())),
        None => return Err(format!("{} lists several servers: pass --server NAME ({})", path.display(), names())),
    };
    entry_target(name, entry)
}

/// The server an `mcpServers` entry names: its `url` (with `headers` and `oauth`), else its
/// `command` (with `args`, `env` and `cwd`, confined to its `sandbox`, or to the strict default
/// under `--sandbox`). `${VAR}` and `${VAR:-default}` in these strings
/// are read from the environment, as Claude Code does (an unset variable without a default is
/// an error naming it), so that secrets stay out of the file.
pub fn entry_target(name: &str, entry: &Value) -> Result<Target, String> {
    let text = |v: &Value| {
        mcp_host::servers::expand(v.as_str().unwrap_or_default(), &|var| std::env::var(var).ok())
            .map_err(|e| format!("server {name:?}: {e}"))
    };
    if let Some(url) = entry.get("url") {
        let mut headers = Vec::new();
        for (k, v) in entry.get("headers").and_then(Value::as_object).into_iter().flatten() {
            headers.push((k.clone(), text(v)?));
        }
        let oauth = OAuthEntry::from_json(entry).map_err(|e| format!("server {name:?}: {e}"))?;
        return Ok(Target::Http(text(url)?, headers, oauth));
    }
    let command = entry.get("command").ok_or(format!("server {name:?} has neither \"command\" nor \"url\""))?;
    let mut cmd = StdioCommand::new(text(command)?);
    for arg in entry.get("args").and_then(Value::as_array).into_iter().flatten() {
        cmd.args.push(text(arg)?);
    }
    for (k, v) in entry.get("env").and_then(Value::as_object).into_iter().flatten() {
        cmd.env.push((k.clone(), text(v)?));
    }
    if let Some(cwd) = entry.get("cwd") {
        cmd.cwd = Some(text(cwd)?.into());
    }
    let policy = crate::sandbox::policy_from_entry(entry).map_err(|e| format!("server {name:?}: {e}"))?;
    crate::sandbox::confine(&mut cmd, name, policy);
    Ok(Target::Stdio(cmd))
}
