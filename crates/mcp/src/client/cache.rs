//! The result cache of 2026-07-28 (`ttlMs` and `cacheScope`, server/utilities/caching): a list
//! page or a resource read whose result says it stays fresh for `ttlMs` is answered from here
//! until then, without asking the server again.
//!
//! - Only results with `resultType: "complete"` and a positive `ttlMs` are kept (absent, zero or
//!   negative means stale at once); a request carrying `inputResponses` or `requestState` is
//!   never answered from or stored in the cache.
//! - `cacheScope: "private"` (and a result naming no scope) is kept for the connection that
//!   fetched it alone, so it is never shared between authorization contexts; `"public"` is kept
//!   for the server (its URL), so clients sharing one cache (`ClientOptions::cache`) share it.
//! - A list-changed notification drops that list's pages, `notifications/resources/updated`
//!   drops that resource's read; a cursor the server no longer accepts drops every page of
//!   that list (the client then lists from the start).
//! - At most [`ResultCache::capacity`] entries: stale ones go first, then the oldest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
// Tokio's clock (the same as std's, unless a test pauses it to age entries without waiting).
use tokio::time::Instant;

/// How many entries a cache keeps by default.
const DEFAULT_CAPACITY: usize = 512;

/// Cached results of one client or of several sharing it (see the module's documentation).
#[derive(Debug)]
pub struct ResultCache {
    entries: Mutex<HashMap<Key, Entry>>,
    capacity: usize,
}

impl Default for ResultCache {
    fn default() -> Self {
        ResultCache::with_capacity(DEFAULT_CAPACITY)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    /// The connection (private) or the server (public).
    owner: Arc<str>,
    method: String,
    /// The cursor of a page, the URI of a read.
    part: String,
}

#[derive(Debug)]
struct Entry {
    result: Value,
    fresh_until: Instant,
}

/// Whose entries one connection may read: its own (private) and its server's (public).
#[derive(Debug, Clone)]
pub(crate) struct Owner {
    pub connection: Arc<str>,
    pub server: Arc<str>,
}

impl Owner {
    /// A connection of its own, to a server known by `server`.
    pub fn new(server: &str) -> Owner {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Owner { connection: format!("connection#{n}").into(), server: server.into() }
    }
}

/// How long `result` may be served again, and to whom; `None` when it may not be kept.
fn freshness(result: &Value) -> Option<(Duration, bool)> {
    if result.get("resultType").and_then(Value::as_str) != Some("complete") {
        return None;
    }
    let ttl = result.get("ttlMs").and_then(Value::as_i64).filter(|ms| *ms > 0)?;
    let public = result.get("cacheScope").and_then(Value::as_str) == Some("public");
    Some((Duration::from_millis(ttl as u64), public))
}

impl ResultCache {
    /// A cache of at most `capacity` entries.
    pub fn with_capacity(capacity: usize) -> ResultCache {
        ResultCache { entries: Mutex::new(HashMap::new()), capacity: capacity.max(1) }
    }

    /// How many entries it keeps at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many entries it holds (fresh or not yet dropped).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A fresh result for `method` and `part` that `owner` may read.
    pub(crate) fn get(&self, owner: &Owner, method: &str, part: &str) -> Option<Value> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        [&owner.connection, &owner.server].into_iter().find_map(|who| {
            let key = Key { owner: who.clone(), method: method.to_owned(), part: part.to_owned() };
            entries.get(&key).filter(|e| now < e.fresh_until).map(|e| e.result.clone())
        })
    }

    /// Keeps `result` if it says it may be kept.
    pub(crate) fn put(&self, owner: &Owner, method: &str, part: &str, result: &Value) {
        let Some((ttl, public)) = freshness(result) else { return };
        let now = Instant::now();
        let who = if public { owner.server.clone() } else { owner.connection.clone() };
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity {
            entries.retain(|_, e| now < e.fresh_until);
        }
        while entries.len() >= self.capacity {
            let oldest = entries.iter().min_by_key(|(_, e)| e.fresh_until).map(|(k, _)| k.clone());
            match oldest {
                Some(key) => entries.remove(&key),
                None => break,
            };
        }
        let key = Key { owner: who, method: method.to_owned(), part: part.to_owned() };
        entries.insert(key, Entry { result: result.clone(), fresh_until: now + ttl });
    }

