//! `mcp` against the servers people run today, as a person meets them: a legacy stdio server
//! that ignores what it does not know is told apart at once, eras are remembered per server
//! (HTTP too), redirects are followed within bounds and never carry credentials elsewhere, only
//! negotiated capabilities are used, and `mcp doctor` names a probe that was waited out. The
//! real Python and TypeScript servers are in `scripts/interop.sh`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mcp::testing::HttpServer;
use serde_json::Value;

mod common;
use common::{example, mcp};

fn run_with_cache(cache: &std::path::Path, args: &[&str]) -> Output {
    Command::new(mcp()).args(args).env("XDG_CACHE_HOME", cache).stdin(Stdio::null()).output().unwrap()
}

/// A legacy server in a few lines of shell that, like some real ones, stays silent at a method
/// it does not know (so a `server/discover` probe can only time out). It knows `initialize`,
/// `ping` (unless `deaf_to_ping`), `tools/list` and `tools/call`, and declares tools only.
fn silent_legacy_server(deaf_to_ping: bool) -> String {
    let ping = if deaf_to_ping { "" } else { r#"*'"method":"ping"'*) r='{}' ;;"# };
    r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  [ -n "$id" ] || continue
  case "$line" in
    *'"method":"initialize"'*) r='{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"quiet","version":"1"}}' ;;
    PING
    *'"method":"tools/list"'*) r='{"tools":[{"name":"antique","inputSchema":{"type":"object"}}]}' ;;
    *'"method":"tools/call"'*) r='{"content":[{"type":"text","text":"ran"}]}' ;;
    *) echo "unknown: $line" >&2; continue ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$r"
done"#
        .replace("PING", ping)
}

/// The order of the JSON-RPC methods `mcp --trace` sent and received.
fn traced_methods(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|line| {
            let (arrow, message) = line.split_once(' ')?;
            let message: Value = serde_json::from_str(message).ok()?;
            let what = message["method"].as_str().map_or_else(|| format!("answer {}", message["id"]), str::to_owned);
            Some(format!("{arrow} {what}"))
        })
        .collect()
}

#[test]
fn a_legacy_server_that_ignores_unknown_methods_is_told_apart_at_once_and_quietly() {
    let cache = tempfile::tempdir().unwrap();
    let script = silent_legacy_server(false);
    let started = Instant::now();
    let out = run_with_cache(cache.path(), &["--trace", "--json", "tools", "--", "sh", "-c", &script]);
    let took = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sent = traced_methods(&out);
    assert_eq!(sent[..3], ["→ ping", "← answer 1", "→ initialize"], "{sent:?}");
    // No method it does not know reaches it: nothing for it to ignore, or to log.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("unknown:"), "{stderr}");
    assert!(took < Duration::from_secs(1), "first contact took {took:?} (a server/discover probe waits 5 s)");
}

