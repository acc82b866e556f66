//! The HTTP side of providers: a POST whose answer streams as server-sent events, with the
//! retries that are right (rate limits, overload) and errors in words. The key is sent, never
//! shown: errors carry the provider's message, not the request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use mcp::client::sse::{Event, Parser};
use mcp::fetch::Fetcher;
use serde_json::Value;

use super::ProviderError;

/// How often and how long to retry.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts after the first.
    pub attempts: u32,
    /// The first wait when the provider names none (doubled each time).
    pub base: Duration,
    /// The longest wait.
    pub max_wait: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry { attempts: 3, base: Duration::from_secs(1), max_wait: Duration::from_secs(30) }
    }
}

/// Told of a wait before a retry, once a second until it ends: why (the provider's words) and
/// how long is left (zero when the retry goes out).
pub type OnWait = Arc<dyn Fn(&str, Duration) + Send + Sync>;

/// Where a provider is, and how to authenticate there.
#[derive(Clone)]
pub struct Endpoint {
    /// The API's base URL (`https://api.anthropic.com`, `http://127.0.0.1:11434/v1`...).
    pub base_url: String,
    /// Headers sent with every request (the key among them).
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) fetcher: Fetcher,
    /// Retries.
    pub retry: Retry,
    /// Told of each wait before a retry (a terminal shows a countdown).
    pub on_wait: Option<OnWait>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint at `base_url` sending `headers`: https, or plain http to loopback, or to
    /// any host when no key is sent (a model server on the local network); a key never
    /// crosses a network in clear.
    pub fn new(
        base_url: &str,
        headers: Vec<(&'static str, String)>,
        ca_files: &[std::path::PathBuf],
    ) -> Result<Endpoint, String> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let uri: http::Uri = base_url.parse().map_err(|e| format!("--base-url {base_url:?} is not a URL: {e}"))?;
        match (uri.scheme_str(), uri.host()) {
            (Some("https"), Some(_)) => {}
            (Some("http"), Some(host)) if headers.is_empty() || mcp::fetch::is_loopback(host) => {}
            (Some("http"), Some(host)) => {
                return Err(format!(
                    "--base-url {base_url} is plain http to {host}: the API key would cross the network in clear; use https (plain http is fine on loopback, or with no key)"
                ))
            }
            _ => return Err(format!("--base-url {base_url} is not an http(s) URL")),
        }
        let fetcher = Fetcher::new(ca_files).map_err(|e| e.to_string())?;
        Ok(Endpoint { base_url, headers, fetcher, retry: Retry::default(), on_wait: None })
    }

    /// Waits `pause` before a retry after `why`, telling [`Endpoint::on_wait`] once a second.
    pub(crate) async fn pause(&self, why: &ProviderError, pause: Duration) {
        tracing::warn!("{why}; retrying in {pause:?}");
        let until = Instant::now() + pause;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if let Some(on_wait) = &self.on_wait {
                on_wait(&why.to_string(), left);
            }
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        }
    }

    /// POSTs `body` to `path` and hands every event of the streamed answer to `on_event`.
    pub(crate) async fn stream(
        &self,
        path: &str,
        body: &Value,
        mut on_event: impl FnMut(Event) -> Result<(), ProviderError> + Send,
    ) -> Result<(), ProviderError> {
        let url = format!("{}{path}", self.base_url);
        let mut wait = self.retry.base;
        let mut attempt = 0;
        let response = loop {
            let answer = self
                .fetcher
                .post_json_streaming(&url, body, &self.headers, Duration::from_secs(120))
                .await
                .map_err(ProviderError::Transport)?;
            if answer.status.is_success() {
                break answer;
            }
            let status = answer.status.as_u16();
            let retry_after = answer
                .headers
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .map(Duration::from_secs_f64);
            let text = read_all(answer.body).await;
            let error = classify(status, &text);
            let retryable = matches!(error, ProviderError::RateLimited(_) | ProviderError::Overloaded(_));
            if !retryable || attempt >= self.retry.attempts {
                return Err(error);
            }
            let pause = retry_after.unwrap_or(wait).min(self.retry.max_wait);
            self.pause(&error, pause).await;
            wait = (wait * 2).min(self.retry.max_wait);
            attempt += 1;
        };
        let mut body = response.body;
        let mut parser = Parser::default();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| ProviderError::Transport(format!("the stream broke: {e}")))?;
            let Some(data) = frame.data_ref() else { continue };
            for event in parser.feed(data) {
                on_event(event)?;
            }
        }
        Ok(())
    }
}

