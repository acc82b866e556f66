//! The client's result cache (2026-07-28 `ttlMs` and `cacheScope`) against a server played on
//! an in-memory pipe that counts what reaches it: a list fresh within its TTL is not asked
//! again, a list-changed notification or the end of the TTL asks again, a cursor the server no
//! longer accepts lists from the start, a private list is never served to another connection
//! sharing the cache, and a server that gives no `ttlMs` is asked every time.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp::client::cache::ResultCache;
use mcp::client::{Client, ClientOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// What the played server does and has seen.
#[derive(Default)]
struct Script {
    /// `tools/list` requests received.
    lists: AtomicUsize,
    /// The `ttlMs` its lists carry (negative: none at all).
    ttl_ms: AtomicI64,
    /// The `ttlMs` of its second page, when not 0 (negative: none at all).
    second_ttl_ms: AtomicI64,
    /// Refuse the next request that carries a cursor (-32602), as after a restart.
    refuse_cursor: std::sync::atomic::AtomicBool,
}

fn tools_page(cursor: Option<&str>, ttl_ms: i64) -> Value {
    let (name, next) = match cursor {
        None => ("first", json!("page-2")),
        Some(_) => ("second", Value::Null),
    };
    let mut page = json!({"resultType": "complete", "cacheScope": "private",
        "tools": [{"name": name, "inputSchema": {"type": "object"}}]});
    if !next.is_null() {
        page["nextCursor"] = next;
    }
    if ttl_ms >= 0 {
        page["ttlMs"] = ttl_ms.into();
    }
    page
}

/// Connects a client to a 2026-07-28 server played by this test; `notify` sends it a line.
async fn connect(script: Arc<Script>, cache: Option<Arc<ResultCache>>) -> (Client, mpsc::UnboundedSender<String>) {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(client_end);
    let (server_read, mut server_write) = tokio::io::split(server_end);
    let (notify, mut notes) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut lines = BufReader::new(server_read).lines();
        loop {
            let line = tokio::select! {
                line = lines.next_line() => match line { Ok(Some(line)) => line, _ => return },
                Some(note) = notes.recv() => note,
            };
            let message: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = message.get("id").cloned() else {
                // A notification of the test's, passed on to the client.
                if message.get("method").is_some_and(|m| m.as_str().is_some_and(|m| m.starts_with("notifications/"))) {
                    server_write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
                }
                continue;
            };
            let params = &message["params"];
            let reply = match message["method"].as_str().unwrap_or("") {
                "server/discover" => json!({"result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {"listChanged": true}}, "ttlMs": 0, "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "played", "version": "1"}}}}),
                "tools/list" => {
                    script.lists.fetch_add(1, Ordering::SeqCst);
                    let cursor = params.get("cursor").and_then(Value::as_str);
                    if cursor.is_some() && script.refuse_cursor.swap(false, Ordering::SeqCst) {
                        json!({"error": {"code": -32602, "message": "unknown cursor"}})
                    } else {
                        let second = script.second_ttl_ms.load(Ordering::SeqCst);
                        let ttl = match (cursor, second) {
                            (Some(_), s) if s != 0 => s,
                            _ => script.ttl_ms.load(Ordering::SeqCst),
                        };
                        json!({"result": tools_page(cursor, ttl)})
                    }
                }
                _ => json!({"error": {"code": -32601, "message": "not played"}}),
            };
            let mut reply = reply;
            reply["jsonrpc"] = "2.0".into();
            reply["id"] = id;
            server_write.write_all(format!("{reply}\n").as_bytes()).await.unwrap();
        }
    });
    let options = ClientOptions { cache, timeout: Duration::from_secs(20), ..ClientOptions::default() };
    let client = Client::connect_streams(read, write, options).await.unwrap();
    assert!(client.description().modern);
    (client, notify)
}

fn names(tools: &[mcp::types::tools::Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// On tokio's paused clock (the cache ages on it too): the list ages only as the test says.
#[tokio::test(start_paused = true)]
async fn a_list_fresh_within_its_ttl_is_not_asked_again_until_it_changes_or_ages() {
    let script = Arc::new(Script::default());
    script.ttl_ms.store(60_000, Ordering::SeqCst);
    let (client, notify) = connect(script.clone(), None).await;
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first", "second"]);
    assert_eq!(script.lists.load(Ordering::SeqCst), 2, "two pages");
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first", "second"]);
    assert_eq!(script.lists.load(Ordering::SeqCst), 2, "fresh: served from the cache");

    // A list change makes it stale at once.
    notify.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string()).unwrap();
    for _ in 0..100 {
        client.list_tools().await.unwrap();
        if script.lists.load(Ordering::SeqCst) > 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(script.lists.load(Ordering::SeqCst), 4, "listed again after list_changed");

    // A short TTL runs out.
    script.ttl_ms.store(50, Ordering::SeqCst);
    notify.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string()).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await; // the notification is handled meanwhile
    client.list_tools().await.unwrap();
    let after = script.lists.load(Ordering::SeqCst);
    client.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), after, "within its ttlMs the list comes from the cache");
    tokio::time::advance(Duration::from_millis(120)).await;
    client.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), after + 2, "past its ttlMs the list is asked again");
}

#[tokio::test]
async fn without_ttl_every_listing_asks_and_a_refused_cursor_lists_from_the_start() {
    let script = Arc::new(Script::default());
    script.ttl_ms.store(-1, Ordering::SeqCst);
    let (client, _notify) = connect(script.clone(), None).await;
    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), 4, "no ttlMs: stale at once");

    // The first page is cached, the second is not: a listing asks for the second alone.
    script.ttl_ms.store(60_000, Ordering::SeqCst);
    script.second_ttl_ms.store(-1, Ordering::SeqCst);
    client.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), 6);
    client.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), 7, "the first page from the cache, the second asked");
    // The server no longer knows the cached page's cursor: the client drops the cached pages
    // and lists again from the start.
    script.refuse_cursor.store(true, Ordering::SeqCst);
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first", "second"]);
    assert_eq!(script.lists.load(Ordering::SeqCst), 10, "refused, then both pages asked again");
}

#[tokio::test]
async fn a_private_list_is_never_served_to_another_connection_sharing_the_cache() {
    let cache = Arc::new(ResultCache::default());
    let script = Arc::new(Script::default());
    script.ttl_ms.store(60_000, Ordering::SeqCst);
    let (alice, _a) = connect(script.clone(), Some(cache.clone())).await;
    let (bob, _b) = connect(script.clone(), Some(cache.clone())).await;
    alice.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), 2);
    bob.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), 4, "bob's connection asks for itself");
    alice.list_tools().await.unwrap();
    bob.list_tools().await.unwrap();
    assert_eq!(script.lists.load(Ordering::SeqCst), 4, "each reads its own");
    assert_eq!(cache.len(), 4);
}
