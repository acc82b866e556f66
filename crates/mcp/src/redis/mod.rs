//! State shared by several instances of a server on Redis (feature `redis`), so that a load
//! balancer may send any request to any instance: task records ([`RedisTaskStore`]), rate-limit
//! counters ([`RedisRateLimit`]), the key that seals `requestState` ([`Redis::state_key`]), so
//! that any node resumes another's `input_required` round, and legacy session records
//! ([`RedisSessions`]), so that any node serves a session another created.
//!
//! One multiplexed connection per process (concurrent commands are pipelined on it), which
//! reconnects by itself: while Redis is unreachable the requests that need it fail fast with a
//! clear error, and the node recovers when Redis is back. Keys live under a prefix (`mcp:` by
//! default, `?prefix=NAME:` in the URL) so that several servers can share one Redis.

mod bus;
mod eventlog;
mod rate;
mod sessions;
mod tasks;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use rate::RedisRateLimit;
pub use sessions::RedisSessions;
pub use tasks::RedisTaskStore;

/// How long a command may take before the node gives up on Redis for this request.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to Redis, shared by the stores of one process (cheap to clone).
#[derive(Clone)]
pub struct Redis {
    conn: ConnectionManager,
    client: redis::Client,
    prefix: String,
    /// This process's id among the nodes (random).
    node: String,
    /// Whether the heartbeat runs (see [`Redis::keep_alive`]); it stops when the last clone
    /// of this handle is dropped.
    beating: Arc<AtomicBool>,
}

/// How long a node counts as alive after its last heartbeat.
pub(crate) const ALIVE: Duration = Duration::from_secs(3);

/// Why a Redis operation failed, in words that name no secret.
pub fn describe(e: &redis::RedisError) -> String {
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
        "the shared store (Redis) is unreachable".to_owned()
    } else {
        format!("the shared store (Redis) failed: {:?}", e.kind())
    }
}

/// [`describe`], followed by the underlying cause (a refused connection, a certificate that is
/// not trusted), for the one-off error of a node that cannot start. The URL's password, when
/// there is one, is blanked from the cause should it ever appear there.
fn describe_with_cause(e: &redis::RedisError, url: &str) -> String {
    let mut cause = e.to_string();
    if let Some(password) = url_password(url).filter(|p| !p.is_empty()) {
        cause = cause.replace(password, "***");
    }
    format!("{}: {cause}", describe(e))
}

/// The password part of `redis://[USER]:PASSWORD@HOST...`, if any.
fn url_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    userinfo.split_once(':').map(|(_, password)| password)
}

/// Splits our own `prefix` parameter off a Redis URL.
fn split_prefix(url: &str) -> (String, String) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), "mcp:".to_owned()) };
    let mut prefix = "mcp:".to_owned();
    let rest: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("prefix=") {
            Some(p) if !p.is_empty() => {
                prefix = p.to_owned();
                false
            }
            _ => true,
        })
        .collect();
    let url = if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) };
    (url, prefix)
}

