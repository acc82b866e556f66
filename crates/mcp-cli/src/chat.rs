//! `mcp chat`: the host at a terminal (or, with `-p`, for one prompt): the servers of the
//! project's `.mcp.json` (or `--config`), a model from Anthropic or any OpenAI-compatible server,
//! consent asked at the terminal, `/mcp` and `/context`.

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::Args;
use mcp::client::{ClientOptions, Handlers};
use mcp_host::consent::{Asker, Consent, NoOne, Rule};
use mcp_host::project::Project;
use mcp_host::provider::{Anthropic, OpenAi, Provider};
use mcp_host::servers::{self, ServerEntry, State, Transport};
use mcp_host::{Event, Host, HostError, Settings};
use serde_json::json;

use crate::term::{clean, next_line, Terminal, Typed};

/// `mcp chat` options.
#[derive(Args, Debug, Clone)]
pub struct ChatArgs {
    /// The provider: anthropic (ANTHROPIC_API_KEY) or openai (OPENAI_API_KEY; also Ollama,
    /// llama.cpp, vLLM with --base-url). Default: the one whose key is set
    #[arg(long, value_parser = ["anthropic", "openai"])]
    pub provider: Option<String>,
    /// The provider's base URL (e.g. http://127.0.0.1:11434/v1 for Ollama)
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model
    #[arg(long)]
    pub model: Option<String>,
    /// Run this prompt, print the final answer, exit
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Allow without asking: server, server/*, server/tool, mcp__server__tool (repeatable)
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,
    /// Never allow (repeatable; wins over --allow)
    #[arg(long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,
    /// Allow every tool call without asking (explicit, and logged)
    #[arg(long)]
    pub yes: bool,
    /// Believe this server's read-only hints (repeatable; a project's .mcp.json servers are not
    /// trusted until you say so)
    #[arg(long = "trust", value_name = "SERVER")]
    pub trust: Vec<String>,
    /// Turns before giving up
    #[arg(long, default_value_t = 25)]
    pub max_steps: usize,
    /// Tokens per model reply
    #[arg(long, default_value_t = 4096)]
    pub max_tokens: u32,
    /// Where an OpenAI-format request puts that limit: auto (max_completion_tokens on OpenAI's
    /// API and for reasoning models, max_tokens elsewhere, switching when a server refuses one),
    /// max_tokens, or max_completion_tokens
    #[arg(long, value_name = "FIELD", default_value = "auto")]
    pub max_tokens_field: mcp_host::provider::MaxTokensField,
    /// The model's context window in tokens (default: from its name)
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<usize>,
    /// Remember nothing for this project (consent answers, disabled servers)
    #[arg(long)]
    pub no_remember: bool,
}

/// The `mcp` options `chat` uses.
pub struct Common<'a> {
    pub config: Option<&'a PathBuf>,
    pub roots: Vec<mcp::types::roots::Root>,
    pub cacerts: &'a [PathBuf],
    pub auth: &'a crate::login::AuthOptions,
    pub json: bool,
    pub quiet: bool,
    pub timeout: std::time::Duration,
}

/// How a chat ended.
pub enum Outcome {
    Done,
    Usage(String),
    Failed(String),
    Interrupted,
}

fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The `mcpServers` files: `--config`, else the project's `.mcp.json` (not trusted) and Claude
/// Desktop's configuration (trusted).
fn server_files(config: Option<&PathBuf>) -> Vec<(PathBuf, bool)> {
    if let Some(path) = config {
        return vec![(path.clone(), true)];
    }
    let mut files = Vec::new();
    if let Some(project) = std::env::current_dir().ok().and_then(|dir| project_config(&dir)) {
        files.push((project, false));
    }
    if let Some(desktop) = desktop_config().filter(|p| p.exists()) {
        files.push((desktop, true));
    }
    files
}

/// The project a session remembers its answers for: the directory of the `.mcp.json` in use
/// (so a subdirectory is the same project), else the working directory.
fn project_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    project_config(&cwd).and_then(|file| file.parent().map(PathBuf::from)).unwrap_or(cwd)
}

/// The project's `.mcp.json`: in `dir` or the nearest parent that has one, as Claude Code finds it.
pub(crate) fn project_config(dir: &std::path::Path) -> Option<PathBuf> {
    dir.ancestors().map(|d| d.join(".mcp.json")).find(|p| p.is_file())
}

/// Where Claude Desktop keeps its configuration on this OS: `~/Library/Application Support/Claude/`
/// on macOS, `%APPDATA%\Claude\` on Windows, `$XDG_CONFIG_HOME/Claude/` (else `~/.config/Claude/`)
/// elsewhere.
pub(crate) fn desktop_config() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = if cfg!(target_os = "macos") {
        var("HOME")?.join("Library/Application Support/Claude")
    } else if cfg!(windows) {
        var("APPDATA")?.join("Claude")
    } else {
        var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")))?.join("Claude")
    };
    Some(dir.join("claude_desktop_config.json"))
}

fn provider(args: &ChatArgs, cacerts: &[PathBuf]) -> Result<(Arc<dyn Provider>, String), String> {
    let anthropic_key = std::env::var("ANTHROPIC_API_KEY").ok().filter(|k| !k.is_empty());
    let openai_key = std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty());
    let which = match (&args.provider, &anthropic_key, &openai_key, &args.base_url) {
        (Some(p), _, _, _) => p.clone(),
        (None, Some(_), _, _) => "anthropic".into(),
        (None, None, Some(_), _) | (None, None, None, Some(_)) => "openai".into(),
        _ => return Err("no model provider: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or give --base-url for a local OpenAI-compatible server".into()),
    };
    if which == "anthropic" {
        let key = anthropic_key.ok_or("--provider anthropic needs ANTHROPIC_API_KEY")?;
        let model = args.model.clone().unwrap_or_else(|| "claude-sonnet-4-5".into());
        let anthropic = Anthropic::new(args.base_url.as_deref(), &key, cacerts)?.on_wait(countdown());
        return Ok((Arc::new(anthropic), model));
    }
    if openai_key.is_none() && args.base_url.is_none() {
        return Err("--provider openai needs OPENAI_API_KEY (or --base-url for a local server)".into());
    }
    let model =
        args.model.clone().unwrap_or_else(|| if args.base_url.is_some() { "default".into() } else { "gpt-4.1".into() });
    let openai = OpenAi::new(args.base_url.as_deref(), openai_key.as_deref(), cacerts)?;
    Ok((Arc::new(openai.max_tokens_field(args.max_tokens_field).on_wait(countdown())), model))
}

/// A retry's wait, counted down on stderr: one line rewritten each second at a terminal, one
/// line per wait elsewhere.
fn countdown() -> mcp_host::provider::OnWait {
    use std::io::IsTerminal as _;
    let terminal = std::io::stderr().is_terminal();
    let counting = std::sync::atomic::AtomicBool::new(false);
    Arc::new(move |why: &str, left: std::time::Duration| {
        let secs = left.as_secs_f64().ceil() as u64;
        let first = !counting.swap(secs > 0, std::sync::atomic::Ordering::Relaxed);
        match (terminal, secs) {
            (true, 0) => eprintln!("\r\x1b[2K{why}: retrying now"),
            (true, _) => eprint!("\r\x1b[2K{why}: retrying in {secs} s"),
            (false, 0) => {}
            (false, _) if first => eprintln!("{why}: retrying in {secs} s"),
            (false, _) => {}
        }
    })
}

/// Prints events: JSON lines with `--json`; else text to stdout as it streams (interactive),
/// calls and notices to stderr.
fn printer(json: bool, quiet: bool, stream_text: bool) -> Arc<dyn Fn(Event) + Send + Sync> {
    Arc::new(move |event: Event| {
        if json {
            let line = match &event {
                Event::Text(_) => return,
                Event::TurnEnd { text, stop } => json!({"type": "turn", "text": text, "stop": stop}),
                Event::ToolCall { server, tool, arguments } => {
                    json!({"type": "tool_call", "server": server, "tool": tool, "arguments": arguments})
                }
                Event::Consent { server, tool, allowed, why } => {
                    json!({"type": "consent", "server": server, "tool": tool, "allowed": allowed, "why": why})
                }
                Event::Progress { server, tool, message } => {
                    json!({"type": "progress", "server": server, "tool": tool, "message": message})
                }
                Event::ToolResult { server, tool, is_error, text } => {
                    json!({"type": "tool_result", "server": server, "tool": tool, "isError": is_error, "text": text})
                }
                Event::Usage(u) => json!({"type": "usage", "input": u.input, "output": u.output}),
                Event::Notice(m) => json!({"type": "notice", "message": m}),
            };
            println!("{line}");
            return;
        }
        match event {
            Event::Text(text) if stream_text => {
                print!("{}", clean(&text));
                let _ = std::io::stdout().flush();
            }
            Event::TurnEnd { .. } if stream_text => println!(),
            _ if quiet => {}
            Event::ToolCall { server, tool, arguments } => {
                eprintln!("→ {}/{} {}", clean(&server), clean(&tool), clean(&arguments.to_string()))
            }
            Event::Consent { allowed: false, why, .. } => eprintln!("  not run: {}", clean(&why)),
            Event::Progress { message, .. } => eprintln!("  … {}", clean(&message)),
            Event::ToolResult { is_error, text, .. } => {
                let text = clean(&text);
                let first = text.lines().next().unwrap_or_default();
                let first: String = first.chars().take(100).collect();
                eprintln!("← {}{first}", if is_error { "error: " } else { "" });
            }
            Event::Notice(message) => eprintln!("mcp: {}", clean(&message)),
            _ => {}
        }
    })
}

/// Runs `mcp chat`.
pub async fn run(common: Common<'_>, args: &ChatArgs) -> Outcome {
    let rules = |list: &[String]| list.iter().map(|r| Rule::parse(r)).collect::<Result<Vec<_>, _>>();
    let (allow, deny) = match (rules(&args.allow), rules(&args.deny)) {
        (Ok(a), Ok(d)) => (a, d),
        (Err(e), _) | (_, Err(e)) => return Outcome::Usage(e),
    };
    let (provider, model) = match provider(args, common.cacerts) {
        Ok(p) => p,
        Err(e) => return Outcome::Usage(e),
    };
    let person = interactive() && !common.json;
    let repl = args.prompt.is_none();
    if repl && !person {
        return Outcome::Usage("mcp chat needs a terminal, or -p PROMPT".into());
    }
    let events = printer(common.json, common.quiet, repl);
    let mut entries = Vec::new();
    for (file, trusted) in server_files(common.config) {
        match servers::read_file(&file, trusted) {
            Ok(list) => {
                for entry in list {
                    match entry.and_then(crate::sandbox::confine_entry) {
                        Ok(entry) => entries.push(entry),
                        Err(e) => events(Event::Notice(e)),
                    }
                }
            }
            Err(e) => return Outcome::Usage(e),
        }
    }
    if args.yes {
        events(Event::Notice("--yes: every tool call runs without asking".into()));
    }
    let project =
        Arc::new(Mutex::new(if args.no_remember { Project::ephemeral() } else { Project::open(&project_root()) }));
    let disabled = project.lock().unwrap().state.disabled.clone();
    let asker: Arc<dyn Asker> = if person { Arc::new(Terminal::new()) } else { Arc::new(NoOne) };
    let trusted: HashSet<String> = args.trust.iter().cloned().collect();
    let consent = Arc::new(Consent::new(allow, deny, args.yes, trusted, project.clone(), asker));
    let budget = Arc::new(mcp_host::sampling::Budget::new(10, 1024));
    let options_for = |entry: &ServerEntry| -> ClientOptions {
        let sampling = mcp_host::sampling::handler(
            entry.name.clone(),
            provider.clone(),
            consent.clone(),
            model.clone(),
            budget.clone(),
        );
        let mut options = ClientOptions {
            client_info: mcp::types::lifecycle::Implementation::new("mcp-chat", env!("CARGO_PKG_VERSION")),
            handlers: Handlers {
                elicitation: Some(elicitation(person)),
                sampling: Some(sampling),
                roots: roots_handler(common.roots.clone()),
            },
            timeout: common.timeout,
            ca_files: common.cacerts.to_vec(),
            ..ClientOptions::default()
        };
        if matches!(entry.transport, Transport::Http { .. }) {
            let oauth = crate::target::OAuthEntry::from_json(&entry.raw).unwrap_or_default();
            if let Ok(auth) = common.auth.authorizer(&oauth, common.cacerts) {
                options.auth = Some(Arc::new(auth));
            }
        }
        options
    };
    let started = servers::start_all(entries, &disabled, &options_for).await;
    let mut settings = Settings::new(model);
    settings.max_steps = args.max_steps;
    settings.max_tokens = args.max_tokens;
    settings.context_window = args.context_window;
    let mut host = Host::new(provider, settings, started, consent, events.clone());
    host.offer_skills().await;
    match &args.prompt {
        Some(prompt) => once(&mut host, prompt, common.json).await,
        None => repl_loop(&mut host, &project).await,
    }
}

fn elicitation(
    person: bool,
) -> mcp::client::Handler<mcp::types::elicitation::ElicitParams, mcp::types::elicitation::ElicitResult> {
    Arc::new(move |params: mcp::types::elicitation::ElicitParams| {
        Box::pin(async move {
            if !person {
                return Ok(mcp::types::elicitation::ElicitResult {
                    result_type: None,
                    action: mcp::types::elicitation::ElicitAction::Decline,
                    content: None,
                    meta: None,
                });
            }
            // Read through the chat's one reader: a form abandoned (Ctrl-C) takes no line.
            let (mut typed, _abandon) = Typed::new();
            tokio::task::spawn_blocking(move || crate::elicit::ask(&params, &mut typed, &mut std::io::stderr().lock()))
                .await
                .map_err(|e| e.to_string())
        }) as mcp::server::BoxFuture<_>
    })
}

fn roots_handler(
    roots: Vec<mcp::types::roots::Root>,
) -> Option<mcp::client::Handler<(), mcp::types::roots::ListRootsResult>> {
    Some(Arc::new(move |()| {
        let roots = roots.clone();
        Box::pin(async move { Ok(mcp::types::roots::ListRootsResult { roots, ..Default::default() }) })
            as mcp::server::BoxFuture<_>
    }))
}

/// `-p`: one run; the final answer on stdout.
async fn once(host: &mut Host, prompt: &str, json: bool) -> Outcome {
    let run = host.run(prompt);
    let result = tokio::select! {
        r = run => r,
        _ = tokio::signal::ctrl_c() => return Outcome::Interrupted,
    };
    match result {
        Ok(answer) => {
            if json {
                println!(
                    "{}",
                    json!({"type": "final", "text": answer, "usage": {"input": host.usage.input, "output": host.usage.output}})
                );
            } else {
                println!("{answer}");
            }
            Outcome::Done
        }
        Err(e @ HostError::MaxSteps(..)) => Outcome::Failed(e.to_string()),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// The interactive loop: prompts, `/mcp`, `/context`, `/quit`.
async fn repl_loop(host: &mut Host, project: &Arc<Mutex<Project>>) -> Outcome {
    eprintln!(
        "mcp chat: {} server(s); /mcp, /context, /allow, /deny, /quit. Ctrl-C stops a turn.",
        host.servers().len()
    );
    show_servers(host);
    loop {
        eprint!("\n> ");
        let _ = std::io::stderr().flush();
        let Some(line) = next_line().await else { return Outcome::Done };
        match line.as_str() {
            "" => continue,
            "/quit" | "/exit" => return Outcome::Done,
            "/mcp" => show_servers(host),
            "/context" => show_context(host),
            command if command.starts_with("/mcp ") => mcp_command(host, project, &command[5..]),
            "/allow" | "/deny" => show_rules(host),
            command if command.starts_with("/allow ") || command.starts_with("/deny ") => {
                let (verb, rule) = command.split_once(' ').unwrap_or((command, ""));
                match host.consent().remember_rule(rule.trim(), verb == "/allow") {
                    Ok(done) => eprintln!("  {done}"),
                    Err(why) => eprintln!("  {why}"),
                }
            }
            prompt => {
                let run = host.run(prompt);
                let result = tokio::select! {
                    r = run => Some(r),
                    _ = tokio::signal::ctrl_c() => None,
                };
                match result {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => eprintln!("mcp: {e}"),
                    None => {
                        host.repair();
                        eprintln!("\nmcp: interrupted (the calls in flight were cancelled)");
                    }
                }
            }
        }
    }
}

fn show_servers(host: &Host) {
    let costs = host.context_costs();
    for (server, (_, tools, tokens)) in host.servers().iter().zip(costs) {
        let state = match server.state() {
            State::Ready(version) => format!("ready, {version}"),
            State::Failed(why) => format!("failed: {why}"),
            State::Disabled => "disabled for this project".into(),
        };
        let enabled = if host.is_enabled(&server.entry.name) { "" } else { " (disabled)" };
        eprintln!("  {}{enabled}: {state}; {tools} tools, about {tokens} tokens", server.entry.name);
    }
}

/// `/allow`, `/deny`: the rules in effect.
fn show_rules(host: &Host) {
    let (allow, deny) = host.consent().rules();
    eprintln!("  allow: {}", if allow.is_empty() { "(none)".to_owned() } else { allow.join(", ") });
    eprintln!("  deny: {}", if deny.is_empty() { "(none)".to_owned() } else { deny.join(", ") });
    eprintln!("  /allow RULE, /deny RULE remember one for this project (server, server/*, server/tool)");
}

fn show_context(host: &Host) {
    let costs = host.context_costs();
    let total: usize = costs.iter().map(|(_, _, t)| t).sum();
    for (name, tools, tokens) in &costs {
        eprintln!("  {name}: {tools} tools, about {tokens} tokens");
    }
    let mode = if host.deferred() { "loaded on demand (search_tools, load_tools)" } else { "all sent" };
    eprintln!("  total about {total} tokens of a {}-token window: tool definitions {mode}", host.window());
    eprintln!("  used so far: {} tokens in, {} out", host.usage.input, host.usage.output);
}

/// `/mcp enable NAME`, `/mcp disable NAME`, `/mcp trust NAME`: for this project, remembered.
fn mcp_command(host: &mut Host, project: &Arc<Mutex<Project>>, rest: &str) {
    let (verb, name) = rest.trim().split_once(' ').unwrap_or((rest.trim(), ""));
    let name = name.trim();
    if !host.servers().iter().any(|s| s.entry.name == name) {
        eprintln!("  no server {name:?}: /mcp lists them");
        return;
    }
    let mut project = project.lock().unwrap();
    match verb {
        "enable" => {
            project.state.disabled.retain(|d| d != name);
            host.set_enabled(name, true);
        }
        "disable" => {
            Project::remember(&mut project.state.disabled, name);
            host.set_enabled(name, false);
        }
        "trust" => {
            Project::remember(&mut project.state.trusted, name);
        }
        _ => {
            eprintln!("  /mcp enable NAME, /mcp disable NAME, /mcp trust NAME");
            return;
        }
    }
    let later = verb == "enable" && host.servers().iter().any(|s| s.entry.name == name && s.state() == State::Disabled);
    match project.save() {
        Ok(()) if later => eprintln!("  {name}: enabled for this project; it starts with the next session"),
        Ok(()) => eprintln!("  {name}: {verb}ed for this project", verb = verb.trim_end_matches('e')),
        Err(e) => eprintln!("  cannot remember it: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_project_config_is_found_from_a_subdirectory() {
        let root = std::env::temp_dir().join(format!("mcp-chat-project-{}", std::process::id()));
        let deep = root.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(project_config(&deep).filter(|p| p.starts_with(&root)), None);
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        assert_eq!(project_config(&deep), Some(root.join(".mcp.json")));
        std::fs::write(root.join("a/.mcp.json"), "{}").unwrap();
        assert_eq!(project_config(&deep), Some(root.join("a/.mcp.json")), "the nearest wins");
        std::fs::create_dir_all(root.join("a/b/.mcp.json")).unwrap();
        assert_eq!(project_config(&deep), Some(root.join("a/.mcp.json")), "a directory of that name is not a file");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn claude_desktop_config_is_where_this_os_keeps_it() {
        let path = desktop_config().expect("HOME is set in tests");
        assert!(path.ends_with("Claude/claude_desktop_config.json"), "{}", path.display());
        if cfg!(target_os = "linux") && std::env::var_os("XDG_CONFIG_HOME").is_none() {
            assert!(path.to_string_lossy().contains("/.config/Claude/"), "{}", path.display());
        }
    }
}