#[test]
fn mcp_doctor_names_a_probe_that_was_waited_out() {
    // A server that answers nothing before `initialize`, not even `ping`: every client that
    // probes waits its probe out, and the doctor says so.
    let script = silent_legacy_server(true);
    let out = Command::new(mcp())
        .args(["--timeout", "1", "doctor", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("warning[era-negotiation]"), "{report}");
    assert!(report.contains("no answer to ping"), "{report}");
    // A server that answers gets a line saying how its era was decided, and no warning.
    let out = Command::new(mcp()).args(["doctor", "--", example().to_str().unwrap()]).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(!report.contains("era-negotiation"), "{report}");
    assert!(report.contains("protocol era decided in"), "{report}");
}

#[test]
fn an_http_servers_era_is_remembered_by_its_url() {
    let cache = tempfile::tempdir().unwrap();
    let server = HttpServer::start(example(), &[]).expect("mcp-example serves HTTP");
    let tools = ["--url", server.url(), "--trace", "--json", "tools"];
    let first = run_with_cache(cache.path(), &tools);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(traced_methods(&first)[..3], ["→ server/discover", "← answer 1", "→ tools/list"]);
    // Remembered: the request goes out beside the probe that confirms the era.
    let second = run_with_cache(cache.path(), &tools);
    let sent = traced_methods(&second);
    assert_eq!(sent[..2], ["→ server/discover", "→ tools/list"], "{sent:?}");
    // Another URL is another server.
    let other = HttpServer::start(example(), &[]).expect("mcp-example serves HTTP");
    let third = run_with_cache(cache.path(), &["--url", other.url(), "--trace", "tools"]);
    assert_eq!(traced_methods(&third)[..2], ["→ server/discover", "← answer 1"]);
}

#[test]
fn a_remembered_era_that_fails_to_connect_is_forgotten() {
    let cache = tempfile::tempdir().unwrap();
    let server = HttpServer::start(example(), &[]).expect("mcp-example serves HTTP");
    let url = server.url().to_owned();
    assert!(run_with_cache(cache.path(), &["--url", &url, "ping"]).status.success());
    let file = cache.path().join("mcp").join("eras.json");
    assert!(std::fs::read_to_string(&file).unwrap().contains(&url));
    drop(server); // gone: the memory of it is dropped with the failure
    let out = run_with_cache(cache.path(), &["--url", &url, "ping"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!std::fs::read_to_string(&file).unwrap().contains(&url));
}

/// A loopback server that answers every request with `307` to `location(path)`, counting them.
fn redirector(
    location: impl Fn(&str) -> String + Send + 'static,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
            log.lock().unwrap().push(head);
            let answer = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                location(&path)
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (url, seen)
}

#[test]
fn a_307_is_followed_with_its_method_and_body_but_credentials_stay_home() {
    let cache = tempfile::tempdir().unwrap();
    let server = HttpServer::start(example(), &[]).expect("mcp-example serves HTTP");
    let target = server.url().to_owned();
    let (url, seen) = redirector(move |_| target.clone());
    // Without credentials, the POSTs follow the redirect and the call is answered.
    let out = run_with_cache(cache.path(), &["--url", &url, "call", "echo", "text=moved"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "moved\n", "{}", String::from_utf8_lossy(&out.stderr));
    assert!(seen.lock().unwrap().iter().all(|head| head.starts_with("POST ") || head.starts_with("GET ")));
    // With an Authorization header, a redirect to another origin is refused, saying why.
    let out = run_with_cache(cache.path(), &["--url", &url, "--header", "Authorization: Bearer secret-token", "tools"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("redirects to another origin"), "{stderr}");
    assert!(!stderr.contains("secret-token"), "{stderr}");
}

#[test]
fn redirects_are_bounded() {
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = redirector(|path| format!("{path}x"));
    let started = Instant::now();
    let out = run_with_cache(cache.path(), &["--url", &url, "--legacy", "tools"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("redirects more than 5 times"), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(seen.lock().unwrap().len() <= 12, "{} requests", seen.lock().unwrap().len());
}

#[test]
fn listings_a_server_did_not_declare_are_not_asked_for() {
    let cache = tempfile::tempdir().unwrap();
    let script = silent_legacy_server(false);
    for (command, key) in [("resources", "resources"), ("templates", "resourceTemplates"), ("prompts", "prompts")] {
        let out = run_with_cache(cache.path(), &["--trace", "--json", command, "--", "sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc[key], serde_json::json!([]));
        assert!(doc["note"].as_str().unwrap().contains("did not declare"), "{doc}");
        assert!(!traced_methods(&out).iter().any(|m| m.contains("/list")), "{command}: nothing was asked");
        // And a person reads it.
        let out = run_with_cache(cache.path(), &[command, "--", "sh", "-c", &script]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("the server offers no"), "{text}");
    }
}

#[test]
fn prompts_show_their_arguments() {
    let out = Command::new(mcp()).args(["prompts", "--", example().to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.lines().any(|l| l.trim_start().starts_with("name")), "the greet prompt's argument: {text}");
}
