//! The agent loop: a model turn; consent for each call it asks for; the allowed calls run at
//! once; their fenced results go back; again, until the model ends its turn or the step limit.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use mcp::types::tools::{CallToolResult, Tool};
use serde_json::{json, Value};

use crate::consent::{Consent, Decision};
use crate::context::{self, LOAD, SEARCH};
use crate::fence::Fence;
use crate::names::Names;
use crate::provider::{Message, Part, Provider, ProviderError, Request, Role, Stop, ToolSpec, Usage};
use crate::results;
use crate::servers::{Server, State};
use crate::skills::{self, OfferedSkill, LOAD_SKILL};
use crate::traced;

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model.
    pub model: String,
    /// Turns before giving up (default 25).
    pub max_steps: usize,
    /// Tokens per reply (default 4096).
    pub max_tokens: u32,
    /// The model's context window (default: guessed from its name).
    pub context_window: Option<usize>,
    /// The share of the window tool definitions may take before they are loaded on demand
    /// (default 0.10).
    pub defer_share: f64,
    /// The longest result, in characters, before it is cut (default 25,000).
    pub result_limit: usize,
    /// Where cut results are saved whole.
    pub spill_dir: PathBuf,
    /// More instructions for the system prompt.
    pub instructions: Option<String>,
}

impl Settings {
    /// Defaults for `model`.
    pub fn new(model: impl Into<String>) -> Settings {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        Settings {
            model: model.into(),
            max_steps: 25,
            max_tokens: 4096,
            context_window: None,
            defer_share: 0.10,
            result_limit: 25_000,
            spill_dir: cache.join("mcp").join("results"),
            instructions: None,
        }
    }
}

/// What happens, for the person (and `--json`).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Model text as it streams.
    Text(String),
    /// A turn ended.
    TurnEnd {
        /// Its text.
        text: String,
        /// Why it stopped.
        stop: String,
    },
    /// The model asks for a tool.
    ToolCall {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The arguments.
        arguments: Value,
    },
    /// A consent decision.
    Consent {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Allowed.
        allowed: bool,
        /// Why.
        why: String,
    },
    /// A running call's progress (a task's status).
    Progress {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// What it says.
        message: String,
    },
    /// A call's result.
    ToolResult {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// It failed.
        is_error: bool,
        /// The text (unfenced).
        text: String,
    },
    /// Tokens used by a turn.
    Usage(Usage),
    /// Something the person should know (renamed tools, failed servers, loaded schemas).
    Notice(String),
}

/// Why a run ended without an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum HostError {
    /// The provider failed.
    Provider(ProviderError),
    /// The step limit was reached; the model's last text.
    MaxSteps(usize, String),
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Provider(e) => write!(f, "{e}"),
            HostError::MaxSteps(n, _) => write!(f, "stopped after {n} steps (--max-steps) without a final answer"),
        }
    }
}

/// A tool as offered: its name for the model, where it lives, its definition.
#[derive(Clone)]
struct Offered {
    spec: ToolSpec,
    server: usize,
    tool: Tool,
}

/// A call ready to run (consent given), or answered already.
enum Prepared {
    Run { id: String, server: usize, tool: Box<Tool>, arguments: Value },
    Answered(Part),
}

/// The names the model sees for every server's tools.
fn names_of(servers: &[Arc<Server>]) -> Names {
    let tools: Vec<(String, Vec<Tool>)> = servers.iter().map(|s| (s.entry.name.clone(), s.tools())).collect();
    Names::build(tools.iter().flat_map(|(server, tools)| tools.iter().map(move |t| (server.as_str(), t.name.as_str()))))
}

/// A conversation with a model and the servers' tools.
pub struct Host {
    provider: Arc<dyn Provider>,
    settings: Settings,
    servers: Vec<Arc<Server>>,
    names: Names,
    consent: Arc<Consent>,
    fence: Fence,
    history: Vec<Message>,
    loaded: HashSet<String>,
    disabled: HashSet<String>,
    on_event: Arc<dyn Fn(Event) + Send + Sync>,
    /// Skills the person approved for the model (see [`Host::offer_skills`]).
    skills: Vec<OfferedSkill>,
    /// Tokens used so far.
    pub usage: Usage,
}