async fn read_all(body: hyper::body::Incoming) -> String {
    let limited = http_body_util::Limited::new(body, 256 * 1024);
    match limited.collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(_) => String::new(),
    }
}

/// The provider's own message in an error body (Anthropic's or OpenAI's shape), else the body.
fn message_of(text: &str) -> String {
    let parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let message = parsed["error"]["message"].as_str().or(parsed["message"].as_str());
    let message = message.map(str::to_owned).unwrap_or_else(|| text.chars().take(300).collect());
    if message.is_empty() {
        "no details".into()
    } else {
        message
    }
}

/// An error answer, in words.
pub(crate) fn classify(status: u16, text: &str) -> ProviderError {
    let message = message_of(text);
    let lower = text.to_ascii_lowercase();
    let too_long =
        ["context_length_exceeded", "prompt is too long", "maximum context", "context window", "too many tokens"]
            .iter()
            .any(|needle| lower.contains(needle));
    match status {
        401 | 403 => ProviderError::Unauthorized(format!("HTTP {status}: {message} (check the API key)")),
        429 => ProviderError::RateLimited(format!("HTTP 429: {message}")),
        529 | 503 => ProviderError::Overloaded(format!("HTTP {status}: {message}")),
        _ if lower.contains("overloaded") => ProviderError::Overloaded(format!("HTTP {status}: {message}")),
        400 | 413 if too_long => ProviderError::ContextTooLong(message),
        404 => ProviderError::BadRequest(format!(
            "HTTP 404: {message} (check --base-url: OpenAI-compatible servers usually end in /v1; and --model)"
        )),
        400..=499 => ProviderError::BadRequest(format!("HTTP {status}: {message}")),
        _ => ProviderError::Transport(format!("HTTP {status}: {message}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_in_words() {
        assert!(
            matches!(classify(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#), ProviderError::Unauthorized(m) if m.contains("invalid x-api-key"))
        );
        assert!(matches!(classify(429, "{}"), ProviderError::RateLimited(_)));
        assert!(matches!(classify(529, r#"{"error":{"message":"Overloaded"}}"#), ProviderError::Overloaded(_)));
        assert!(matches!(
            classify(
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#
            ),
            ProviderError::ContextTooLong(_)
        ));
        assert!(matches!(
            classify(400, r#"{"error":{"message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#),
            ProviderError::ContextTooLong(_)
        ));
        assert!(matches!(classify(400, r#"{"error":{"message":"bad tool name"}}"#), ProviderError::BadRequest(_)));
        assert!(matches!(classify(500, "oops"), ProviderError::Transport(_)));
        assert!(
            matches!(classify(404, "404 page not found"), ProviderError::BadRequest(m) if m.contains("--base-url"))
        );
    }

    #[test]
    fn a_key_never_goes_over_plain_http_to_another_host() {
        let key = || vec![("authorization", "Bearer sk-secret".to_owned())];
        assert!(Endpoint::new("https://api.openai.com/v1", key(), &[]).is_ok());
        assert!(Endpoint::new("http://127.0.0.1:11434/v1", key(), &[]).is_ok());
        assert!(Endpoint::new("http://gpu-box.lan:11434/v1", Vec::new(), &[]).is_ok(), "no key: fine");
        let refused = Endpoint::new("http://gpu-box.lan:11434/v1", key(), &[]).unwrap_err();
        assert!(refused.contains("in clear") && !refused.contains("sk-secret"), "{refused}");
        assert!(Endpoint::new("ftp://x/v1", Vec::new(), &[]).is_err());
    }
}
