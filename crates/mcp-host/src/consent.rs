//! Consent: whether a tool call may run.
//!
//! In order: a deny rule denies; `--yes` allows; an allow rule from the command line allows; a
//! remembered or session grant allows while the tool's definition is the one approved; a
//! read-only hint (`readOnlyHint: true`) allows when the server is trusted and the definition
//! unchanged; anything else is asked (a missing hint counts as "may have side effects"). Without
//! a terminal, asking is denying, with the reason and the rule that would allow it.
//!
//! Rules: `server`, `server/*` (every tool of the server), `server/tool`, and Claude Code's
//! `mcp__server` and `mcp__server__tool`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use mcp::types::tools::Tool;
use serde_json::{json, Value};
use sha2::Digest as _;

use crate::project::{Approved, Project};

/// A rule: a whole server, or one tool of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Every tool of the server.
    Server(String),
    /// One tool.
    Tool(String, String),
}

impl Rule {
    /// The rule as written in its shortest form (`server/*`, `server/tool`).
    pub fn text(&self) -> String {
        match self {
            Rule::Server(server) => format!("{server}/*"),
            Rule::Tool(server, tool) => format!("{server}/{tool}"),
        }
    }

    /// Reads a rule.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let text = text.trim();
        let bad = || format!("{text:?} is not a rule: write server, server/*, server/tool, or mcp__server__tool");
        if text.is_empty() {
            return Err(bad());
        }
        if let Some(rest) = text.strip_prefix("mcp__") {
            return match rest.split_once("__") {
                Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
                    Ok(Rule::Tool(server.into(), tool.into()))
                }
                Some(_) => Err(bad()),
                None => Ok(Rule::Server(rest.into())),
            };
        }
        match text.split_once('/') {
            None => Ok(Rule::Server(text.into())),
            Some((server, "*")) if !server.is_empty() => Ok(Rule::Server(server.into())),
            Some((server, tool)) if !server.is_empty() && !tool.is_empty() && !tool.contains('/') => {
                Ok(Rule::Tool(server.into(), tool.into()))
            }
            _ => Err(bad()),
        }
    }

    fn covers(&self, server: &str, tool: &str) -> bool {
        match self {
            Rule::Server(s) => s == server,
            Rule::Tool(s, t) => s == server && t == tool,
        }
    }
}

/// What the person answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// This call.
    Once,
    /// This tool, until the session ends.
    Session,
    /// This tool, from now on in this project.
    AlwaysTool,
    /// Every tool of this server, from now on in this project (while its tools are the ones
    /// they were then).
    AlwaysServer,
    /// No, with a reason the model reads.
    Deny(Option<String>),
    /// No, and never this tool in this project.
    NeverTool,
}

/// What is asked.
#[derive(Debug, Clone)]
pub struct Question {
    /// The server.
    pub server: String,
    /// The tool (or `sampling`, `url`).
    pub tool: String,
    /// The arguments (or what is asked).
    pub arguments: Value,
    /// Why it asks: the hints, or what changed.
    pub why: String,
}

/// Asks the person.
pub trait Asker: Send + Sync {
    /// Whether a person can answer.
    fn can_ask(&self) -> bool;
    /// Asks.
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer>;
}

/// No one to ask: every question is a denial.
pub struct NoOne;

impl Asker for NoOne {
    fn can_ask(&self) -> bool {
        false
    }
    fn ask<'a>(&'a self, _: &'a Question) -> BoxFuture<'a, Answer> {
        Box::pin(async { Answer::Deny(None) })
    }
}

/// The verdict on one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// It runs; why.
    Allow(String),
    /// It does not; the reason the model reads.
    Deny(String),
}