impl Host {
    /// A host over `servers`; names are given now (renamed tools and failed servers are told
    /// through `on_event`).
    pub fn new(
        provider: Arc<dyn Provider>,
        settings: Settings,
        servers: Vec<Server>,
        consent: Arc<Consent>,
        on_event: Arc<dyn Fn(Event) + Send + Sync>,
    ) -> Host {
        let servers: Vec<Arc<Server>> = servers.into_iter().map(Arc::new).collect();
        let names = names_of(&servers);
        for notice in &names.notices {
            on_event(Event::Notice(format!("renamed: {notice}")));
        }
        for server in &servers {
            if let State::Failed(why) = server.state() {
                on_event(Event::Notice(format!("{} did not start: {why}", server.entry.name)));
            }
        }
        for server in servers.iter().filter(|s| s.entry.trusted) {
            consent.trust(&server.entry.name);
        }
        for server in &servers {
            consent.set_server_tools(&server.entry.name, &server.tools());
        }
        let disabled = servers.iter().filter(|s| s.state() == State::Disabled).map(|s| s.entry.name.clone()).collect();
        Host {
            provider,
            settings,
            servers,
            names,
            consent,
            fence: Fence::new(),
            history: Vec::new(),
            loaded: HashSet::new(),
            disabled,
            on_event,
            skills: Vec::new(),
            usage: Usage::default(),
        }
    }

    /// Lists the skills of every server that declares the extension and offers the model those
    /// the person approves (by digest, remembered per project). No skill file is read here.
    pub async fn offer_skills(&mut self) {
        let mut offered: Vec<OfferedSkill> = Vec::new();
        for (index, server) in self.servers.iter().enumerate() {
            if !server.is_ready() || !skills::serves_skills(server) {
                continue;
            }
            let listed = match skills::listed(server).await {
                Ok(listed) => listed,
                Err(why) => {
                    self.emit(Event::Notice(format!("{}: {why}", server.entry.name)));
                    continue;
                }
            };
            for (entry, digest) in listed {
                let name = entry.name().to_owned();
                let approval =
                    self.consent.approve_skill(&server.entry.name, &name, entry.description(), &digest).await;
                match approval {
                    Ok(()) => {
                        let taken = offered.iter().any(|o| o.key == name);
                        let key = if taken { format!("{}/{name}", server.entry.name) } else { name };
                        self.emit(Event::Notice(format!("skill {key} offered to the model")));
                        offered.push(OfferedSkill { key, server: index, entry, digest });
                    }
                    Err(why) => self.emit(Event::Notice(why)),
                }
            }
        }
        self.skills = offered;
    }

    /// The skills offered to the model.
    pub fn skills(&self) -> &[OfferedSkill] {
        &self.skills
    }

    /// Loads the skill the model asked for, verified; its text for the model.
    async fn load_skill(&self, arguments: &Value) -> (String, bool) {
        let skill = match skills::find(&self.skills, arguments) {
            Ok(skill) => skill,
            Err(why) => return (why, true),
        };
        let server = &self.servers[skill.server];
        let Some(client) = &server.client else { return (format!("{} is not connected", server.entry.name), true) };
        match client.load_skill(&skill.entry).await {
            Ok(loaded) => {
                self.emit(Event::Notice(format!("loaded skill {}", skill.key)));
                (skills::render(&loaded), false)
            }
            Err(e) => {
                self.emit(Event::Notice(format!("skill {} refused: {e}", skill.key)));
                (format!("The skill could not be loaded: {e}. Do not rely on it."), true)
            }
        }
    }

    /// The servers.
    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// The consent policy.
    pub fn consent(&self) -> &Consent {
        &self.consent
    }