    /// Drops what `owner` could read of `method` (every part, or only `part`); `true` when
    /// something was dropped.
    pub(crate) fn forget(&self, owner: &Owner, method: &str, part: Option<&str>) -> bool {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let before = entries.len();
        entries.retain(|key, _| {
            let mine = key.owner == owner.connection || key.owner == owner.server;
            !(mine && key.method == method && part.is_none_or(|p| p == key.part))
        });
        entries.len() < before
    }

    /// Drops what a notification from `owner`'s server makes stale.
    pub(crate) fn on_notification(&self, owner: &Owner, method: &str, params: Option<&str>) {
        match method {
            "notifications/tools/list_changed" => {
                self.forget(owner, "tools/list", None);
            }
            "notifications/prompts/list_changed" => {
                self.forget(owner, "prompts/list", None);
            }
            "notifications/resources/list_changed" => {
                self.forget(owner, "resources/list", None);
                self.forget(owner, "resources/templates/list", None);
            }
            "notifications/resources/updated" => {
                let uri = params
                    .and_then(|p| serde_json::from_str::<Value>(p).ok())
                    .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
                self.forget(owner, "resources/read", uri.as_deref());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(ttl: i64, scope: &str) -> Value {
        json!({"tools": [], "resultType": "complete", "ttlMs": ttl, "cacheScope": scope})
    }

    #[test]
    fn only_complete_results_with_a_positive_ttl_are_kept() {
        let cache = ResultCache::default();
        let me = Owner::new("http://s/mcp");
        for (i, result) in [
            page(0, "private"),
            page(-5, "public"),
            json!({"tools": [], "resultType": "complete"}),
            json!({"resultType": "input_required", "ttlMs": 5000}),
        ]
        .iter()
        .enumerate()
        {
            cache.put(&me, "tools/list", &i.to_string(), result);
        }
        assert!(cache.is_empty());
        cache.put(&me, "tools/list", "", &page(60_000, "private"));
        assert_eq!(cache.get(&me, "tools/list", ""), Some(page(60_000, "private")));
        assert_eq!(cache.get(&me, "tools/list", "next"), None, "pages are cached one by one");
    }

    #[test]
    fn private_results_stay_with_their_connection_and_public_ones_are_shared() {
        let cache = ResultCache::default();
        let alice = Owner::new("http://s/mcp");
        let bob = Owner::new("http://s/mcp");
        cache.put(&alice, "tools/list", "", &page(60_000, "private"));
        assert!(cache.get(&bob, "tools/list", "").is_none(), "another connection never sees a private result");
        cache.put(&alice, "prompts/list", "", &page(60_000, "public"));
        assert!(cache.get(&bob, "prompts/list", "").is_some(), "a public result is the server's");
        let elsewhere = Owner::new("http://other/mcp");
        assert!(cache.get(&elsewhere, "prompts/list", "").is_none());
    }

    /// On the paused clock: time passes only when the test says.
    #[tokio::test(start_paused = true)]
    async fn stale_entries_are_not_served_and_notifications_drop_what_they_name() {
        let cache = ResultCache::default();
        let me = Owner::new("s");
        cache.put(&me, "tools/list", "", &page(1, "private"));
        assert!(cache.get(&me, "tools/list", "").is_some(), "within its ttlMs");
        tokio::time::advance(Duration::from_millis(5)).await;
        assert!(cache.get(&me, "tools/list", "").is_none(), "past its ttlMs");
        cache.put(&me, "tools/list", "", &page(60_000, "public"));
        cache.put(&me, "resources/list", "", &page(60_000, "private"));
        cache.put(&me, "resources/read", "file:///a", &page(60_000, "private"));
        cache.put(&me, "resources/read", "file:///b", &page(60_000, "private"));
        cache.on_notification(&me, "notifications/tools/list_changed", None);
        assert!(cache.get(&me, "tools/list", "").is_none());
        assert!(cache.get(&me, "resources/list", "").is_some());
        cache.on_notification(&me, "notifications/resources/updated", Some(r#"{"uri":"file:///a"}"#));
        assert!(cache.get(&me, "resources/read", "file:///a").is_none());
        assert!(cache.get(&me, "resources/read", "file:///b").is_some());
        cache.on_notification(&me, "notifications/resources/list_changed", None);
        assert!(cache.get(&me, "resources/list", "").is_none());
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = ResultCache::with_capacity(3);
        let me = Owner::new("s");
        for i in 0..10 {
            cache.put(&me, "resources/read", &format!("u{i}"), &page(60_000 + i, "private"));
        }
        assert_eq!(cache.len(), 3);
        assert!(cache.get(&me, "resources/read", "u9").is_some(), "the newest stays");
    }
}
