//! What the server lists, checked as a host and a model will use it: tool names, duplicates,
//! schemas, descriptions (poisoning), annotations against names, sizes, pagination that ends,
//! resources that read, and the round trip's latency.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use mcp::client::Client;
use serde_json::{json, Value};

use super::{rules, text, Level, Report};

/// Pages a listing may take before the doctor calls it endless.
const MAX_PAGES: usize = 500;
/// A tools listing past this many bytes (a token is about four) crowds a model's context.
const LISTING_BUDGET: usize = 100 * 1024;
/// One tool definition past this is a wall of text the model reads every turn.
const TOOL_BUDGET: usize = 8 * 1024;
/// A resource past this is too big to put in front of a model.
const RESOURCE_BUDGET: usize = 1024 * 1024;
/// Resources read at most.
const RESOURCES_READ: usize = 20;
/// Names longer than this are refused by model APIs (Anthropic, OpenAI, Gemini).
const MODEL_NAME_LIMIT: usize = 64;

/// Words in a tool's name that say it destroys something.
const DESTRUCTIVE: &[&str] = &[
    "delete",
    "remove",
    "rm",
    "drop",
    "destroy",
    "erase",
    "purge",
    "wipe",
    "truncate",
    "kill",
    "terminate",
    "reset",
    "overwrite",
    "revoke",
    "uninstall",
    "unlink",
    "clear",
];
/// Words in a tool's name that say it changes something.
const WRITES: &[&str] = &[
    "write", "create", "update", "set", "insert", "send", "post", "put", "move", "rename", "edit", "upload", "modify",
    "patch", "save", "publish", "deploy", "install", "push", "commit", "merge",
];

/// Lists tools, prompts, resources and templates and checks them; returns the tools (for the
/// pin file) when they could be listed.
pub async fn listings(client: &Client, report: &mut Report) -> Option<Vec<Value>> {
    let capabilities = client.description().capabilities;
    let mut tools = None;
    if capabilities.tools.is_some() {
        tools = page(client, "tools/list", "tools", report).await;
        if let Some(tools) = &tools {
            check_tools(tools, report);
        }
    }
    if capabilities.prompts.is_some() {
        if let Some(prompts) = page(client, "prompts/list", "prompts", report).await {
            check_named(&prompts, "name", "prompt", report);
            report.pass(format!("{} prompt(s) listed", prompts.len()));
        }
    }
    if capabilities.resources.is_some() {
        if let Some(resources) = page(client, "resources/list", "resources", report).await {
            check_named(&resources, "uri", "resource", report);
            read_resources(client, &resources, report).await;
        }
        if let Some(templates) = page(client, "resources/templates/list", "resourceTemplates", report).await {
            check_named(&templates, "uriTemplate", "resource template", report);
        }
    }
    tools
}

/// Every page of a listing, following `nextCursor` until it ends (or loops).
async fn page(client: &Client, method: &str, key: &str, report: &mut Report) -> Option<Vec<Value>> {
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({"cursor": c})).unwrap_or_else(|| json!({}));
        let result = match client.request(method, params).await {
            Ok(result) => result,
            Err(e) => {
                report.find(
                    &rules::CONNECT,
                    Level::Error,
                    Some(method.to_owned()),
                    format!("{method} failed: {e}"),
                    "a server that declares the capability must answer its listing",
                );
                return None;
            }
        };
        match result.get(key) {
            Some(Value::Array(page)) => items.extend(page.iter().cloned()),
            _ => {
                report.find(
                    &rules::CONNECT,
                    Level::Error,
                    Some(method.to_owned()),
                    format!("the answer to {method} has no {key} array"),
                    "answer with the result the spec's schema gives for the method",
                );
                return None;
            }
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            None | Some("") => return Some(items),
            Some(next) if !seen.insert(next.to_owned()) => {
                report.find(
                    &rules::PAGINATION,
                    Level::Error,
                    Some(method.to_owned()),
                    format!("{method} gave the cursor {next:?} twice: a client following it never ends"),
                    "hand out each cursor once and end the last page without nextCursor",
                );
                return Some(items);
            }
            Some(next) => cursor = Some(next.to_owned()),
        }
    }
    report.find(
        &rules::PAGINATION,
        Level::Error,
        Some(method.to_owned()),
        format!("{method} was still paging after {MAX_PAGES} pages"),
        "end the listing: the last page has no nextCursor",
    );
    Some(items)
}

