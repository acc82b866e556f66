//! The Anthropic Messages API (`POST /v1/messages`, streamed): tools as `tools[].input_schema`,
//! calls as `tool_use` blocks, results as `tool_result` blocks opening the next user message.

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::{
    parse_arguments, Endpoint, Message, OnText, Part, Provider, ProviderError, Request, Role, Stop, Turn, Usage,
};

/// The Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct Anthropic {
    endpoint: Endpoint,
}

impl Anthropic {
    /// The API at `base_url` (default `https://api.anthropic.com`) with `api_key`.
    pub fn new(base_url: Option<&str>, api_key: &str, ca_files: &[std::path::PathBuf]) -> Result<Anthropic, String> {
        let headers = vec![("x-api-key", api_key.to_owned()), ("anthropic-version", "2023-06-01".to_owned())];
        Ok(Anthropic { endpoint: Endpoint::new(base_url.unwrap_or("https://api.anthropic.com"), headers, ca_files)? })
    }

    /// Tells `on_wait` of each wait before a retry (see [`super::OnWait`]).
    pub fn on_wait(mut self, on_wait: super::OnWait) -> Self {
        self.endpoint.on_wait = Some(on_wait);
        self
    }

    /// How often and how long to retry.
    pub fn retry(mut self, retry: super::Retry) -> Self {
        self.endpoint.retry = retry;
        self
    }

    /// The request body.
    pub fn body(request: &Request) -> Value {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "system": request.system,
            "stream": true,
            "messages": request.messages.iter().map(message).collect::<Vec<_>>(),
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        body
    }
}

fn message(m: &Message) -> Value {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    // Tool results come first in their message, as the API requires.
    let mut parts: Vec<&Part> = m.parts.iter().collect();
    parts.sort_by_key(|p| !matches!(p, Part::ToolResult { .. }));
    let content: Vec<Value> = parts
        .into_iter()
        .map(|p| match p {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::ToolCall { id, name, arguments } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": arguments})
            }
            Part::ToolResult { id, content, is_error } => json!({
                "type": "tool_result", "tool_use_id": id, "is_error": is_error,
                "content": [{"type": "text", "text": content}],
            }),
        })
        .collect();
    json!({"role": role, "content": content})
}

/// What the stream has said so far.
#[derive(Default)]
struct Assembly {
    text: String,
    /// Tool calls by content-block index: id, name, partial JSON, and the `input` the block
    /// opened with (`{}` from the API itself; whole from proxies that send no deltas).
    calls: BTreeMap<u64, (String, String, String, Value)>,
    stop: Option<Stop>,
    usage: Usage,
    /// The stream said `error` (after an HTTP 200).
    failed_in_stream: bool,
}

fn stop_of(reason: &str) -> Stop {
    match reason {
        "end_turn" | "stop_sequence" => Stop::EndTurn,
        "tool_use" => Stop::ToolUse,
        "max_tokens" => Stop::MaxTokens,
        other => Stop::Other(other.to_owned()),
    }
}

impl Assembly {
    fn on(&mut self, kind: &str, data: &Value, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<(), ProviderError> {
        match kind {
            "message_start" => {
                self.usage.input = data["message"]["usage"]["input_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" if data["content_block"]["type"] == "tool_use" => {
                let block = &data["content_block"];
                let id = block["id"].as_str().unwrap_or_default().to_owned();
                let name = block["name"].as_str().unwrap_or_default().to_owned();
                let input = block["input"].clone();
                self.calls.insert(data["index"].as_u64().unwrap_or(0), (id, name, String::new(), input));
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let text = delta["text"].as_str().unwrap_or_default();
                        self.text.push_str(text);
                        on_text(text);
                    }
                    Some("input_json_delta") => {
                        if let Some(call) = self.calls.get_mut(&data["index"].as_u64().unwrap_or(0)) {
                            call.2.push_str(delta["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    self.stop = Some(stop_of(reason));
                }
                self.usage.output = data["usage"]["output_tokens"].as_u64().unwrap_or(self.usage.output);
            }
            "error" => {
                self.failed_in_stream = true;
                let kind = data["error"]["type"].as_str().unwrap_or_default();
                let message = data["error"]["message"].as_str().unwrap_or("an error in the stream").to_owned();
                return Err(match kind {
                    "overloaded_error" => ProviderError::Overloaded(message),
                    "rate_limit_error" => ProviderError::RateLimited(message),
                    _ => ProviderError::Transport(message),
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(self) -> Result<Turn, ProviderError> {
        let calls: Vec<(String, String, Value)> = self
            .calls
            .into_values()
            .map(|(id, name, json, opened_with)| {
                let arguments = match opened_with {
                    Value::Object(whole) if json.trim().is_empty() && !whole.is_empty() => Value::Object(whole),
                    _ => parse_arguments(&json),
                };
                (id, name, arguments)
            })
            .collect();
        let stop =
            self.stop.ok_or_else(|| ProviderError::Transport("the stream ended before the message did".into()))?;
        Ok(Turn { text: self.text, calls, stop, usage: self.usage })
    }
}

impl Provider for Anthropic {
    fn turn<'a>(&'a self, request: &'a Request, on_text: OnText<'a>) -> BoxFuture<'a, Result<Turn, ProviderError>> {
        Box::pin(async move {
            let body = Anthropic::body(request);
            let retry = self.endpoint.retry;
            let mut wait = retry.base;
            let mut attempt = 0;
            loop {
                let mut assembly = Assembly::default();
                let outcome = self
                    .endpoint
                    .stream("/v1/messages", &body, |event| {
                        let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
                        let kind = event.event.as_deref().or(data["type"].as_str()).unwrap_or_default().to_owned();
                        assembly.on(&kind, &data, on_text)
                    })
                    .await;
                // An overload or rate limit said inside a stream that had begun (HTTP 200): the
                // turn is asked again, as for one said with an HTTP status.
                let mid_stream = assembly.failed_in_stream;
                match outcome {
                    Err(e @ (ProviderError::Overloaded(_) | ProviderError::RateLimited(_)))
                        if mid_stream && attempt < retry.attempts =>
                    {
                        self.endpoint.pause(&e, wait).await;
                        wait = (wait * 2).min(retry.max_wait);
                        attempt += 1;
                    }
                    Err(e) => return Err(e),
                    Ok(()) => return assembly.finish(),
                }
            }
        })
    }

    fn name(&self) -> &str {
        "anthropic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(events: &[(&str, Value)]) -> Turn {
        let mut assembly = Assembly::default();
        for (kind, data) in events {
            assembly.on(kind, data, &mut |_| {}).unwrap();
        }
        assembly.finish().unwrap()
    }

    #[test]
    fn input_comes_from_the_deltas_or_whole_from_the_block() {
        let turn = assemble(&[
            (
                "content_block_start",
                json!({"index": 0, "content_block": {"type": "tool_use", "id": "a", "name": "p__check", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"iban\": "}}),
            ),
            (
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "input_json_delta", "partial_json": "\"DE\"}"}}),
            ),
            (
                "content_block_start",
                json!({"index": 1, "content_block": {"type": "tool_use", "id": "b", "name": "x__sum", "input": {"a": 1}}}),
            ),
            ("message_delta", json!({"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})),
        ]);
        assert_eq!(turn.calls[0], ("a".into(), "p__check".into(), json!({"iban": "DE"})));
        assert_eq!(turn.calls[1], ("b".into(), "x__sum".into(), json!({"a": 1})));
        assert_eq!(turn.stop, Stop::ToolUse);
    }
}