    /// The session's fence.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Offers or withholds a server's tools from now on.
    pub fn set_enabled(&mut self, server: &str, enabled: bool) {
        if enabled {
            self.disabled.remove(server);
        } else {
            self.disabled.insert(server.to_owned());
        }
    }

    /// Whether a server's tools are offered.
    pub fn is_enabled(&self, server: &str) -> bool {
        !self.disabled.contains(server)
    }

    fn all_tools(&self) -> Vec<Offered> {
        let mut all = Vec::new();
        for (index, server) in self.servers.iter().enumerate() {
            if !server.is_ready() || self.disabled.contains(&server.entry.name) {
                continue;
            }
            for tool in &server.tools() {
                let Some(name) = self.names.name_of(&server.entry.name, &tool.name) else { continue };
                let description = tool.description.clone().unwrap_or_default();
                let mut schema = Value::Object(tool.input_schema.clone());
                if schema.get("type").is_none() {
                    schema["type"] = json!("object");
                }
                let spec = ToolSpec { name: name.to_owned(), description, input_schema: schema };
                all.push(Offered { spec, server: index, tool: tool.clone() });
            }
        }
        all
    }

    /// What each server's tool definitions cost, in tokens.
    pub fn context_costs(&self) -> Vec<(String, usize, usize)> {
        let all = self.all_tools();
        self.servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mine: Vec<&Offered> = all.iter().filter(|o| o.server == i).collect();
                (s.entry.name.clone(), mine.len(), mine.iter().map(|o| context::cost(&o.spec)).sum())
            })
            .collect()
    }

    /// The model's context window.
    pub fn window(&self) -> usize {
        self.settings.context_window.unwrap_or_else(|| context::window_of(&self.settings.model))
    }

    /// Whether the definitions are loaded on demand (they would take more than the share).
    pub fn deferred(&self) -> bool {
        let total: usize = self.all_tools().iter().map(|o| context::cost(&o.spec)).sum();
        total as f64 > self.settings.defer_share * self.window() as f64
    }

    fn offered(&self) -> Vec<ToolSpec> {
        let all = self.all_tools();
        let mut specs = if self.deferred() {
            let mut specs = context::meta_tools();
            specs.extend(all.into_iter().filter(|o| self.loaded.contains(&o.spec.name)).map(|o| o.spec));
            specs
        } else {
            all.into_iter().map(|o| o.spec).collect()
        };
        if !self.skills.is_empty() {
            specs.push(skills::spec(&self.skills));
        }
        specs
    }

    fn system_prompt(&self) -> String {
        let mut system = String::from(
            "You are an assistant with tools from MCP servers. Call a tool when it helps; a tool may be declined by the \
             person, and then you are told why. ",
        );
        system.push_str(&self.fence.rule());
        if self.deferred() {
            system.push_str(
                " Tool definitions are loaded on demand: call search_tools with what you want to do, then load_tools \
                 with the names you need; they can be called from the next turn on.",
            );
        }
        if !self.skills.is_empty() {
            system.push_str(&skills::prompt(&self.skills));
        }
        if let Some(extra) = &self.settings.instructions {
            system.push_str("\n\n");
            system.push_str(extra);
        }
        system
    }

    fn emit(&self, event: Event) {
        (self.on_event)(event);
    }

    /// Makes the conversation valid again after an interrupted run: tool calls left without
    /// results are answered as interrupted.
    pub fn repair(&mut self) {
        let Some(last) = self.history.last() else { return };
        if last.role != Role::Assistant {
            return;
        }
        let ids: Vec<String> = last
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        if ids.is_empty() {
            return;
        }
        let parts = ids
            .into_iter()
            .map(|id| Part::ToolResult { id, content: "The person interrupted this call.".into(), is_error: true })
            .collect();
        self.history.push(Message { role: Role::User, parts });
    }

    /// Lists again the tools of servers that said theirs changed, so that the model's next
    /// turn sees them; the names are given anew (and renames told).
    async fn refresh_tools(&mut self) {
        let mut changed = false;
        for server in &self.servers {
            match server.refresh_tools().await {
                Ok(true) => {
                    changed = true;
                    self.consent.set_server_tools(&server.entry.name, &server.tools());
                    self.emit(Event::Notice(format!("{}: its tools changed", server.entry.name)));
                }
                Ok(false) => {}
                Err(why) => self.emit(Event::Notice(format!("{}: {why}", server.entry.name))),
            }
        }
        if changed {
            let names = names_of(&self.servers);
            for notice in names.notices.iter().filter(|n| !self.names.notices.contains(n)) {
                self.emit(Event::Notice(format!("renamed: {notice}")));
            }
            self.names = names;
        }
    }

    /// Runs the loop on the person's `prompt`; the model's final text.
    pub async fn run(&mut self, prompt: &str) -> Result<String, HostError> {
        let question = traced::question(self.provider.name(), &self.settings.model);
        let answer = traced::within(question.as_ref(), self.run_steps(prompt)).await;
        let failure = match &answer {
            Ok(_) => None,
            Err(HostError::Provider(e)) => Some(traced::error_type(e)),
            Err(HostError::MaxSteps(..)) => Some("max_steps"),
        };
        traced::end_question(question, failure);
        answer
    }

    /// The loop itself.
    async fn run_steps(&mut self, prompt: &str) -> Result<String, HostError> {
        self.repair();
        self.history.push(Message::user(prompt));
        let mut last = String::new();
        for _step in 0..self.settings.max_steps {
            self.refresh_tools().await;
            let request = Request {
                model: self.settings.model.clone(),
                system: self.system_prompt(),
                messages: self.history.clone(),
                tools: self.offered(),
                max_tokens: self.settings.max_tokens,
            };
            let on_event = self.on_event.clone();
            let mut on_text = move |text: &str| on_event(Event::Text(text.to_owned()));
            let span = traced::model_request(self.provider.name(), &request);
            let turn = self.provider.turn(&request, &mut on_text).await;
            traced::end_model_request(span, &turn);
            let turn = turn.map_err(HostError::Provider)?;
            self.usage.input += turn.usage.input;
            self.usage.output += turn.usage.output;
            self.emit(Event::Usage(turn.usage));
            self.emit(Event::TurnEnd { text: turn.text.clone(), stop: format!("{:?}", turn.stop) });
            self.history.push(turn.message());
            last = turn.text.clone();
            if turn.calls.is_empty() {
                if turn.stop == Stop::MaxTokens {
                    self.emit(Event::Notice("the reply hit the token limit (--max-tokens)".into()));
                }
                return Ok(turn.text);
            }
            let mut prepared = Vec::new();
            for (id, name, arguments) in &turn.calls {
                prepared.push(self.prepare(id, name, arguments).await);
            }
            let runs = prepared.into_iter().map(|p| self.execute(p));
            let parts = futures_util::future::join_all(runs).await;
            self.history.push(Message { role: Role::User, parts });
        }
        Err(HostError::MaxSteps(self.settings.max_steps, last))
    }

    /// Resolves a call, answers the meta-tools, and asks for consent.
    async fn prepare(&mut self, id: &str, name: &str, arguments: &Value) -> Prepared {
        let answered = |content: String, is_error: bool| {
            Prepared::Answered(Part::ToolResult { id: id.to_owned(), content, is_error })
        };
        if name == SEARCH || name == LOAD {
            return answered(self.meta(name, arguments), false);
        }
        if name == LOAD_SKILL && !self.skills.is_empty() {
            let (text, is_error) = self.load_skill(arguments).await;
            return answered(text, is_error);
        }
        let Some(offered) = self.all_tools().into_iter().find(|o| o.spec.name == name) else {
            let known: Vec<String> = self.offered().into_iter().map(|s| s.name).collect();
            return answered(format!("There is no tool named {name}. The tools are: {}.", known.join(", ")), true);
        };
        if self.deferred() && !self.loaded.contains(name) {
            return answered(format!("{name} is not loaded: call load_tools with [\"{name}\"] first."), true);
        }
        let server = self.servers[offered.server].entry.name.clone();
        self.emit(Event::ToolCall {
            server: server.clone(),
            tool: offered.tool.name.clone(),
            arguments: arguments.clone(),
        });
        match self.consent.decide(&server, &offered.tool, arguments).await {
            Decision::Allow(why) => {
                self.emit(Event::Consent { server, tool: offered.tool.name.clone(), allowed: true, why });
                Prepared::Run {
                    id: id.to_owned(),
                    server: offered.server,
                    tool: Box::new(offered.tool),
                    arguments: arguments.clone(),
                }
            }
            Decision::Deny(reason) => {
                self.emit(Event::Consent {
                    server,
                    tool: offered.tool.name.clone(),
                    allowed: false,
                    why: reason.clone(),
                });
                answered(reason, true)
            }
        }
    }

    fn meta(&mut self, name: &str, arguments: &Value) -> String {
        let all: Vec<ToolSpec> = self.all_tools().into_iter().map(|o| o.spec).collect();
        if name == SEARCH {
            let query = arguments["query"].as_str().unwrap_or_default();
            let found = context::search(&all, query, 8);
            return context::search_result(&found).to_string();
        }
        let mut loaded = Vec::new();
        let mut unknown = Vec::new();
        for wanted in arguments["names"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if all.iter().any(|s| s.name == wanted) {
                self.loaded.insert(wanted.to_owned());
                loaded.push(wanted.to_owned());
            } else {
                unknown.push(wanted.to_owned());
            }
        }
        if !loaded.is_empty() {
            self.emit(Event::Notice(format!("loaded the definitions of {}", loaded.join(", "))));
        }
        json!({"loaded": loaded, "unknown": unknown}).to_string()
    }

    /// Runs an allowed call and renders its result, fenced.
    async fn execute(&self, prepared: Prepared) -> Part {
        let (id, index, tool, arguments) = match prepared {
            Prepared::Answered(part) => return part,
            Prepared::Run { id, server, tool, arguments } => (id, server, tool, arguments),
        };
        let server = &self.servers[index];
        let name = server.entry.name.clone();
        let outcome = self.call(server, &tool.name, arguments).await;
        let (text, is_error) = match outcome {
            Ok(result) => {
                let label = format!("{name}-{}", tool.name);
                let rendered = results::render(&result, self.settings.result_limit, &self.settings.spill_dir, &label);
                if let Some(path) = &rendered.saved {
                    self.emit(Event::Notice(format!(
                        "the result of {name}/{} was cut for the model; whole in {}",
                        tool.name,
                        path.display()
                    )));
                }
                (rendered.text, rendered.is_error)
            }
            Err(why) => (format!("The call failed: {why}"), true),
        };
        self.emit(Event::ToolResult { server: name.clone(), tool: tool.name.clone(), is_error, text: text.clone() });
        Part::ToolResult { id, content: self.fence.wrap("tool", &name, &tool.name, &text), is_error }
    }

    /// Calls the tool; a call that becomes a task is followed to its end, its statuses shown.
    async fn call(&self, server: &Server, tool: &str, arguments: Value) -> Result<CallToolResult, String> {
        let Some(client) = &server.client else { return Err(format!("{} is not connected", server.entry.name)) };
        let (events, name, tool_name) = (self.on_event.clone(), server.entry.name.clone(), tool.to_owned());
        let progress = move |p: mcp::types::utilities::ProgressParams| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let message = p.message.clone().unwrap_or_else(|| format!("{}{total}", p.progress));
            events(Event::Progress { server: name.clone(), tool: tool_name.clone(), message });
        };
        client.call_tool_with_progress(tool, arguments, progress).await.map_err(|e| {
            if e.is_closed() {
                server.fail(format!("the connection closed: {e}"));
            }
            e.to_string()
        })
    }
}