fn check_tools(tools: &[Value], report: &mut Report) {
    check_named(tools, "name", "tool", report);
    let before = report.findings.len();
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let subject = format!("tool {name}");
        check_tool_name(name, &subject, report);
        check_description(tool, &subject, report);
        check_schema(tool, "inputSchema", &subject, report);
        if tool.get("outputSchema").is_some() {
            check_schema(tool, "outputSchema", &subject, report);
        }
        check_annotations(tool, name, &subject, report);
        let size = tool.to_string().len();
        if size > TOOL_BUDGET {
            report.find(
                &rules::OVERSIZED,
                Level::Warning,
                Some(subject.clone()),
                format!("its definition is {size} bytes (about {} tokens), sent to the model on every turn", size / 4),
                "shorten the description and move reference material into a resource or a prompt",
            );
        }
    }
    let size = Value::Array(tools.to_vec()).to_string().len();
    if size > LISTING_BUDGET {
        report.find(
            &rules::OVERSIZED,
            Level::Warning,
            Some("tools/list".into()),
            format!("the {} tools take {size} bytes (about {} tokens) of every prompt", tools.len(), size / 4),
            "offer fewer, broader tools, or split the server so hosts load only what a task needs",
        );
    }
    if report.findings.len() == before {
        report.pass(format!("{} tool(s): names, schemas, descriptions and annotations are sound", tools.len()));
    }
}

fn check_tool_name(name: &str, subject: &str, report: &mut Report) {
    let length = name.chars().count();
    let bad: Vec<char> =
        name.chars().filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))).collect();
    if name.is_empty() || length > 128 || !bad.is_empty() {
        let what = if name.is_empty() {
            "the name is empty".to_owned()
        } else if !bad.is_empty() {
            format!("the name {name:?} holds {:?}, outside [A-Za-z0-9_.-]", bad.iter().collect::<String>())
        } else {
            format!("the name is {length} characters; the spec allows 128")
        };
        report.find(
            &rules::TOOL_NAME,
            Level::Error,
            Some(subject.to_owned()),
            what,
            "name tools with 1 to 64 characters of letters, digits, _ - and . (hosts and model APIs refuse others)",
        );
    } else if length > MODEL_NAME_LIMIT {
        report.find(&rules::TOOL_NAME, Level::Warning, Some(subject.to_owned()), format!("the name is {length} characters; model APIs refuse function names over {MODEL_NAME_LIMIT}, so hosts must rename it"), "shorten it to at most 64 characters (hosts add their own server prefix too)");
    }
}

fn check_description(tool: &Value, subject: &str, report: &mut Report) {
    match tool.get("description").and_then(Value::as_str) {
        None | Some("") => report.find(
            &rules::MISSING_DESCRIPTION,
            Level::Warning,
            Some(subject.to_owned()),
            "the tool has no description".into(),
            "describe what it does, when to use it and what it returns: the model chooses tools by their descriptions",
        ),
        Some(_) => {}
    }
    let mut strings = Vec::new();
    for key in ["description", "title"] {
        if let Some(s) = tool.get(key).and_then(Value::as_str) {
            strings.push(s.to_owned());
        }
    }
    text::strings(&tool["inputSchema"], &mut strings);
    text::strings(&tool["outputSchema"], &mut strings);
    text::strings(&tool["annotations"], &mut strings);
    text_for_model(report, subject, &strings.join("\n"));
}

