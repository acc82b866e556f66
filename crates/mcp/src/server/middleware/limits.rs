//! Bounds on what one request may take: time ([`Timeout`]), company ([`ConcurrencyLimit`]) and
//! the size of what it answers ([`ResponseSizeLimit`]). A tool over a bound gets an `isError`
//! result that tells the model the limit, so it can ask for less; other requests get a JSON-RPC
//! error.

use std::io::Write;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_types::ErrorObject;
use serde_json::json;
use tokio::sync::Semaphore;

use super::{tool_error_result, Call, Middleware, Next, Outcome, TIMED_OUT};

/// Requests that wait on purpose and are not timed: a subscription stream lives as long as the
/// client wants it.
fn untimed(method: &str) -> bool {
    method == "subscriptions/listen"
}

fn describe(duration: Duration) -> String {
    if duration.as_millis() % 1000 == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// Stops a request that runs longer than a limit (a tool that became a task is not affected: its
/// call has been answered).
pub struct Timeout {
    limit: Duration,
}

impl Timeout {
    /// Requests stop after `limit`.
    pub fn new(limit: Duration) -> Self {
        Timeout { limit }
    }
}

impl Middleware for Timeout {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if untimed(call.method()) {
                return next.run(call).await;
            }
            let method = call.method().to_owned();
            let name = call.name().map(str::to_owned);
            match tokio::time::timeout(self.limit, next.run(call)).await {
                Ok(outcome) => outcome,
                Err(_) if method == "tools/call" => Ok(tool_error_result(format!(
                    "The tool {} did not finish within this server's limit of {} and was stopped. \
                     Ask for less work in one call, or try again later.",
                    name.unwrap_or_default(),
                    describe(self.limit)
                ))),
                Err(_) => Err(ErrorObject::new(
                    TIMED_OUT,
                    format!("Request timed out: {method} did not finish within {}", describe(self.limit)),
                )
                .with_data(json!({"timeoutMs": self.limit.as_millis() as u64}))),
            }
        })
    }
}

/// At most `n` requests handled at once; the others wait their turn (a timeout outside this
/// layer bounds the wait, and a cancelled request leaves the queue).
pub struct ConcurrencyLimit {
    permits: Semaphore,
}

impl ConcurrencyLimit {
    /// At most `n` (at least one) at once.
    pub fn new(n: usize) -> Self {
        ConcurrencyLimit { permits: Semaphore::new(n.max(1)) }
    }
}

impl Middleware for ConcurrencyLimit {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if untimed(call.method()) || super::is_upkeep(call.method()) {
                return next.run(call).await;
            }
            let Ok(_permit) = self.permits.acquire().await else {
                return Err(ErrorObject::internal("the server is shutting down"));
            };
            next.run(call).await
        })
    }
}

/// Refuses results larger than a limit, in bytes of JSON.
pub struct ResponseSizeLimit {
    max: usize,
}

impl ResponseSizeLimit {
    /// Results up to `max` bytes.
    pub fn new(max: usize) -> Self {
        ResponseSizeLimit { max }
    }
}

/// Counts bytes, and gives up once past the limit (so an oversized result is not serialized
/// whole just to be measured).
struct Counter {
    n: usize,
    max: usize,
}

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.n += buf.len();
        if self.n > self.max {
            return Err(std::io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Middleware for ResponseSizeLimit {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let method = call.method().to_owned();
            let name = call.name().map(str::to_owned);
            let result = next.run(call).await?;
            let mut counter = Counter { n: 0, max: self.max };
            if serde_json::to_writer(&mut counter, &result).is_ok() {
                return Ok(result);
            }
            if method == "tools/call" {
                return Ok(tool_error_result(format!(
                    "The result of {} is larger than this server's limit of {} bytes and was not sent. \
                     Ask for less: narrow the query, request fewer items, or page through them.",
                    name.unwrap_or_default(),
                    self.max
                )));
            }
            Err(ErrorObject::internal(format!(
                "the result of {method} is larger than this server's limit of {} bytes",
                self.max
            ))
            .with_data(json!({"maxBytes": self.max})))
        })
    }
}