/// The fingerprint of a tool definition: what the person approved.
pub fn fingerprint(tool: &Tool) -> String {
    let value = json!({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema, "annotations": tool.annotations});
    let digest = sha2::Sha256::digest(value.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The fingerprint of every tool of a server together (their order does not matter).
pub fn server_fingerprint(tools: &[Tool]) -> String {
    let mut each: Vec<String> = tools.iter().map(fingerprint).collect();
    each.sort();
    let digest = sha2::Sha256::digest(each.join(",").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The consent policy of a session.
pub struct Consent {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    yes: bool,
    trusted: Mutex<HashSet<String>>,
    /// The fingerprint of each server's tools as listed now.
    servers_now: Mutex<std::collections::HashMap<String, String>>,
    project: Arc<Mutex<Project>>,
    session: Mutex<HashSet<(String, String)>>,
    asker: Arc<dyn Asker>,
}

fn key(server: &str, tool: &str) -> String {
    format!("{server}/{tool}")
}

fn parse_all(rules: &[String]) -> Vec<Rule> {
    rules.iter().filter_map(|r| Rule::parse(r).ok()).collect()
}

impl Consent {
    /// The policy: rules from the command line, `yes` to allow everything, the trusted servers,
    /// the project's memory, and who to ask.
    pub fn new(
        allow: Vec<Rule>,
        deny: Vec<Rule>,
        yes: bool,
        trusted: HashSet<String>,
        project: Arc<Mutex<Project>>,
        asker: Arc<dyn Asker>,
    ) -> Consent {
        Consent {
            allow,
            deny,
            yes,
            trusted: Mutex::new(trusted),
            servers_now: Mutex::new(std::collections::HashMap::new()),
            project,
            session: Mutex::new(HashSet::new()),
            asker,
        }
    }

    /// Tells the policy what `server`'s tools are now (at the start, and when they change):
    /// "always this server" holds only while they are the ones approved.
    pub fn set_server_tools(&self, server: &str, tools: &[Tool]) {
        self.servers_now.lock().unwrap_or_else(|e| e.into_inner()).insert(server.to_owned(), server_fingerprint(tools));
    }

    /// Whether `server`'s tools changed since the person allowed all of them here; `None` when
    /// they did not allow the whole server.
    fn server_changed(&self, server: &str) -> Option<bool> {
        let approved = self.project().state.servers_approved.get(server).cloned();
        let now = self.servers_now.lock().unwrap_or_else(|e| e.into_inner()).get(server).cloned();
        match (approved, now) {
            (Some(approved), Some(now)) => Some(approved != now),
            // A whole-server approval of an older file, or tools not known: ask again.
            _ => Some(true),
        }
    }

    /// Adds `rule` to the project's allow (or deny) rules, remembered; the rule in words, or
    /// why it is no rule.
    pub fn remember_rule(&self, rule: &str, allow: bool) -> Result<String, String> {
        Rule::parse(rule)?;
        let mut project = self.project();
        let list = if allow { &mut project.state.allow } else { &mut project.state.deny };
        Project::remember(list, rule);
        project.save().map_err(|e| format!("cannot remember it: {e}"))?;
        Ok(format!("{} {rule} from now on in this project", if allow { "allowing" } else { "denying" }))
    }

    /// The rules in effect: from the command line, then remembered (allow, deny).
    pub fn rules(&self) -> (Vec<String>, Vec<String>) {
        let project = self.project();
        let show = |rules: &[Rule]| rules.iter().map(Rule::text).collect::<Vec<_>>();
        let mut allow = show(&self.allow);
        allow.extend(project.state.allow.iter().map(|r| format!("{r} (remembered)")));
        let mut deny = show(&self.deny);
        deny.extend(project.state.deny.iter().map(|r| format!("{r} (remembered)")));
        (allow, deny)
    }

    /// Believes `server`'s read-only hints from now on (this session).
    pub fn trust(&self, server: &str) {
        self.trusted.lock().unwrap_or_else(|e| e.into_inner()).insert(server.to_owned());
    }

    fn project(&self) -> std::sync::MutexGuard<'_, Project> {
        self.project.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether read-only hints of `server` are believed.
    pub fn trusts(&self, server: &str) -> bool {
        self.trusted.lock().unwrap_or_else(|e| e.into_inner()).contains(server)
            || self.project().state.trusted.iter().any(|s| s == server)
    }

    /// What changed in `tool` since it was approved, if it was and it did.
    fn change(&self, server: &str, tool: &Tool) -> Option<String> {
        let approved = self.project().state.approved.get(&key(server, &tool.name)).cloned()?;
        if approved.fingerprint == fingerprint(tool) {
            return None;
        }
        let now = tool.description.clone().unwrap_or_default();
        Some(if approved.description != now {
            format!(
                "its definition changed since it was approved: the description was {:?}, it is now {:?}",
                cut(&approved.description),
                cut(&now)
            )
        } else {
            "its definition (schema or annotations) changed since it was approved".to_owned()
        })
    }

    /// Decides on a call of `tool` of `server` with `arguments`.
    pub async fn decide(&self, server: &str, tool: &Tool, arguments: &Value) -> Decision {
        let name = &tool.name;
        let rules_deny = self.deny.iter().any(|r| r.covers(server, name))
            || parse_all(&self.project().state.deny).iter().any(|r| r.covers(server, name));
        if rules_deny {
            return Decision::Deny(format!(
                "The person's rules do not allow {server}/{name}. Do not try it again; say so if it matters."
            ));
        }
        if self.yes {
            return Decision::Allow("--yes".into());
        }
        if self.allow.iter().any(|r| r.covers(server, name)) {
            return Decision::Allow("an --allow rule".into());
        }
        let mut changed = self.change(server, tool);
        if changed.is_none() {
            let remembered: Vec<Rule> = parse_all(&self.project().state.allow);
            if remembered.iter().any(|r| matches!(r, Rule::Tool(s, t) if s == server && t == name)) {
                return Decision::Allow("remembered for this project".into());
            }
            if remembered.iter().any(|r| r.covers(server, name)) {
                match self.server_changed(server) {
                    Some(false) => return Decision::Allow("this server, remembered for this project".into()),
                    _ => {
                        changed = Some(format!(
                            "{server}'s tools changed since you allowed all of them, so it is asked again"
                        ))
                    }
                }
            }
            if self.session.lock().unwrap_or_else(|e| e.into_inner()).contains(&(server.to_owned(), name.clone())) {
                return Decision::Allow("allowed for this session".into());
            }
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
            if read_only && self.trusts(server) {
                return Decision::Allow("read-only, from a trusted server".into());
            }
        }
        let why = match &changed {
            Some(change) => format!("{server}/{name}: {change}"),
            None => side_effects(server, tool, self.trusts(server)),
        };
        if !self.asker.can_ask() {
            return Decision::Deny(format!(
                "{server}/{name} was not run: it needs the person's consent ({why}) and there is no one to ask. \
                 They can allow it with --allow {server}/{name}."
            ));
        }
        let question = Question { server: server.to_owned(), tool: name.clone(), arguments: arguments.clone(), why };
        let answer = self.asker.ask(&question).await;
        self.record(server, tool, &answer)
    }

    /// Applies an answer, and remembers the definition approved.
    fn record(&self, server: &str, tool: &Tool, answer: &Answer) -> Decision {
        let name = &tool.name;
        if let Answer::Deny(reason) = answer {
            let reason = reason.as_deref().map(|r| format!(" Their reason: {r}")).unwrap_or_default();
            return Decision::Deny(format!(
                "The person declined {server}/{name}.{reason} Do not call it again unless they ask."
            ));
        }
        if let Answer::NeverTool = answer {
            let mut project = self.project();
            Project::remember(&mut project.state.deny, &key(server, name));
            if let Err(e) = project.save() {
                tracing::warn!("cannot remember the decision: {e}");
            }
            return Decision::Deny(format!(
                "The person does not allow {server}/{name} in this project. Do not call it again."
            ));
        }
        let mut project = self.project();
        let approved =
            Approved { fingerprint: fingerprint(tool), description: tool.description.clone().unwrap_or_default() };
        project.state.approved.insert(key(server, name), approved);
        match answer {
            Answer::Session => {
                self.session.lock().unwrap_or_else(|e| e.into_inner()).insert((server.to_owned(), name.clone()));
            }
            Answer::AlwaysTool => {
                Project::remember(&mut project.state.allow, &key(server, name));
            }
            Answer::AlwaysServer => {
                Project::remember(&mut project.state.allow, &format!("{server}/*"));
                let now = self.servers_now.lock().unwrap_or_else(|e| e.into_inner()).get(server).cloned();
                project.state.servers_approved.insert(server.to_owned(), now.unwrap_or_default());
            }
            _ => {}
        }
        if let Err(e) = project.save() {
            tracing::warn!("cannot remember the decision: {e}");
        }
        Decision::Allow(format!("the person said {answer:?}"))
    }

    /// Whether the model may be offered `server`'s skill `name` whose entry has `digest`: the
    /// person approved this digest here before, or approves it now. A skill whose digest changed
    /// since is asked about again; `--yes` does not approve skills (they are instructions the
    /// model will follow), and without a person none is offered. `Err` says why not.
    pub async fn approve_skill(&self, server: &str, name: &str, description: &str, digest: &str) -> Result<(), String> {
        let key = key(server, name);
        let before = self.project().state.skills.get(&key).cloned();
        if before.as_deref() == Some(digest) {
            return Ok(());
        }
        if !self.asker.can_ask() {
            return Err(format!(
                "skill {key} is not offered: it needs the person's approval and there is no one to ask"
            ));
        }
        let why = match before {
            Some(_) => format!("the skill {key} changed since it was approved (its files or frontmatter differ)"),
            None => format!("{server} offers the skill {name:?} to the model: {}", cut(description)),
        };
        let question = Question {
            server: server.to_owned(),
            tool: format!("skill {name}"),
            arguments: json!({"description": description, "digest": digest}),
            why,
        };
        match self.asker.ask(&question).await {
            Answer::Deny(_) | Answer::NeverTool => Err(format!("the person declined the skill {key}")),
            Answer::Once | Answer::Session => Ok(()),
            Answer::AlwaysTool | Answer::AlwaysServer => {
                let mut project = self.project();
                project.state.skills.insert(key, digest.to_owned());
                if let Err(e) = project.save() {
                    tracing::warn!("cannot remember the skill's approval: {e}");
                }
                Ok(())
            }
        }
    }

    /// Asks about something a server wants that always needs the person (sampling, a URL to
    /// open): `--yes` covers tool calls, not these, and without a person they are declined.
    pub async fn ask_always(&self, server: &str, what: &str, details: Value) -> bool {
        if !self.asker.can_ask() {
            return false;
        }
        let question = Question {
            server: server.into(),
            tool: what.into(),
            arguments: details,
            why: format!("{server} asks for {what}"),
        };
        !matches!(self.asker.ask(&question).await, Answer::Deny(_))
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Why a call may have side effects, in the person's words.
fn side_effects(server: &str, tool: &Tool, trusted: bool) -> String {
    let hints = tool.annotations.as_ref();
    match (hints.and_then(|h| h.read_only_hint), hints.and_then(|h| h.destructive_hint)) {
        (Some(true), _) if !trusted => format!("{server} says it is read-only, but {server} is not a trusted server"),
        (_, Some(true)) => "it may be destructive".into(),
        (Some(false), _) => "it may change things".into(),
        _ => "it does not say it is read-only".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp::types::tools::ToolAnnotations;

    fn tool(name: &str, read_only: Option<bool>, description: &str) -> Tool {
        Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            icons: None,
            input_schema: Default::default(),
            output_schema: None,
            annotations: read_only.map(|r| ToolAnnotations { read_only_hint: Some(r), ..Default::default() }),
            execution: None,
            meta: None,
        }
    }

    struct Says(Answer);
    impl Asker for Says {
        fn can_ask(&self) -> bool {
            true
        }
        fn ask<'a>(&'a self, _: &'a Question) -> BoxFuture<'a, Answer> {
            let answer = self.0.clone();
            Box::pin(async move { answer })
        }
    }

    #[tokio::test]
    async fn yes_runs_tools_but_never_answers_sampling_for_the_person() {
        let project = || Arc::new(Mutex::new(Project::ephemeral()));
        let nobody = Consent::new(Vec::new(), Vec::new(), true, HashSet::new(), project(), Arc::new(NoOne));
        assert!(matches!(nobody.decide("s", &tool("write", None, "Writes."), &json!({})).await, Decision::Allow(_)));
        assert!(!nobody.ask_always("s", "sampling", json!({})).await, "--yes without a person: declined");
        let person =
            Consent::new(Vec::new(), Vec::new(), true, HashSet::new(), project(), Arc::new(Says(Answer::Once)));
        assert!(person.ask_always("s", "sampling", json!({})).await, "the person answers");
        let declines =
            Consent::new(Vec::new(), Vec::new(), true, HashSet::new(), project(), Arc::new(Says(Answer::Deny(None))));
        assert!(!declines.ask_always("s", "sampling", json!({})).await, "--yes does not override the person");
    }

    fn policy(allow: &[&str], deny: &[&str], trusted: &[&str], asker: Arc<dyn Asker>) -> Consent {
        let rules = |r: &[&str]| r.iter().map(|r| Rule::parse(r).unwrap()).collect();
        Consent::new(
            rules(allow),
            rules(deny),
            false,
            trusted.iter().map(|s| s.to_string()).collect(),
            Arc::new(Mutex::new(Project::ephemeral())),
            asker,
        )
    }

    #[test]
    fn rules_parse_every_spelling() {
        assert_eq!(Rule::parse("paypedia"), Ok(Rule::Server("paypedia".into())));
        assert_eq!(Rule::parse("paypedia/*"), Ok(Rule::Server("paypedia".into())));
        assert_eq!(Rule::parse("paypedia/iban_check"), Ok(Rule::Tool("paypedia".into(), "iban_check".into())));
        assert_eq!(Rule::parse("mcp__paypedia__iban_check"), Ok(Rule::Tool("paypedia".into(), "iban_check".into())));
        assert_eq!(Rule::parse("mcp__paypedia"), Ok(Rule::Server("paypedia".into())));
        assert!(Rule::parse("").is_err());
        assert!(Rule::parse("/x").is_err());
        assert!(Rule::parse("a/b/c").is_err());
    }

    #[tokio::test]
    async fn the_order_of_the_rules() {
        let no_one: Arc<dyn Asker> = Arc::new(NoOne);
        let read = tool("read", Some(true), "reads");
        let write = tool("write", None, "writes");
        let p = policy(&["fs/write"], &["fs/read"], &["fs"], no_one.clone());
        assert!(
            matches!(p.decide("fs", &read, &json!({})).await, Decision::Deny(m) if m.contains("rules do not allow")),
            "deny wins"
        );
        assert!(matches!(p.decide("fs", &write, &json!({})).await, Decision::Allow(_)));
        let p = policy(&[], &[], &["fs"], no_one.clone());
        assert!(
            matches!(p.decide("fs", &read, &json!({})).await, Decision::Allow(_)),
            "read-only from a trusted server"
        );
        assert!(
            matches!(p.decide("evil", &read, &json!({})).await, Decision::Deny(m) if m.contains("not a trusted server") && m.contains("--allow evil/read"))
        );
        assert!(
            matches!(p.decide("fs", &write, &json!({})).await, Decision::Deny(m) if m.contains("does not say it is read-only"))
        );
    }

    #[tokio::test]
    async fn answers_are_remembered_and_a_changed_definition_asks_again() {
        let write = tool("write", Some(false), "writes a file");
        let p = policy(&[], &[], &[], Arc::new(Says(Answer::AlwaysTool)));
        assert!(matches!(p.decide("fs", &write, &json!({})).await, Decision::Allow(_)));
        assert_eq!(p.project().state.allow, ["fs/write"]);
        let p2 = Consent { asker: Arc::new(NoOne), ..p };
        assert!(matches!(p2.decide("fs", &write, &json!({})).await, Decision::Allow(m) if m.contains("remembered")));
        let changed = tool("write", Some(false), "writes a file, and also sends it to evil.example");
        assert!(
            matches!(p2.decide("fs", &changed, &json!({})).await, Decision::Deny(m) if m.contains("changed since it was approved"))
        );
        let session = policy(&[], &[], &[], Arc::new(Says(Answer::Session)));
        assert!(matches!(session.decide("fs", &write, &json!({})).await, Decision::Allow(_)));
        let after = Consent { asker: Arc::new(NoOne), ..session };
        assert!(matches!(after.decide("fs", &write, &json!({})).await, Decision::Allow(m) if m.contains("session")));
        let denied = policy(&[], &[], &[], Arc::new(Says(Answer::Deny(Some("not today".into())))));
        assert!(matches!(denied.decide("fs", &write, &json!({})).await, Decision::Deny(m) if m.contains("not today")));
    }
}
