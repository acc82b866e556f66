//! Rate limits counted on Redis: one token bucket per account shared by every node, updated by
//! one script call (one round trip) per request, on the Redis server's clock.

use futures_util::future::BoxFuture;
use mcp_types::ErrorObject;
use serde_json::json;

use super::{describe, Redis};
use crate::server::middleware::{Call, Middleware, Next, Outcome, RATE_LIMITED};

/// The bucket: refill since the last take, take one token if there is one, keep the key only
/// as long as a bucket takes to fill up again. Returns {1, 0} or {0, ms to wait}.
const TAKE: &str = r#"
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or burst
local at = tonumber(b[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate / 1000)
local ok, wait = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {ok, wait}
"#;

/// At most `rate` requests per second per account across every node, in bursts of `burst`.
pub struct RedisRateLimit {
    redis: Redis,
    rate: f64,
    burst: f64,
    script: redis::Script,
}

pub use crate::transport::http::directory::STORE_UNAVAILABLE;

impl RedisRateLimit {
    /// `rate` requests per second per account, in bursts of up to `burst`.
    pub fn new(redis: Redis, rate: f64, burst: f64) -> Self {
        assert!(rate > 0.0 && burst >= 1.0, "a rate limit needs a positive rate and a burst of at least 1");
        RedisRateLimit { redis, rate, burst, script: redis::Script::new(TAKE) }
    }

    async fn take(&self, account: &str) -> Result<(i64, i64), redis::RedisError> {
        let mut conn = self.redis.conn();
        let key = self.redis.key(&format!("rate:{account}"));
        self.script.key(key).arg(self.rate).arg(self.burst).invoke_async(&mut conn).await
    }
}

impl Middleware for RedisRateLimit {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if crate::server::middleware::is_upkeep(call.method()) {
                return next.run(call).await;
            }
            match self.take(&call.account()).await {
                Ok((1, _)) => next.run(call).await,
                Ok((_, wait)) => {
                    crate::server::middleware::rate::count_refusal();
                    let ms = wait.max(1);
                    let message = format!(
                        "Rate limit exceeded: at most {} requests per second for this account. Retry in {ms} ms.",
                        self.rate
                    );
                    Err(ErrorObject::new(RATE_LIMITED, message).with_data(json!({"retryAfterMs": ms})))
                }
                Err(e) => {
                    tracing::warn!("rate limit: {}", describe(&e));
                    let message = format!("{}; the request was not run. Retry in a moment.", describe(&e));
                    Err(ErrorObject::new(STORE_UNAVAILABLE, message).with_data(json!({"retryAfterMs": 1000})))
                }
            }
        })
    }
}
