//! The servers of a session: read from `mcpServers` files (`${VAR}` and `${VAR:-default}`
//! expanded), one client each, started in parallel; a server that fails to start is reported
//! and the others go on. A server that says its tools changed (`list_changed`, on a legacy
//! session or a 2026-07-28 `subscriptions/listen` kept open) is listed again before the next
//! turn of the model.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use mcp::client::{Client, ClientOptions, Stderr, StdioCommand};
use mcp::types::tools::Tool;
use serde_json::Value;

/// How a server is reached.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A process on stdio.
    Stdio(StdioCommand),
    /// A Streamable HTTP URL, with headers.
    Http {
        /// The URL.
        url: String,
        /// Extra headers.
        headers: Vec<(String, String)>,
    },
}

impl ServerEntry {
    /// An entry for a server reached some other way (embedding, tests).
    pub fn named(name: &str, trusted: bool) -> ServerEntry {
        ServerEntry {
            name: name.to_owned(),
            transport: Transport::Stdio(StdioCommand::new("")),
            trusted,
            source: PathBuf::new(),
            raw: Value::Null,
        }
    }
}

/// One `mcpServers` entry.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    /// Its name.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Whether its read-only hints are believed (servers of the person's own configuration are;
    /// a project's `.mcp.json` is not, until the person trusts it).
    pub trusted: bool,
    /// The file it came from.
    pub source: PathBuf,
    /// The entry as written (for settings the host does not read, such as `oauth`).
    pub raw: Value,
}

/// Expands `${VAR}` and `${VAR:-default}` in `text`; an unset variable without a default is an
/// error naming it.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed ${{ in {text:?}"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("${{{name}}} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The entries of one `mcpServers` file, in the file's order; entries that cannot be read are
/// returned as errors beside the others.
pub fn read_file(path: &Path, trusted: bool) -> Result<Vec<Result<ServerEntry, String>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let Some(Value::Object(servers)) = config.get("mcpServers") else {
        return Err(format!("{}: no \"mcpServers\" object", path.display()));
    };
    Ok(servers.iter().map(|(name, entry)| entry_of(name, entry, path, trusted)).collect())
}

fn entry_of(name: &str, entry: &Value, source: &Path, trusted: bool) -> Result<ServerEntry, String> {
    let fail = |e: String| format!("server {name:?} ({}): {e}", source.display());
    let text = |v: &Value| expand(v.as_str().unwrap_or_default(), &env_lookup).map_err(fail);
    let transport = if let Some(url) = entry.get("url") {
        let headers = entry
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| h.iter().map(|(k, v)| Ok((k.clone(), text(v)?))).collect::<Result<Vec<_>, String>>())
            .transpose()?
            .unwrap_or_default();
        Transport::Http { url: text(url)?, headers }
    } else {
        let program = entry.get("command").ok_or_else(|| fail("neither \"command\" nor \"url\"".into()))?;
        let mut command = StdioCommand::new(text(program)?);
        // A Ctrl-C at the terminal is the host's to handle (it cancels what runs and carries on):
        // the servers do not get it, and none outlives the host.
        command.own_process_group = true;
        command.die_with_parent = true;
        for arg in entry.get("args").and_then(Value::as_array).into_iter().flatten() {
            command.args.push(text(arg)?);
        }
        for (k, v) in entry.get("env").and_then(Value::as_object).into_iter().flatten() {
            command.env.push((k.clone(), text(v)?));
        }
        if let Some(cwd) = entry.get("cwd") {
            command.cwd = Some(PathBuf::from(text(cwd)?));
        }
        command.stderr = Stderr::Discard;
        Transport::Stdio(command)
    };
    Ok(ServerEntry { name: name.to_owned(), transport, trusted, source: source.to_owned(), raw: entry.clone() })
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Connected: the protocol version it speaks.
    Ready(String),
    /// It did not start, or it died: why.
    Failed(String),
    /// The person disabled it for this project.
    Disabled,
}

/// A server of the session.
pub struct Server {
    /// Its entry.
    pub entry: ServerEntry,
    /// Its client, when connected.
    pub client: Option<Client>,
    /// Its tools, as last listed.
    tools: RwLock<Vec<Tool>>,
    /// Set when the server said its tools changed: they are listed again before the next turn.
    tools_changed: Arc<AtomicBool>,
    state: Mutex<State>,
}

/// Adds to `options` a hook that notes `notifications/tools/list_changed` (any hook already
/// there still runs); the note, for [`Server::watching`].
pub fn watch_tool_changes(options: &mut ClientOptions) -> Arc<AtomicBool> {
    let changed = Arc::new(AtomicBool::new(false));
    let note = changed.clone();
    let previous = options.on_notification.take();
    options.on_notification = Some(Arc::new(move |method: &str, params: &Value| {
        if method == "notifications/tools/list_changed" {
            note.store(true, Ordering::SeqCst);
        }
        if let Some(previous) = &previous {
            previous(method, params);
        }
    }));
    changed
}

