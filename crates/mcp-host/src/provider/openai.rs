//! OpenAI Chat Completions (`POST /chat/completions`, streamed), which Ollama, llama.cpp's
//! server, vLLM and LM Studio also speak: tools as `functions`, calls as `tool_calls` with string
//! arguments, results as `tool` messages.

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::{
    parse_arguments, Endpoint, Message, OnText, Part, Provider, ProviderError, Request, Role, Stop, Turn, Usage,
};

const OFFICIAL: &str = "https://api.openai.com/v1";

/// The field that carries a reply's token limit. OpenAI's reasoning models (o1, o3, o4-mini,
/// gpt-5 and later) refuse `max_tokens` and want `max_completion_tokens`; servers that only know
/// the older field (some llama.cpp or Ollama builds) ignore or refuse the newer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    /// `max_completion_tokens` on OpenAI's own API and for reasoning models anywhere,
    /// `max_tokens` otherwise; and the other one, from then on, when a server refuses the one
    /// sent by name.
    #[default]
    Auto,
    /// Always `max_tokens`.
    MaxTokens,
    /// Always `max_completion_tokens`.
    MaxCompletionTokens,
}

impl std::str::FromStr for MaxTokensField {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(MaxTokensField::Auto),
            "max_tokens" => Ok(MaxTokensField::MaxTokens),
            "max_completion_tokens" => Ok(MaxTokensField::MaxCompletionTokens),
            other => Err(format!("{other:?}: use auto, max_tokens or max_completion_tokens")),
        }
    }
}

/// Whether `model` is one of OpenAI's reasoning models (`o1`, `o3-mini`, `o4-mini`, `gpt-5`,
/// `gpt-5.1-codex`, later `gpt-N`), a router's `openai/` prefix allowed.
pub fn is_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let bytes = name.as_bytes();
    if bytes.first() == Some(&b'o') && bytes.get(1).is_some_and(u8::is_ascii_digit) {
        return true;
    }
    let Some(rest) = name.strip_prefix("gpt-") else { return false };
    let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
    major.parse::<u32>().is_ok_and(|n| n >= 5)
}

/// An OpenAI-compatible Chat Completions API.
#[derive(Debug)]
pub struct OpenAi {
    endpoint: Endpoint,
    field: MaxTokensField,
    official: bool,
    /// Set once a server refused `max_tokens` by name (under `Auto`): send the other from then on.
    switched: std::sync::atomic::AtomicBool,
}

impl OpenAi {
    /// The API at `base_url` (default `https://api.openai.com/v1`) with `api_key` (none for local
    /// servers that take none).
    pub fn new(
        base_url: Option<&str>,
        api_key: Option<&str>,
        ca_files: &[std::path::PathBuf],
    ) -> Result<OpenAi, String> {
        let headers = api_key.map(|k| vec![("authorization", format!("Bearer {k}"))]).unwrap_or_default();
        let base = base_url.unwrap_or(OFFICIAL);
        Ok(OpenAi {
            endpoint: Endpoint::new(base, headers, ca_files)?,
            field: MaxTokensField::Auto,
            official: base.trim_end_matches('/') == OFFICIAL,
            switched: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Tells `on_wait` of each wait before a retry (see [`super::OnWait`]).
    pub fn on_wait(mut self, on_wait: super::OnWait) -> Self {
        self.endpoint.on_wait = Some(on_wait);
        self
    }

    /// Chooses the token-limit field (`--max-tokens-field`).
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.field = field;
        self
    }

    /// The field this request's token limit goes in.
    fn limit_field(&self, model: &str) -> &'static str {
        let completion = match self.field {
            MaxTokensField::MaxTokens => false,
            MaxTokensField::MaxCompletionTokens => true,
            MaxTokensField::Auto => {
                let preferred = self.official || is_reasoning_model(model);
                preferred != self.switched.load(std::sync::atomic::Ordering::Relaxed)
            }
        };
        if completion {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }
    }

    /// The request body, the token limit in `max_tokens`.
    pub fn body(request: &Request) -> Value {
        OpenAi::body_with(request, "max_tokens")
    }

    /// The request body, the token limit in `limit_field`.
    pub fn body_with(request: &Request, limit_field: &str) -> Value {
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        for m in &request.messages {
            messages.extend(encode(m));
        }
        let mut body = json!({
            "model": request.model,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": messages,
        });
        body[limit_field] = json!(request.max_tokens);
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
                .collect();
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = json!("auto");
        }
        body
    }
}

