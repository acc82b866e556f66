//! Keeping the context small: what each server's tool definitions cost, and, past a threshold,
//! two meta-tools instead of every schema (`search_tools` finds tools by words, `load_tools`
//! adds their schemas for the turns that follow).

use serde_json::{json, Value};

use crate::provider::ToolSpec;

/// The meta-tool that searches the deferred tools.
pub const SEARCH: &str = "search_tools";
/// The meta-tool that loads deferred tools.
pub const LOAD: &str = "load_tools";

/// A rough token count of some text (about four characters a token).
pub fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// What a tool definition costs, in tokens.
pub fn cost(spec: &ToolSpec) -> usize {
    tokens(&spec.name) + tokens(&spec.description) + tokens(&spec.input_schema.to_string()) + 8
}

/// The context window of a model, as far as its name says (else 128k).
pub fn window_of(model: &str) -> usize {
    let m = model.to_ascii_lowercase();
    if m.contains("claude") {
        200_000
    } else if m.contains("gpt-4.1") || m.contains("gpt-5") {
        400_000
    } else if m.contains("gpt-4o") || m.contains("o1") || m.contains("o3") || m.contains("o4") {
        128_000
    } else if m.contains("smollm") {
        8_192
    } else {
        128_000
    }
}

/// The two meta-tools.
pub fn meta_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: SEARCH.into(),
            description: "Searches the tools available through the connected MCP servers, whose definitions are not loaded \
                          yet. Give words describing what you want to do; you get the matching tools' names and what they do. \
                          Then call load_tools with the names you need."
                .into(),
            input_schema: json!({"type": "object", "properties": {"query": {"type": "string", "description": "What the tool should do"}}, "required": ["query"]}),
        },
        ToolSpec {
            name: LOAD.into(),
            description: "Loads tools by name (as search_tools gave them) so they can be called from the next turn on.".into(),
            input_schema: json!({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}, "required": ["names"]}),
        },
    ]
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1).map(str::to_lowercase).collect()
}

/// The deferred tools that best match `query`: a word-overlap score over names and
/// descriptions, at most `limit`, best first.
pub fn search<'a>(specs: &'a [ToolSpec], query: &str, limit: usize) -> Vec<&'a ToolSpec> {
    let wanted = words(query);
    let mut scored: Vec<(usize, &ToolSpec)> = specs
        .iter()
        .map(|spec| {
            let name = words(&spec.name);
            let about = words(&spec.description);
            let score = wanted
                .iter()
                .map(|w| {
                    3 * name.iter().filter(|n| n.contains(w.as_str())).count()
                        + about.iter().filter(|a| *a == w).count()
                })
                .sum();
            (score, spec)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.name.cmp(&b.1.name)));
    scored.into_iter().take(limit).map(|(_, spec)| spec).collect()
}

/// What `search_tools` answers.
pub fn search_result(found: &[&ToolSpec]) -> Value {
    let tools: Vec<Value> = found
        .iter()
        .map(|s| json!({"name": s.name, "description": s.description.lines().next().unwrap_or_default()}))
        .collect();
    json!({"tools": tools})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec { name: name.into(), description: description.into(), input_schema: json!({"type": "object"}) }
    }

    #[test]
    fn search_finds_by_name_and_description() {
        let specs = vec![
            spec("paypedia__iban_check", "Validates IBANs and names the bank."),
            spec("files__read_file", "Reads a file."),
            spec("crm__search_customers", "Finds customers by name, email or phone."),
        ];
        let found = search(&specs, "check an IBAN", 5);
        assert_eq!(found[0].name, "paypedia__iban_check");
        assert_eq!(search(&specs, "customers by email", 5)[0].name, "crm__search_customers");
        assert!(search(&specs, "zzz", 5).is_empty());
        assert!(cost(&specs[0]) > 10);
    }
}
