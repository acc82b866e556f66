//! Every problem `mcp doctor` can report, with a stable id (what CI filters on and SARIF names
//! as `ruleId`) and the reason it matters.

/// A kind of problem.
#[derive(Debug)]
pub struct Rule {
    /// Stable id, kebab-case.
    pub id: &'static str,
    /// One line: what the rule checks.
    pub summary: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal: $summary:literal;)*) => {
        $(#[doc = $summary] pub static $name: Rule = Rule { id: $id, summary: $summary };)*
        /// All of them, in the order of the documentation.
        pub static ALL: &[&Rule] = &[$(&$name),*];
    };
}

rules! {
    CONNECT = "connect": "The server starts (or its URL answers) and completes an MCP handshake.";
    STDOUT_NOISE = "stdout-noise": "A stdio server writes only JSON-RPC messages on stdout, one per line.";
    NEGOTIATION = "era-negotiation": "A client learns the server's protocol era at once: no probe is left unanswered.";
    SLOW_START = "slow-start": "A stdio server answers its first request soon after it starts.";
    HANDSHAKE = "handshake": "The server accepts the protocol revisions it claims and answers with real ones.";
    TOOL_NAME = "tool-name": "Tool names are 1-128 characters of [A-Za-z0-9_.-] (the spec), at most 64 (model APIs).";
    DUPLICATE_NAME = "duplicate-name": "Tool and prompt names, resource URIs and templates are unique.";
    MISSING_DESCRIPTION = "missing-description": "Every tool has a description (the model chooses tools by it).";
    INPUT_SCHEMA = "input-schema": "A tool's inputSchema is a valid JSON Schema of type object.";
    OUTPUT_SCHEMA = "output-schema": "A tool's outputSchema, when present, is a valid JSON Schema of type object.";
    INJECTION = "description-injection": "Descriptions and instructions do not address the model with instructions of their own.";
    HIDDEN_TEXT = "hidden-characters": "Text shown to the model holds no invisible or direction-changing characters.";
    ANNOTATIONS = "annotation-contradiction": "A tool's annotations agree with what its name says it does.";
    OVERSIZED = "oversized": "Listings and results fit in a model's context.";
    PAGINATION = "pagination-loop": "Paginated listings end: no cursor comes back twice.";
    RESOURCE_READ = "resource-read": "Every listed resource can be read.";
    HTTP_ORIGIN = "http-origin": "An HTTP server refuses requests from a foreign Origin (DNS rebinding).";
    HTTP_HOST = "http-host": "A server on loopback refuses a foreign Host header (DNS rebinding).";
    HTTP_SESSION = "http-unknown-session": "An unknown Mcp-Session-Id gets 404, so clients start a new session.";
    HTTP_CHALLENGE = "http-401-challenge": "A 401 carries WWW-Authenticate naming the protected-resource metadata.";
    PRM = "protected-resource-metadata": "The protected-resource metadata names this URL and an authorization server.";
    TLS = "tls": "The server's TLS certificate is valid for its name and trusted.";
    LATENCY = "latency": "A round trip takes no more than the work it does (no Nagle-like 40 ms stalls).";
    PIN = "pin": "The tools' definitions match the pin file (no description or schema changed unseen).";
    NOT_CHECKED = "not-checked": "A check that could not run, and why.";
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_unique_and_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for rule in super::ALL {
            assert!(seen.insert(rule.id), "{} twice", rule.id);
            assert!(rule.id.chars().all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit()), "{}", rule.id);
        }
    }
}