/// A message as one or more Chat Completions messages: tool results become `tool` messages.
fn encode(m: &Message) -> Vec<Value> {
    let text: String = m
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    match m.role {
        Role::Assistant => {
            let calls: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall { id, name, arguments } => Some(json!({
                        "id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()},
                    })),
                    _ => None,
                })
                .collect();
            let mut message =
                json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !calls.is_empty() {
                message["tool_calls"] = Value::Array(calls);
            }
            vec![message]
        }
        Role::User => {
            let mut out: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolResult { id, content, is_error } => {
                        let content = if *is_error {
                            format!("ERROR: the tool call failed.\n{content}")
                        } else {
                            content.clone()
                        };
                        Some(json!({"role": "tool", "tool_call_id": id, "content": content}))
                    }
                    _ => None,
                })
                .collect();
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
            out
        }
    }
}

#[derive(Default)]
struct Assembly {
    text: String,
    /// By the stream's `index`: id, name, arguments so far.
    calls: BTreeMap<u64, (String, String, String)>,
    stop: Option<Stop>,
    usage: Usage,
    /// Whether `data: [DONE]` arrived.
    done: bool,
}

impl Assembly {
    fn on(&mut self, chunk: &Value, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<(), ProviderError> {
        if let Some(error) = chunk.get("error") {
            return Err(ProviderError::Transport(
                error["message"].as_str().unwrap_or("an error in the stream").to_owned(),
            ));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage.input = usage["prompt_tokens"].as_u64().unwrap_or(self.usage.input);
            self.usage.output = usage["completion_tokens"].as_u64().unwrap_or(self.usage.output);
        }
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str() {
                self.text.push_str(text);
                on_text(text);
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = self.index_of(call);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = call["id"].as_str() {
                    entry.0 = id.to_owned();
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    entry.1.push_str(name);
                }
                match &call["function"]["arguments"] {
                    Value::String(piece) => entry.2.push_str(piece),
                    // Some compatible servers send the arguments as an object, whole.
                    arguments @ Value::Object(_) => entry.2 = arguments.to_string(),
                    _ => {}
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.stop = Some(match reason {
                    "stop" => Stop::EndTurn,
                    "tool_calls" | "function_call" => Stop::ToolUse,
                    "length" => Stop::MaxTokens,
                    other => Stop::Other(other.to_owned()),
                });
            }
        }
        Ok(())
    }

    /// Which call a `tool_calls` piece belongs to: its `index`; without one (Gemini's compatible
    /// API sends each call whole, unindexed) the call with the same id, a new call for a new
    /// id, else the last call.
    fn index_of(&self, call: &Value) -> u64 {
        if let Some(index) = call["index"].as_u64() {
            return index;
        }
        let next = self.calls.keys().next_back().map_or(0, |last| last + 1);
        match call["id"].as_str().filter(|id| !id.is_empty()) {
            Some(id) => self.calls.iter().find(|(_, c)| c.0 == id).map_or(next, |(index, _)| *index),
            None => next.saturating_sub(1),
        }
    }

    fn finish(self) -> Result<Turn, ProviderError> {
        let calls: Vec<(String, String, Value)> = self
            .calls
            .into_iter()
            .map(|(index, (id, name, arguments))| {
                let id = if id.is_empty() { format!("call_{index}") } else { id };
                (id, name, parse_arguments(&arguments))
            })
            .collect();
        // A server that ends with `[DONE]` but never says why: the calls say it.
        let inferred = self.done.then_some(if calls.is_empty() { Stop::EndTurn } else { Stop::ToolUse });
        let stop = self.stop.or(inferred).ok_or_else(|| {
            ProviderError::Transport("the stream ended without a finish_reason or [DONE]: it was cut off".into())
        })?;
        Ok(Turn { text: self.text, calls, stop, usage: self.usage })
    }
}

impl Provider for OpenAi {
    fn turn<'a>(&'a self, request: &'a Request, on_text: OnText<'a>) -> BoxFuture<'a, Result<Turn, ProviderError>> {
        Box::pin(async move {
            let field = self.limit_field(&request.model);
            match self.stream_turn(request, field, &mut *on_text).await {
                Err(ProviderError::BadRequest(why))
                    if self.field == MaxTokensField::Auto && refuses_field(&why, field) =>
                {
                    // The server named the field it refuses: the other one, from now on.
                    self.switched.fetch_xor(true, std::sync::atomic::Ordering::Relaxed);
                    tracing::info!("the provider refused {field}; sending the other token-limit field");
                    self.stream_turn(request, self.limit_field(&request.model), on_text).await
                }
                outcome => outcome,
            }
        })
    }

    fn name(&self) -> &str {
        "openai"
    }
}