/// Poisoning checks on any text a model reads.
pub fn text_for_model(report: &mut Report, subject: &str, text: &str) {
    if let Some(phrase) = text::injection(text) {
        report.find(&rules::INJECTION, Level::Error, Some(subject.to_owned()), format!("it addresses the model with orders of its own ({phrase:?}): hosts fence or refuse such servers"), "describe what the tool does for the user; never tell the model to ignore instructions, keep secrets from the user, or read files it was not asked to");
    }
    if let Some(c) = text::hidden_character(text) {
        report.find(
            &rules::HIDDEN_TEXT,
            Level::Error,
            Some(subject.to_owned()),
            format!(
                "it holds the invisible character U+{:04X}: what the model reads differs from what a reviewer sees",
                c as u32
            ),
            "remove zero-width, direction-changing, tag and control characters from names, descriptions and schemas",
        );
    }
}

fn check_schema(tool: &Value, key: &str, subject: &str, report: &mut Report) {
    let rule = if key == "inputSchema" { &rules::INPUT_SCHEMA } else { &rules::OUTPUT_SCHEMA };
    let fix = "give a JSON Schema object with \"type\": \"object\" (draft 2020-12 unless $schema says otherwise), valid against its meta-schema";
    let schema = match tool.get(key) {
        Some(schema @ Value::Object(_)) => schema,
        Some(other) => {
            return report.find(
                rule,
                Level::Error,
                Some(subject.to_owned()),
                format!("{key} is {other}, not an object"),
                fix,
            )
        }
        None => {
            return report.find(
                rule,
                Level::Error,
                Some(subject.to_owned()),
                format!("{key} is missing (the spec requires it)"),
                fix,
            )
        }
    };
    if schema.get("type") != Some(&json!("object")) {
        report.find(
            rule,
            Level::Error,
            Some(subject.to_owned()),
            format!(
                "{key} has type {}, not \"object\"",
                schema.get("type").map(|t| t.to_string()).unwrap_or_else(|| "missing".into())
            ),
            fix,
        );
    }
    if let Err(e) = jsonschema::options().build(schema) {
        report.find(
            rule,
            Level::Error,
            Some(subject.to_owned()),
            format!("{key} is not a valid JSON Schema: {e}"),
            fix,
        );
        return;
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for required in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
        let name = required.as_str().unwrap_or_default();
        if !properties.is_some_and(|p| p.contains_key(name))
            && schema.get("additionalProperties") == Some(&json!(false))
        {
            report.find(
                rule,
                Level::Error,
                Some(subject.to_owned()),
                format!("{key} requires {name:?} but allows no such property: no input can be valid"),
                "list every required property under properties",
            );
        }
    }
}

fn check_annotations(tool: &Value, name: &str, subject: &str, report: &mut Report) {
    let annotations = &tool["annotations"];
    let read_only = annotations["readOnlyHint"] == json!(true);
    let destructive = annotations["destructiveHint"].as_bool();
    let words = words(name);
    let destroys = words.iter().find(|w| DESTRUCTIVE.contains(&w.as_str()));
    let writes = words.iter().find(|w| WRITES.contains(&w.as_str()));
    let fix = "make the annotations say what the tool does: readOnlyHint only for tools that change nothing, destructiveHint true for those that delete or overwrite (hosts skip the user's consent on read-only tools)";
    if let (true, Some(word)) = (read_only, destroys.or(writes)) {
        let level = if destroys.is_some() { Level::Error } else { Level::Warning };
        report.find(
            &rules::ANNOTATIONS,
            level,
            Some(subject.to_owned()),
            format!("marked readOnlyHint: true, yet its name says {word:?}"),
            fix,
        );
    } else if let (Some(false), Some(word)) = (destructive, destroys) {
        report.find(
            &rules::ANNOTATIONS,
            Level::Warning,
            Some(subject.to_owned()),
            format!("marked destructiveHint: false, yet its name says {word:?}"),
            fix,
        );
    }
    if read_only && destructive == Some(true) {
        report.find(
            &rules::ANNOTATIONS,
            Level::Warning,
            Some(subject.to_owned()),
            "marked both readOnlyHint: true and destructiveHint: true".into(),
            fix,
        );
    }
}

