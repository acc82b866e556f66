//! Rate limits per account: a token bucket each, refilled at a steady rate. A request over the
//! limit is refused with a JSON-RPC error saying when to retry (on HTTP also `429` and
//! `Retry-After`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use mcp_types::ErrorObject;
use serde_json::json;

use super::{Call, Middleware, Next, Outcome, RATE_LIMITED};

/// Buckets kept before full ones (the same as absent) are dropped.
const PRUNE_AT: usize = 10_000;

/// At most `rate` requests per second per account, in bursts of up to `burst`.
pub struct RateLimit {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimit {
    /// `rate` requests per second per account, with bursts of as many (at least one).
    pub fn per_second(rate: f64) -> Self {
        RateLimit::new(rate, rate.max(1.0))
    }

    /// `rate` requests per second per account, with bursts of up to `burst`.
    pub fn new(rate: f64, burst: f64) -> Self {
        assert!(rate > 0.0 && burst >= 1.0, "a rate limit needs a positive rate and a burst of at least 1");
        RateLimit { rate, burst, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes a token for `account`, or says how long until one is there.
    fn take(&self, account: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= PRUNE_AT && !buckets.contains_key(account) {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
            if buckets.len() >= 4 * PRUNE_AT {
                buckets.clear(); // a flood of accounts: forget them rather than grow
            }
        }
        if let Some(bucket) = buckets.get_mut(account) {
            return self.spend(bucket, now); // the account string is copied only for a new bucket
        }
        let bucket = buckets.entry(account.to_owned()).or_insert(Bucket { tokens: self.burst, at: now });
        self.spend(bucket, now)
    }

    /// Refills `bucket` up to `now` and takes a token from it, or says how long until one is there.
    fn spend(&self, bucket: &mut Bucket, now: Instant) -> Result<(), Duration> {
        let refilled = bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * self.rate;
        bucket.tokens = refilled.min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / self.rate))
        }
    }
}

impl Middleware for RateLimit {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if super::is_upkeep(call.method()) {
                return next.run(call).await;
            }
            match self.take(call.account_str(), Instant::now()) {
                Ok(()) => next.run(call).await,
                Err(wait) => {
                    count_refusal();
                    let ms = wait.as_millis().max(1) as u64;
                    let message = format!(
                        "Rate limit exceeded: at most {} requests per second for this account. Retry in {ms} ms.",
                        self.rate
                    );
                    Err(ErrorObject::new(RATE_LIMITED, message).with_data(json!({"retryAfterMs": ms})))
                }
            }
        })
    }
}

/// Requests every rate limit of this process refused (see [`refused_requests`]).
static REFUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts one request refused by a rate limit (this one, or the Redis one).
pub(crate) fn count_refusal() {
    REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Requests refused so far by every rate limit of this process (what `/metrics` pages show as
/// `mcp_rate_limit_refusals_total`).
pub fn refused_requests() -> u64 {
    REFUSED.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refills_at_the_rate() {
        let limit = RateLimit::new(2.0, 2.0);
        let t0 = Instant::now();
        assert!(limit.take("a", t0).is_ok());
        assert!(limit.take("a", t0).is_ok());
        let wait = limit.take("a", t0).unwrap_err();
        assert!(wait > Duration::from_millis(400) && wait <= Duration::from_millis(500), "{wait:?}");
        assert!(limit.take("b", t0).is_ok(), "accounts have their own buckets");
        assert!(limit.take("a", t0 + Duration::from_millis(500)).is_ok());
        assert!(limit.take("a", t0 + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn many_accounts_do_not_grow_the_table_without_bound() {
        let limit = RateLimit::new(1000.0, 1.0);
        let t0 = Instant::now();
        for i in 0..PRUNE_AT * 3 {
            let _ = limit.take(&format!("acct{i}"), t0 + Duration::from_millis(i as u64));
        }
        assert!(limit.buckets.lock().unwrap().len() <= PRUNE_AT);
    }
}
