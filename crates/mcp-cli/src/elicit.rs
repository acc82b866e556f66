//! Answering a server's elicitation: at a terminal the person fills the form (or opens the URL);
//! without one, a form is accepted with its defaults or declined.

use std::io::{BufRead, Write};

use mcp::types::elicitation::{ElicitAction, ElicitParams, ElicitResult, PrimitiveSchema};
use serde_json::{Map, Value};

fn result(action: ElicitAction, content: Option<Map<String, Value>>) -> ElicitResult {
    ElicitResult { result_type: None, action, content, meta: None }
}

/// Accepts a form with each field's default; declines when a required field has none.
pub fn accept_with_defaults(params: &ElicitParams) -> ElicitResult {
    let decline = result(ElicitAction::Decline, None);
    if params.is_url() {
        return decline;
    }
    let Some(schema) = &params.requested_schema else { return decline };
    let mut content = Map::new();
    for (name, field) in &schema.properties {
        if let Some(default) = field.get("default") {
            content.insert(name.clone(), default.clone());
        }
    }
    let required = schema.required.clone().unwrap_or_default();
    if required.iter().any(|r| !content.contains_key(r)) {
        return decline;
    }
    result(ElicitAction::Accept, Some(content))
}

/// What the person typed at a prompt.
enum Typed {
    Line(String),
    Decline,
    Cancel,
}

/// Asks the person at the terminal: `input` is what they type, `out` where the questions go
/// (stderr: stdout carries the command's result). End of input cancels.
pub fn ask(params: &ElicitParams, input: &mut impl BufRead, out: &mut impl Write) -> ElicitResult {
    let _ = writeln!(out, "\nThe server asks: {}", params.message);
    if params.is_url() {
        return ask_url(params, input, out);
    }
    let Some(schema) = &params.requested_schema else { return result(ElicitAction::Decline, None) };
    let _ = writeln!(out, "Fill in each field (Enter keeps the default); type :decline or :cancel at any prompt.");
    let required = schema.required.clone().unwrap_or_default();
    let mut content = Map::new();
    for (name, field) in &schema.properties {
        let field: PrimitiveSchema = serde_json::from_value(field.clone()).unwrap_or_default();
        match ask_field(name, &field, required.contains(name), input, out) {
            Answer::Value(Some(v)) => {
                content.insert(name.clone(), v);
            }
            Answer::Value(None) => {}
            Answer::Decline => return result(ElicitAction::Decline, None),
            Answer::Cancel => return result(ElicitAction::Cancel, None),
        }
    }
    let shown = Value::Object(content.clone());
    match prompt(&format!("Send {shown}? [Y]es, [n]o (decline), [c]ancel: "), input, out) {
        Typed::Line(l) if l.is_empty() || l.eq_ignore_ascii_case("y") || l.eq_ignore_ascii_case("yes") => {
            result(ElicitAction::Accept, Some(content))
        }
        Typed::Line(l) if l.eq_ignore_ascii_case("n") || l.eq_ignore_ascii_case("no") => {
            result(ElicitAction::Decline, None)
        }
        Typed::Decline => result(ElicitAction::Decline, None),
        _ => result(ElicitAction::Cancel, None),
    }
}

fn ask_url(params: &ElicitParams, input: &mut impl BufRead, out: &mut impl Write) -> ElicitResult {
    let url = params.url.as_deref().unwrap_or("(no URL given)");
    let _ = writeln!(out, "Open this page in your browser to continue:\n  {url}");
    match prompt("Press Enter once you are done there, d to decline, c to cancel: ", input, out) {
        Typed::Line(l) if l.is_empty() => result(ElicitAction::Accept, None),
        Typed::Line(l) if l.eq_ignore_ascii_case("d") => result(ElicitAction::Decline, None),
        Typed::Decline => result(ElicitAction::Decline, None),
        _ => result(ElicitAction::Cancel, None),
    }
}

