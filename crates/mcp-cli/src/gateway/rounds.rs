//! Requests forwarded round after round: a 2026-07-28 upstream that needs input ends its
//! answer with `input_required`; the gateway asks its own client the same questions, under the
//! same keys, and sends the answers back with the upstream's `requestState`.
//!
//! A 2025-era client is asked at once, on its session, and the upstream retried in the same
//! request. A 2026-07-28 client gets `input_required` itself, and the upstream's state travels
//! inside the gateway's own sealed `requestState`: the gateway keeps nothing between rounds.

use mcp::proxy::ProxyContext as _;
use mcp::server::{RequestContext, ToolError};
use mcp::types::meta;
use serde_json::{json, Map, Value};

use super::upstream::Upstream;

/// Where the upstream's round travels in the gateway's sealed state.
const ROUND_KEY: &str = "io.mcp-rs/gateway-round";
/// The most rounds one request may take.
const MAX_ROUND_TRIPS: usize = 16;

/// The upstream request that `cx`'s retry completes, with the answers and the upstream's state;
/// `None` for a first request.
fn resume(cx: &RequestContext, method: &str, params: &Value) -> Option<Value> {
    let round = cx.input_response(ROUND_KEY).filter(|_| cx.has_request_state())?;
    if round.get("method").and_then(Value::as_str) != Some(method) {
        return None;
    }
    let answers = cx.input_responses();
    let responses: Map<String, Value> = round
        .get("keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|key| Some((key.to_owned(), answers.get(key)?.clone())))
        .collect();
    Some(retry(params.clone(), responses, round.get("state").cloned()))
}

/// The request sent again with the answers and the upstream's state.
fn retry(mut params: Value, responses: Map<String, Value>, state: Option<Value>) -> Value {
    if let Value::Object(p) = &mut params {
        p.insert("inputResponses".into(), Value::Object(responses));
        match state {
            Some(state) => p.insert("requestState".into(), state),
            None => p.remove("requestState"),
        };
    }
    params
}

fn input_required(answer: &Value) -> bool {
    answer.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// Sends `method` with `params` to `upstream` for `cx` and returns the upstream's final answer
/// (a tool call that became a task followed to its end), passing its questions on to `cx`'s
/// client in the form the client speaks.
pub async fn forward(
    upstream: &Upstream,
    cx: &RequestContext,
    method: &'static str,
    mut params: Value,
) -> Result<Value, ToolError> {
    if let Some(resumed) = resume(cx, method, &params) {
        params = resumed;
    }
    for _ in 0..MAX_ROUND_TRIPS {
        let mut sent = params.clone();
        let capabilities = client_capabilities(cx);
        // A 2026-07-28 client follows a task the upstream created itself; for a 2025-era
        // client the gateway follows it to its end.
        let follow_tasks = method == "tools/call" && !cx.is_modern();
        let answer = upstream
            .forward(cx, Some(upstream.parked()), move |client, progress| {
                Box::pin(async move {
                    if let Some(capabilities) = capabilities.filter(|_| client.description().modern) {
                        insert_meta(&mut sent, meta::CLIENT_CAPABILITIES, capabilities);
                    }
                    let progress = std::sync::Arc::new(progress);
                    let report = progress.clone();
                    let answer =
                        client.request_round(method, sent, move |p| drop(report.send_replace(Some(p)))).await?;
                    if !follow_tasks || input_required(&answer) {
                        return Ok(answer);
                    }
                    let result = client.finish_tool_call(answer, move |p| drop(progress.send_replace(Some(p)))).await?;
                    serde_json::to_value(result).map_err(|e| mcp::Error::from(std::io::Error::other(e)))
                })
            })
            .await?;
        if !input_required(&answer) {
            return Ok(without_upstream_identity(answer));
        }
        let requests = answer.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
        let keys: Vec<String> = requests.keys().cloned().collect();
        let questions = requests
            .into_iter()
            .map(|(key, request)| {
                let method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
                let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                (key, method, params)
            })
            .collect();
        let state = answer.get("requestState").cloned();
        match cx.ask_all(questions).await {
            Ok(answers) => params = retry(params, keys.into_iter().zip(answers).collect(), state),
            Err(e) if e.is_input_required() => {
                cx.keep_in_state(ROUND_KEY, json!({"method": method, "keys": keys, "state": state}));
                return Err(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(ToolError::new(format!("the upstream asked for input more than {MAX_ROUND_TRIPS} times")))
}

/// The upstream's `_meta` serverInfo is not passed on: to its clients the gateway is the server.
fn without_upstream_identity(mut answer: Value) -> Value {
    if let Some(Value::Object(m)) = answer.get_mut("_meta") {
        m.remove(meta::SERVER_INFO);
        if m.is_empty() {
            answer.as_object_mut().map(|a| a.remove("_meta"));
        }
    }
    answer
}

/// A 2026-07-28 client's capabilities, which go upstream with its request (to a 2026-07-28
/// upstream), so that the upstream asks only what the client can answer.
pub(super) fn client_capabilities(cx: &RequestContext) -> Option<Value> {
    cx.is_modern().then(|| serde_json::to_value(cx.client_capabilities()).ok()).flatten()
}

pub(super) fn insert_meta(params: &mut Value, key: &str, value: Value) {
    if let Value::Object(p) = params {
        if let Value::Object(m) = p.entry("_meta").or_insert_with(|| json!({})) {
            m.insert(key.into(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_carries_the_answers_and_the_state() {
        let mut answers = Map::new();
        answers.insert("k".into(), json!({"action": "accept"}));
        let params = retry(json!({"name": "t", "requestState": "old"}), answers.clone(), Some(json!("s2")));
        assert_eq!(params, json!({"name": "t", "inputResponses": {"k": {"action": "accept"}}, "requestState": "s2"}));
        let params = retry(json!({"name": "t", "requestState": "old"}), answers, None);
        assert!(params.get("requestState").is_none());
    }
}
