//! A scripted provider for tests: a real HTTP server on loopback that answers each request with
//! the next turn of a script, in the Anthropic or OpenAI streaming format, and keeps every request
//! body it received. The host's own HTTP and SSE code runs against it unchanged.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

/// Which API to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /chat/completions`.
    OpenAi,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// A turn: its text (`{last_result}` is replaced by the last tool result the request
    /// carries), then tool calls (name, arguments).
    Turn(String, Vec<(String, Value)>),
    /// An HTTP error: status, body, `Retry-After` seconds.
    Fail(u16, String, Option<u32>),
    /// A stream that begins (HTTP 200, `message_start`) and then says `error` with this type
    /// (`overloaded_error`, ...), as Anthropic's API does when it is overloaded mid-answer.
    FailInStream(String),
}

impl Step {
    /// A turn of text only.
    pub fn say(text: &str) -> Step {
        Step::Turn(text.into(), Vec::new())
    }

    /// A turn calling one tool.
    pub fn call(name: &str, arguments: Value) -> Step {
        Step::Turn(String::new(), vec![(name.into(), arguments)])
    }
}

/// The running provider.
pub struct ScriptedProvider {
    /// Its base URL (for `--base-url`).
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl ScriptedProvider {
    /// Starts it with `steps`; after the last, every request gets "(end of script)".
    pub async fn start(flavor: Flavor, steps: Vec<Step>) -> ScriptedProvider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let url = match flavor {
            Flavor::Anthropic => base.clone(),
            Flavor::OpenAi => format!("{base}/v1"),
        };
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(steps)));
        let seen = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let (seen, script) = (seen.clone(), script.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let (seen, script) = (seen.clone(), script.clone());
                        async move { Ok::<_, Infallible>(answer(flavor, request, seen, script).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        ScriptedProvider { url, requests }
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

async fn answer(
    flavor: Flavor,
    request: hyper::Request<hyper::body::Incoming>,
    seen: Arc<Mutex<Vec<Value>>>,
    script: Arc<Mutex<VecDeque<Step>>>,
) -> hyper::Response<Full<Bytes>> {
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push(body.clone());
    let number = seen.lock().unwrap().len();
    let step = script.lock().unwrap().pop_front().unwrap_or_else(|| Step::say("(end of script)"));
    match step {
        Step::Fail(status, text, retry_after) => {
            let mut response = hyper::Response::new(Full::new(Bytes::from(text)));
            *response.status_mut() =
                hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
            if let Some(secs) = retry_after {
                response.headers_mut().insert("retry-after", secs.into());
            }
            response
        }
        Step::FailInStream(kind) => {
            let stream = sse(
                Some("message_start"),
                &json!({"type": "message_start", "message": {"id": format!("msg_{number}"), "type": "message", "role": "assistant", "content": [], "model": "scripted", "stop_reason": null, "usage": {"input_tokens": 1, "output_tokens": 0}}}),
            ) + &sse(
                Some("error"),
                &json!({"type": "error", "error": {"type": kind, "message": "Overloaded"}}),
            );
            let mut response = hyper::Response::new(Full::new(Bytes::from(stream)));
            response.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("text/event-stream"));
            response
        }
        Step::Turn(text, calls) => {
            let text = text.replace("{last_result}", &last_result(flavor, &body));
            let stream = match flavor {
                Flavor::Anthropic => anthropic_stream(number, &text, &calls),
                Flavor::OpenAi => openai_stream(number, &text, &calls),
            };
            let mut response = hyper::Response::new(Full::new(Bytes::from(stream)));
            response.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("text/event-stream"));
            response
        }
    }
}

/// The last tool result a request carries, as text.
fn last_result(flavor: Flavor, body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for message in messages.iter().rev() {
        match flavor {
            Flavor::Anthropic => {
                for block in message["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        let texts: Vec<&str> = block["content"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|c| c["text"].as_str())
                            .collect();
                        return texts.join("\n");
                    }
                }
            }
            Flavor::OpenAi if message["role"] == "tool" => {
                return message["content"].as_str().unwrap_or_default().to_owned()
            }
            Flavor::OpenAi => {}
        }
    }
    String::new()
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// Splits text in two, so deltas are really assembled.
fn halves(text: &str) -> (&str, &str) {
    let mid = text.char_indices().nth(text.chars().count() / 2).map_or(text.len(), |(i, _)| i);
    text.split_at(mid)
}

fn anthropic_stream(number: usize, text: &str, calls: &[(String, Value)]) -> String {
    let mut out = sse(
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": format!("msg_{number}"), "type": "message", "role": "assistant", "content": [], "model": "scripted", "stop_reason": null, "usage": {"input_tokens": 100 + number, "output_tokens": 0}}}),
    );
    let mut index = 0;
    if !text.is_empty() {
        out += &sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        );
        let (a, b) = halves(text);
        for piece in [a, b] {
            out += &sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        out += &sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for (i, (name, arguments)) in calls.iter().enumerate() {
        let id = format!("toolu_{number}_{i}");
        out += &sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        let json_text = arguments.to_string();
        let (a, b) = halves(&json_text);
        for piece in [a, b] {
            out += &sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        out += &sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    out += &sse(Some("ping"), &json!({"type": "ping"}));
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    out += &sse(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 20}}),
    );
    out += &sse(Some("message_stop"), &json!({"type": "message_stop"}));
    out
}

fn openai_stream(number: usize, text: &str, calls: &[(String, Value)]) -> String {
    let chunk = |delta: Value, finish: Value| json!({"id": format!("chatcmpl-{number}"), "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut out = sse(None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null));
    if !text.is_empty() {
        let (a, b) = halves(text);
        for piece in [a, b] {
            out += &sse(None, &chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (i, (name, arguments)) in calls.iter().enumerate() {
        let head = json!({"tool_calls": [{"index": i, "id": format!("call_{number}_{i}"), "type": "function", "function": {"name": name, "arguments": ""}}]});
        out += &sse(None, &chunk(head, Value::Null));
        let json_text = arguments.to_string();
        let (a, b) = halves(&json_text);
        for piece in [a, b] {
            out += &sse(
                None,
                &chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}), Value::Null),
            );
        }
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    out += &sse(None, &chunk(json!({}), json!(finish)));
    out += &sse(
        None,
        &json!({"id": format!("chatcmpl-{number}"), "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 100 + number, "completion_tokens": 20}}),
    );
    out += "data: [DONE]\n\n";
    out
}