fn prompt(question: &str, input: &mut impl BufRead, out: &mut impl Write) -> Typed {
    let _ = write!(out, "{question}");
    let _ = out.flush();
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => Typed::Cancel,
        Ok(_) => match line.trim() {
            ":decline" => Typed::Decline,
            ":cancel" => Typed::Cancel,
            other => Typed::Line(other.to_owned()),
        },
    }
}

enum Answer {
    Value(Option<Value>),
    Decline,
    Cancel,
}

/// The choices of an enum field, as (value, label).
fn choices(field: &PrimitiveSchema) -> Option<Vec<(String, String)>> {
    if let Some(options) = field.one_of.as_ref().or(field.items.as_ref().and_then(|i| i.any_of.as_ref())) {
        return Some(options.iter().map(|o| (o.value.clone(), o.title.clone())).collect());
    }
    let values = field.enum_values.as_ref().or(field.items.as_ref().and_then(|i| i.enum_values.as_ref()))?;
    let names = field.enum_names.clone().unwrap_or_default();
    Some(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), names.get(i).cloned().unwrap_or_else(|| v.clone())))
            .collect(),
    )
}

/// Asks one field until the answer fits it.
fn ask_field(
    name: &str,
    field: &PrimitiveSchema,
    required: bool,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Answer {
    let label = field.title.clone().unwrap_or_else(|| name.to_owned());
    let _ = writeln!(out, "\n{label}{}", field.description.as_ref().map(|d| format!(" — {d}")).unwrap_or_default());
    let options = choices(field);
    if let Some(options) = &options {
        for (i, (value, title)) in options.iter().enumerate() {
            let shown = if title == value { value.clone() } else { format!("{title} ({value})") };
            let _ = writeln!(out, "  {}) {shown}", i + 1);
        }
    }
    let question = format!(
        "{name} ({}{}){}: ",
        describe(field, options.is_some()),
        if required { ", required" } else { "" },
        field.default.as_ref().map(|d| format!(" [default {d}]")).unwrap_or_default()
    );
    for _ in 0..20 {
        let line = match prompt(&question, input, out) {
            Typed::Line(line) => line,
            Typed::Decline => return Answer::Decline,
            Typed::Cancel => return Answer::Cancel,
        };
        if line.is_empty() {
            if let Some(default) = &field.default {
                return Answer::Value(Some(default.clone()));
            }
            if !required {
                return Answer::Value(None);
            }
            let _ = writeln!(out, "  this field is required");
            continue;
        }
        match parse(field, options.as_deref(), &line) {
            Ok(value) => return Answer::Value(Some(value)),
            Err(why) => {
                let _ = writeln!(out, "  {why}");
            }
        }
    }
    Answer::Cancel
}

fn describe(field: &PrimitiveSchema, has_choices: bool) -> String {
    let multi = field.kind == "array";
    match (field.kind.as_str(), has_choices) {
        (_, true) if multi => "choose one or more by number, separated by commas".into(),
        (_, true) => "choose one by number".into(),
        ("boolean", _) => "yes or no".into(),
        ("integer" | "number", _) => {
            let range = match (field.minimum, field.maximum) {
                (Some(a), Some(b)) => format!(", {a} to {b}"),
                (Some(a), None) => format!(", at least {a}"),
                (None, Some(b)) => format!(", at most {b}"),
                (None, None) => String::new(),
            };
            format!("{}{range}", field.kind)
        }
        _ => field.format.clone().map_or("text".into(), |f| format!("text, {f}")),
    }
}

/// The value typed for `field`, or why it does not fit.
fn parse(field: &PrimitiveSchema, options: Option<&[(String, String)]>, line: &str) -> Result<Value, String> {
    if let Some(options) = options {
        let pick = |item: &str| -> Result<Value, String> {
            let item = item.trim();
            let chosen = item
                .parse::<usize>()
                .ok()
                .and_then(|n| options.get(n.wrapping_sub(1)))
                .or_else(|| options.iter().find(|(v, t)| v == item || t.eq_ignore_ascii_case(item)));
            chosen.map(|(v, _)| Value::String(v.clone())).ok_or_else(|| format!("{item:?} is not one of the choices"))
        };
        if field.kind != "array" {
            return pick(line);
        }
        let picked = line.split(',').map(pick).collect::<Result<Vec<_>, _>>()?;
        let n = picked.len() as u64;
        if field.min_items.is_some_and(|m| n < m) || field.max_items.is_some_and(|m| n > m) {
            return Err(format!(
                "choose between {} and {}",
                field.min_items.unwrap_or(0),
                field.max_items.unwrap_or(n)
            ));
        }
        return Ok(Value::Array(picked));
    }
    match field.kind.as_str() {
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer yes or no".into()),
        },
        "integer" | "number" => {
            let n: f64 = line.parse().map_err(|_| format!("{line:?} is not a number"))?;
            if field.kind == "integer" && n.fract() != 0.0 {
                return Err(format!("{line} is not a whole number"));
            }
            if field.minimum.is_some_and(|m| n < m) || field.maximum.is_some_and(|m| n > m) {
                return Err(format!("{line} is out of range"));
            }
            Ok(if field.kind == "integer" { Value::from(n as i64) } else { Value::from(n) })
        }
        _ => {
            let chars = line.chars().count() as u64;
            if field.min_length.is_some_and(|m| chars < m) {
                return Err(format!("at least {} characters", field.min_length.unwrap_or(0)));
            }
            if field.max_length.is_some_and(|m| chars > m) {
                return Err(format!("at most {} characters", field.max_length.unwrap_or(0)));
            }
            if field.format.as_deref() == Some("email") && !line.contains('@') {
                return Err(format!("{line:?} is not an email address"));
            }
            Ok(Value::String(line.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> ElicitParams {
        serde_json::from_value(json!({
            "message": "Who are you?",
            "requestedSchema": {"type": "object", "required": ["name", "age"], "properties": {
                "name": {"type": "string", "title": "Your name", "minLength": 2},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
                "subscribe": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}
            }}
        }))
        .unwrap()
    }

    fn answer(params: &ElicitParams, typed: &str) -> (ElicitResult, String) {
        let mut out = Vec::new();
        let result = ask(params, &mut typed.as_bytes(), &mut out);
        (result, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_form_is_filled_field_by_field_with_retries_and_defaults() {
        // Fields come in name order: age, color, name, subscribe, tags.
        let (r, shown) = answer(&form(), "old\n200\n42\n\nA\nAda\nyes\n1,3\n\n");
        assert_eq!(r.action, ElicitAction::Accept, "{shown}");
        let content = Value::Object(r.content.unwrap());
        assert_eq!(content, json!({"age": 42, "color": "green", "name": "Ada", "subscribe": true, "tags": ["a", "c"]}));
        assert!(shown.contains("is not a number") && shown.contains("out of range"), "{shown}");
        assert!(shown.contains("Your name") && shown.contains("1) red"), "{shown}");
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        assert_eq!(answer(&form(), "30\n:decline\n").0.action, ElicitAction::Decline);
        assert_eq!(answer(&form(), ":cancel\n").0.action, ElicitAction::Cancel);
        assert_eq!(answer(&form(), "30\n").0.action, ElicitAction::Cancel, "end of input");
        assert_eq!(answer(&form(), "30\n\nAda\nno\n\nn\n").0.action, ElicitAction::Decline, "no at the summary");
    }

    #[test]
    fn a_url_is_shown_and_accepted_when_done() {
        let url: ElicitParams = serde_json::from_value(
            json!({"mode": "url", "message": "Sign in", "url": "https://example.com/x", "elicitationId": "1"}),
        )
        .unwrap();
        let (r, shown) = answer(&url, "\n");
        assert_eq!(r.action, ElicitAction::Accept);
        assert!(shown.contains("https://example.com/x"));
        assert_eq!(answer(&url, "d\n").0.action, ElicitAction::Decline);
    }
}