/// A name's words: split at `_ - .`, spaces and lower-to-upper case changes, lower-cased.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let split = matches!(c, '_' | '-' | '.' | ' ' | '/') || (c.is_uppercase() && previous_lower);
        if split && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Duplicates among `items`' `key`, and the text a model reads in them.
fn check_named(items: &[Value], key: &str, kind: &str, report: &mut Report) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for item in items {
        let id = item[key].as_str().unwrap_or_default();
        *counts.entry(id).or_default() += 1;
        if kind != "tool" {
            let mut strings = Vec::new();
            text::strings(item, &mut strings);
            text_for_model(report, &format!("{kind} {id}"), &strings.join("\n"));
        }
    }
    let mut twice: Vec<_> = counts.into_iter().filter(|(_, n)| *n > 1).collect();
    twice.sort();
    for (id, n) in twice {
        report.find(
            &rules::DUPLICATE_NAME,
            Level::Error,
            Some(format!("{kind} {id}")),
            format!("{n} {kind}s are listed as {id:?}"),
            "give each one its own name: a client keeps one of them and the others cannot be reached",
        );
    }
}

/// Calls the read-only tools that need no arguments and checks what they return.
pub async fn call_read_only(client: &Client, tools: &[Value], report: &mut Report) {
    let callable = tools.iter().filter(|t| {
        t["annotations"]["readOnlyHint"] == json!(true)
            && t["inputSchema"]["required"].as_array().is_none_or(|r| r.is_empty())
    });
    let mut called = 0;
    for tool in callable.take(RESOURCES_READ) {
        let name = tool["name"].as_str().unwrap_or_default();
        let subject = format!("tool {name}");
        let result = match client.request("tools/call", json!({"name": name, "arguments": {}})).await {
            Ok(result) => result,
            Err(e) => {
                report.find(
                    &rules::NOT_CHECKED,
                    Level::Note,
                    Some(subject),
                    format!("calling it with no arguments failed: {e}"),
                    "",
                );
                continue;
            }
        };
        called += 1;
        let size = result.to_string().len();
        if size > RESOURCE_BUDGET {
            report.find(
                &rules::OVERSIZED,
                Level::Warning,
                Some(subject.clone()),
                format!("its result is {} KiB, more than a model's context should take in one call", size / 1024),
                "return a summary and a resource link, or page the result (a cursor or limit argument)",
            );
        }
        let texts: Vec<&str> =
            result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
        text_for_model(report, &format!("{subject}'s result"), &texts.join("\n"));
        if let (Some(schema), false) = (tool.get("outputSchema"), result["isError"] == json!(true)) {
            structured(schema, &result, &subject, report);
        }
    }
    report.pass(format!("{called} read-only tool(s) called"));
}

/// A result of a tool with an output schema carries `structuredContent` that matches it.
fn structured(schema: &Value, result: &Value, subject: &str, report: &mut Report) {
    let fix = "return structuredContent that matches the outputSchema (and the same data as text for older clients)";
    let Some(content) = result.get("structuredContent") else {
        return report.find(
            &rules::OUTPUT_SCHEMA,
            Level::Error,
            Some(subject.to_owned()),
            "it declares an outputSchema but its result has no structuredContent".into(),
            fix,
        );
    };
    let Ok(validator) = jsonschema::options().build(schema) else { return };
    let first = validator.iter_errors(content).next().map(|e| format!("{e} at {}", e.instance_path()));
    if let Some(error) = first {
        report.find(
            &rules::OUTPUT_SCHEMA,
            Level::Error,
            Some(subject.to_owned()),
            format!("its structuredContent does not match its outputSchema: {error}"),
            fix,
        );
    }
}