impl Redis {
    /// Connects to `redis://[USER:PASSWORD@]HOST:PORT[/DB]` (or `rediss://` for TLS: the
    /// system's trusted certificates, or those of the PEM file named by `SSL_CERT_FILE`). Fails
    /// if Redis cannot be reached now, saying why; afterwards the connection comes back by itself.
    pub async fn connect(url: &str) -> Result<Redis, String> {
        let (url, prefix) = split_prefix(url);
        let client = redis::Client::open(url.as_str())
            .map_err(|_| "the --store URL is not a valid Redis URL (redis://[:PASSWORD@]HOST:PORT[/DB])".to_owned())?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(RESPONSE_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_with_config(client.clone(), config)
            .await
            .map_err(|e| describe_with_cause(&e, &url))?;
        let mut id = [0u8; 8];
        getrandom::fill(&mut id).map_err(|e| format!("random source: {e}"))?;
        let node = id.iter().map(|b| format!("{b:02x}")).collect();
        let redis = Redis { conn, client, prefix, node, beating: Arc::new(AtomicBool::new(false)) };
        redis.ping().await?;
        Ok(redis)
    }

    /// `PING`.
    pub async fn ping(&self) -> Result<(), String> {
        let mut conn = self.conn.clone();
        redis::cmd("PING").query_async::<String>(&mut conn).await.map(drop).map_err(|e| describe(&e))
    }

    /// The connection, for a command.
    pub(crate) fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// `prefix` + `name`.
    pub(crate) fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// This process's id among the nodes.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// `{prefix}node:{id}`: present while node `id` is alive.
    pub(crate) fn node_key(&self, id: &str) -> String {
        self.key(&format!("node:{id}"))
    }

    /// Keeps this node's [`Redis::node_key`] alive from now on (started once, however often
    /// called), so that other nodes can tell this node's streams and tasks from those of a
    /// node that died. Call within a tokio runtime.
    pub(crate) fn keep_alive(&self) {
        if !self.beating.swap(true, Ordering::AcqRel) {
            tokio::spawn(heartbeat(self.conn(), self.node_key(&self.node), Arc::downgrade(&self.beating)));
        }
    }

    /// The key every node seals `requestState` with: the first node to ask draws it at random
    /// (`SET NX`), every other node reads it back.
    pub async fn state_key(&self) -> Result<[u8; 32], String> {
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh).map_err(|e| format!("random source: {e}"))?;
        let hex: String = fresh.iter().map(|b| format!("{b:02x}")).collect();
        let key = self.key("state-key");
        let mut conn = self.conn();
        let mut pipe = redis::pipe();
        pipe.cmd("SET").arg(&key).arg(&hex).arg("NX").ignore().cmd("GET").arg(&key);
        let (stored,): (String,) = pipe.query_async(&mut conn).await.map_err(|e| describe(&e))?;
        let mut out = [0u8; 32];
        if stored.len() != 64 {
            return Err(format!("{key} in Redis is not a 32-byte hex key; delete it and restart"));
        }
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&stored[2 * i..2 * i + 2], 16)
                .map_err(|_| format!("{key} in Redis is not a 32-byte hex key; delete it and restart"))?;
        }
        Ok(out)
    }
}

/// Sets `key` for [`ALIVE`] every third of it, while `alive` can be upgraded.
async fn heartbeat(mut conn: ConnectionManager, key: String, alive: Weak<AtomicBool>) {
    while alive.upgrade().is_some() {
        let beat: Result<(), _> =
            redis::cmd("SET").arg(&key).arg(1).arg("PX").arg(ALIVE.as_millis() as u64).query_async(&mut conn).await;
        if let Err(e) = beat {
            tracing::debug!("heartbeat: {}", describe(&e));
        }
        tokio::time::sleep(ALIVE / 3).await;
    }
}

#[cfg(test)]
mod tests {
    use super::{split_prefix, url_password};

    #[test]
    fn the_password_is_found_in_the_url() {
        assert_eq!(url_password("redis://:s3cret@h:1/0"), Some("s3cret"));
        assert_eq!(url_password("rediss://user:pw@h:1"), Some("pw"));
        assert_eq!(url_password("redis://h:1"), None);
        assert_eq!(url_password("redis://h:1/0?prefix=a@b:"), None);
    }

    #[test]
    fn our_prefix_parameter_is_taken_off_the_url() {
        assert_eq!(split_prefix("redis://h:1/0"), ("redis://h:1/0".into(), "mcp:".into()));
        assert_eq!(split_prefix("redis://h:1/0?prefix=crm:"), ("redis://h:1/0".into(), "crm:".into()));
        assert_eq!(
            split_prefix("rediss://h:1/0?protocol=resp3&prefix=a:"),
            ("rediss://h:1/0?protocol=resp3".into(), "a:".into())
        );
    }
}