impl OpenAi {
    async fn stream_turn(&self, request: &Request, field: &str, on_text: OnText<'_>) -> Result<Turn, ProviderError> {
        let body = OpenAi::body_with(request, field);
        let mut assembly = Assembly::default();
        self.endpoint
            .stream("/chat/completions", &body, |event| {
                if event.data.trim() == "[DONE]" {
                    assembly.done = true;
                    return Ok(());
                }
                let chunk: Value = serde_json::from_str(&event.data)
                    .map_err(|e| ProviderError::Transport(format!("a stream chunk is not JSON: {e}")))?;
                assembly.on(&chunk, on_text)
            })
            .await?;
        assembly.finish()
    }
}

/// Whether a 400's message refuses `field` by name: the first parameter it quotes is `field`
/// (OpenAI: "Unsupported parameter: 'max_tokens' is not supported with this model. Use
/// 'max_completion_tokens' instead.").
fn refuses_field(message: &str, field: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    let refusal = ["unsupported", "not supported", "unrecognized", "unknown"].iter().any(|w| lower.contains(w));
    let first_quoted = lower
        .split(['\'', '"', '`'])
        .enumerate()
        .find(|(i, part)| i % 2 == 1 && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !part.is_empty())
        .map(|(_, part)| part);
    refusal && first_quoted == Some(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(chunks: &[Value], done: bool) -> Result<Turn, ProviderError> {
        let mut assembly = Assembly::default();
        for chunk in chunks {
            assembly.on(chunk, &mut |_| {})?;
        }
        assembly.done = done;
        assembly.finish()
    }

    #[test]
    fn reasoning_models_are_told_apart() {
        for model in
            ["o1", "o1-mini", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5.1-codex", "openai/o3", "GPT-6"]
        {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in ["gpt-4o", "gpt-4.1-mini", "gpt-3.5-turbo", "llama3.2", "qwen2.5:7b", "omni", "mistral"] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }

    #[test]
    fn a_refusal_that_names_the_field_is_told_from_other_refusals() {
        let openai = "HTTP 400: Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
        assert!(refuses_field(openai, "max_tokens"));
        assert!(
            !refuses_field(openai, "max_completion_tokens"),
            "the other field is the remedy it names, not what it refuses"
        );
        assert!(refuses_field(
            "HTTP 400: unrecognized request argument supplied: 'max_completion_tokens'",
            "max_completion_tokens"
        ));
        assert!(!refuses_field("HTTP 400: messages: at least one message is required", "max_tokens"));
    }

    #[test]
    fn pieces_of_indexed_calls_are_joined() {
        let turn = assemble(
            &[
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "p__check", "arguments": "{\"ib"}}]}}]}),
                json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "x__echo", "arguments": "{}"}}]}}]}),
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "an\": \"DE\"}"}}]}}]}),
                json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            ],
            true,
        )
        .unwrap();
        assert_eq!(turn.calls.len(), 2);
        assert_eq!(turn.calls[0], ("a".into(), "p__check".into(), json!({"iban": "DE"})));
        assert_eq!(turn.calls[1].0, "b");
        assert_eq!(turn.stop, Stop::ToolUse);
    }

    #[test]
    fn unindexed_whole_calls_stay_apart_and_object_arguments_are_taken() {
        let turn = assemble(
            &[
                json!({"choices": [{"delta": {"tool_calls": [{"id": "a", "type": "function", "function": {"name": "one", "arguments": {"n": 1}}}]}}]}),
                json!({"choices": [{"delta": {"tool_calls": [{"id": "b", "type": "function", "function": {"name": "two", "arguments": "{\"n\": 2}"}}]}}]}),
                // Some servers say "stop" even when they call tools: the calls still run.
                json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
            ],
            true,
        )
        .unwrap();
        let names: Vec<&str> = turn.calls.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(names, ["one", "two"]);
        assert_eq!(turn.calls[0].2, json!({"n": 1}));
        assert_eq!(turn.calls[1].2, json!({"n": 2}));
    }

    #[test]
    fn done_without_a_finish_reason_is_an_end_but_a_cut_stream_is_an_error() {
        let text = json!({"choices": [{"delta": {"content": "hi"}}]});
        assert_eq!(assemble(std::slice::from_ref(&text), true).unwrap().stop, Stop::EndTurn);
        let call = json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "t", "arguments": "{}"}}]}}]});
        assert_eq!(assemble(&[call], true).unwrap().stop, Stop::ToolUse);
        let cut = assemble(&[text], false).expect_err("an error");
        assert!(cut.to_string().contains("cut off"), "{cut}");
    }

    #[test]
    fn a_usage_only_chunk_with_no_choices_counts() {
        let turn = assemble(
            &[
                json!({"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]}),
                json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}}),
            ],
            true,
        )
        .unwrap();
        assert_eq!((turn.usage.input, turn.usage.output), (12, 3));
    }
}