async fn read_resources(client: &Client, resources: &[Value], report: &mut Report) {
    let mut read = 0;
    for resource in resources.iter().take(RESOURCES_READ) {
        let uri = resource["uri"].as_str().unwrap_or_default();
        match client.request("resources/read", json!({"uri": uri})).await {
            Ok(result) => {
                read += 1;
                let size: usize = result["contents"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["text"].as_str().or(c["blob"].as_str()).map_or(0, str::len))
                    .sum();
                if size > RESOURCE_BUDGET {
                    report.find(
                        &rules::OVERSIZED,
                        Level::Warning,
                        Some(format!("resource {uri}")),
                        format!("reading it returns {} KiB", size / 1024),
                        "split it, or let clients read it in parts (a template with a page or range argument)",
                    );
                }
            }
            Err(e) => report.find(
                &rules::RESOURCE_READ,
                Level::Error,
                Some(format!("resource {uri}")),
                format!("listed, but reading it fails: {e}"),
                "list only resources that can be read, or fix the read",
            ),
        }
    }
    report.pass(format!("{} resource(s) listed, {read} read", resources.len()));
}

/// The median of a few pings: about 40 ms is the signature of Nagle's algorithm meeting
/// delayed acknowledgements (or of output flushed on a timer).
pub async fn latency(client: &Client, report: &mut Report) {
    let mut times = Vec::new();
    for _ in 0..12 {
        let started = Instant::now();
        if client.ping().await.is_err() {
            return;
        }
        times.push(started.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    if median >= Duration::from_millis(30) {
        let nagle = (Duration::from_millis(35)..Duration::from_millis(50)).contains(&median);
        let message = format!(
            "a ping takes {} ms on this machine{}",
            median.as_millis(),
            if nagle { ", the signature of Nagle's algorithm meeting delayed ACKs" } else { "" }
        );
        report.find(&rules::LATENCY, Level::Warning, Some("ping".into()), message, "set TCP_NODELAY on the server's sockets, write each message in one write, and flush stdout after every message");
    } else {
        report.pass(format!("a ping takes {:.1} ms", median.as_secs_f64() * 1000.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("delete_everything"), ["delete", "everything"]);
        assert_eq!(words("deleteFile"), ["delete", "file"]);
        assert_eq!(words("files.remove-all"), ["files", "remove", "all"]);
        assert_eq!(words("getTinyImage"), ["get", "tiny", "image"]);
    }

    #[test]
    fn a_read_only_delete_is_an_error() {
        let mut report = Report::default();
        let tool = json!({"name": "delete_all", "annotations": {"readOnlyHint": true}});
        check_annotations(&tool, "delete_all", "tool delete_all", &mut report);
        assert_eq!(report.findings.len(), 1);
        assert_eq!(report.findings[0].level, Level::Error);
        let mut report = Report::default();
        let tool = json!({"name": "read_notes", "annotations": {"readOnlyHint": true}});
        check_annotations(&tool, "read_notes", "tool read_notes", &mut report);
        assert!(report.findings.is_empty());
    }

    #[test]
    fn schemas_are_checked() {
        let mut report = Report::default();
        check_schema(
            &json!({"inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}),
            "inputSchema",
            "t",
            &mut report,
        );
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        check_schema(&json!({"inputSchema": {"type": "array"}}), "inputSchema", "t", &mut report);
        check_schema(
            &json!({"inputSchema": {"type": "object", "properties": {"n": {"type": "integr"}}}}),
            "inputSchema",
            "t",
            &mut report,
        );
        check_schema(&json!({}), "inputSchema", "t", &mut report);
        assert_eq!(report.findings.len(), 3, "{:?}", report.findings);
    }
}