/// A 2026-07-28 server says its tools changed only on a `subscriptions/listen` request: one
/// stays open while the connection lives (sent again if it ends).
fn listen_for_tool_changes(client: &Client) {
    let description = client.description();
    let announces = description.capabilities.tools.as_ref().is_some_and(|t| t.list_changed == Some(true));
    if !description.modern || !announces {
        return;
    }
    let client = client.clone();
    tokio::spawn(async move {
        let params = serde_json::json!({"notifications": {"toolsListChanged": true}});
        while !client.is_closed() {
            if client.request("subscriptions/listen", params.clone()).await.is_err() {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    });
}

impl Server {
    /// A server already connected (embedding, tests): its entry, its client, its tools.
    pub fn ready(entry: ServerEntry, client: Client, tools: Vec<Tool>) -> Server {
        let version = client.description().protocol_version.clone();
        Server {
            entry,
            client: Some(client),
            tools: RwLock::new(tools),
            tools_changed: Arc::new(AtomicBool::new(false)),
            state: Mutex::new(State::Ready(version)),
        }
    }

    /// [`Server::ready`] for a client whose options went through [`watch_tool_changes`]:
    /// `changed` is the note it returned.
    pub fn watching(entry: ServerEntry, client: Client, tools: Vec<Tool>, changed: Arc<AtomicBool>) -> Server {
        listen_for_tool_changes(&client);
        Server { tools_changed: changed, ..Server::ready(entry, client, tools) }
    }

    fn absent(entry: ServerEntry, state: State) -> Server {
        Server {
            entry,
            client: None,
            tools: RwLock::new(Vec::new()),
            tools_changed: Arc::new(AtomicBool::new(false)),
            state: Mutex::new(state),
        }
    }

    /// Its tools, as last listed.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Lists its tools again if it said they changed; `Ok(true)` when they were listed.
    pub async fn refresh_tools(&self) -> Result<bool, String> {
        let Some(client) = self.client.as_ref().filter(|_| self.is_ready()) else { return Ok(false) };
        if !self.tools_changed.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        let tools = list_declared_tools(client).await?;
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
        Ok(true)
    }

    /// Its state.
    pub fn state(&self) -> State {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Marks it failed (a call found it dead).
    pub fn fail(&self, why: String) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = State::Failed(why);
    }

    /// Whether its tools may be offered.
    pub fn is_ready(&self) -> bool {
        matches!(self.state(), State::Ready(_))
    }
}

/// Connects to every entry at once (disabled ones are not started), listing each one's tools.
pub async fn start_all(
    entries: Vec<ServerEntry>,
    disabled: &[String],
    options_for: &(dyn Fn(&ServerEntry) -> ClientOptions + Sync),
) -> Vec<Server> {
    let starts = entries.into_iter().map(|entry| {
        let off = disabled.iter().any(|d| d == &entry.name);
        let mut options = options_for(&entry);
        let changed = watch_tool_changes(&mut options);
        async move {
            if off {
                return Server::absent(entry, State::Disabled);
            }
            match connect(&entry, options).await {
                Ok((client, tools)) => Server::watching(entry, client, tools, changed),
                Err(why) => Server::absent(entry, State::Failed(why)),
            }
        }
    });
    futures_util::future::join_all(starts).await
}

async fn connect(entry: &ServerEntry, options: ClientOptions) -> Result<(Client, Vec<Tool>), String> {
    let client = match &entry.transport {
        Transport::Stdio(command) => Client::connect_stdio(command.clone(), options).await,
        Transport::Http { url, headers } => {
            let mut options = options;
            options.headers.extend(headers.iter().cloned());
            Client::connect_http(url, options).await
        }
    }
    .map_err(|e| e.to_string())?;
    let tools = list_declared_tools(&client).await?;
    Ok((client, tools))
}

/// The server's tools if it declared the capability (the lifecycle: use only what was
/// negotiated; a server of prompts or resources alone is asked for none).
async fn list_declared_tools(client: &Client) -> Result<Vec<Tool>, String> {
    let _ = client.era().await;
    if client.description().capabilities.tools.is_none() {
        return Ok(Vec::new());
    }
    client.list_tools().await.map_err(|e| format!("tools/list failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_with_defaults() {
        let env = |name: &str| match name {
            "HOME" => Some("/home/a".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        assert_eq!(expand("${HOME}/x", &env).unwrap(), "/home/a/x");
        assert_eq!(expand("${PORT:-8080}", &env).unwrap(), "8080");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("plain", &env).unwrap(), "plain");
        assert_eq!(expand("${MISSING}", &env).unwrap_err(), "${MISSING} is not set");
        assert!(expand("${OPEN", &env).is_err());
    }
}
