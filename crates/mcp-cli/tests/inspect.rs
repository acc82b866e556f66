//! `mcp inspect` without a browser: its API over real sockets, against a real `mcp-example`
//! and a protected `paypedia` behind the test authorization server (oidc-provider). The token,
//! Host and Origin refusals; the OAuth discovery shown step by step; the Authorize button's flow
//! with its URL put on the page, finished by a "browser" (curl), after which the tools answer;
//! and no token anywhere in what the page receives. (The page itself is tried in headless
//! chromium by `tests/browser/inspector.py`.)

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::oidc::{authorize_in_browser, http, setup};
use common::{example, mcp};

/// A running `mcp inspect`, stopped (with its server) when dropped.
struct Inspector {
    child: Child,
    base: String,
    token: String,
}

impl Inspector {
    fn start(args: &[&str], store: &std::path::Path) -> Inspector {
        let mut child = Command::new(mcp())
            .args(["inspect", "--no-open", "--no-browser"])
            .args(args)
            .env("MCP_AUTH_FILE", store)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let (base, token) = line.trim().split_once("/?token=").unwrap_or_else(|| panic!("no URL printed: {line:?}"));
        assert!(base.starts_with("http://127.0.0.1:"), "{base}");
        Inspector { child, base: base.to_owned(), token: token.to_owned() }
    }

    fn get(&self, path: &str) -> Value {
        let (status, body) = http("GET", &format!("{}{path}", self.base), &[("x-inspector-token", &self.token)], "");
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let headers = [("x-inspector-token", self.token.as_str()), ("content-type", "application/json")];
        let (status, text) = http("POST", &format!("{}{path}", self.base), &headers, &body.to_string());
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// Waits for a journal event of `kind` and returns it.
    fn event(&self, kind: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let batch = self.get("/api/events?wait=500");
            if let Some(e) = batch["events"].as_array().unwrap().iter().find(|e| e["kind"] == kind) {
                return e.clone();
            }
        }
        panic!("no {kind} event");
    }

    /// Waits until the session is connected.
    fn connected(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let server = self.get("/api/server");
            if server.get("error").is_none() {
                return server;
            }
            assert!(Instant::now() < deadline, "never connected: {server}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Inspector {
    fn drop(&mut self) {
        // Ctrl-C to the group: the inspector stops its server, then itself.
        let _ = Command::new("kill").args(["-INT", "--", &format!("-{}", self.child.id())]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("mcp inspect did not stop on Ctrl-C");
    }
}

use std::os::unix::process::CommandExt as _;

/// The status of one request written as it is (a Host header of our choosing).
fn raw_status(port: &str, request: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// An app's frame is loaded by a URL that holds its single-use id and not the inspector's token
/// (the app's document can read its own address): it works once, for this listener's Host only.
#[test]
fn an_app_frame_url_holds_its_one_time_id_and_not_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let inspector = Inspector::start(&["--", example().to_str().unwrap()], &dir.path().join("auth.json"));
    let html = "<!doctype html><p id=app>app</p>";
    let frame = inspector.post("/api/frame", json!({"html": html, "csp": {}}));
    let url = frame["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("/frame/"), "{url}");
    assert!(!url.contains(&inspector.token) && !url.contains("token"), "the frame URL holds the token: {url}");
    let port = inspector.base.rsplit(':').next().unwrap();
    let rebound =
        raw_status(port, &format!("GET {url} HTTP/1.1\r\nHost: rebind.example:{port}\r\nConnection: close\r\n\r\n"));
    assert_eq!(rebound, 421, "a rebinding name reads no frame");
    let (status, body) = http("GET", &format!("{}{url}", inspector.base), &[], "");
    assert_eq!((status, body.as_str()), (200, html));
    assert_eq!(http("GET", &format!("{}{url}", inspector.base), &[], "").0, 404, "a frame URL works once");
    let guessed = format!("{}/frame/{}", inspector.base, "0".repeat(32));
    assert_eq!(http("GET", &guessed, &[], "").0, 404);
}

#[test]
fn every_request_needs_the_token_the_host_and_the_origin() {
    let dir = tempfile::tempdir().unwrap();
    let inspector = Inspector::start(&["--", example().to_str().unwrap()], &dir.path().join("auth.json"));
    let page = format!("{}/?token={}", inspector.base, inspector.token);
    assert_eq!(http("GET", &page, &[], "").0, 200);
    assert_eq!(http("GET", &format!("{}/", inspector.base), &[], "").0, 401);
    assert_eq!(http("GET", &format!("{}/api/server", inspector.base), &[], "").0, 401);
    let wrong = format!("{}/api/server?token={}", inspector.base, "f".repeat(inspector.token.len()));
    assert_eq!(http("GET", &wrong, &[], "").0, 401);
    // The Host header of our helper is the authority; a rebinding name is refused.
    let port = inspector.base.rsplit(':').next().unwrap();
    let rebound = raw_status(
        port,
        &format!(
            "GET /?token={} HTTP/1.1\r\nHost: rebind.example:{port}\r\nConnection: close\r\n\r\n",
            inspector.token
        ),
    );
    assert_eq!(rebound, 421);
    let token = inspector.token.as_str();
    let foreign = http(
        "POST",
        &format!("{}/api/request", inspector.base),
        &[("x-inspector-token", token), ("content-type", "application/json"), ("Origin", "http://evil.example")],
        r#"{"method":"ping"}"#,
    );
    assert_eq!(foreign.0, 403);
    // A form post (no JSON content type) is refused before anything is read.
    let form = http("POST", &format!("{}/api/request", inspector.base), &[("x-inspector-token", token)], "method=ping");
    assert_eq!(form.0, 415);
    // With everything right, the API reaches the server.
    inspector.connected();
    let sum = inspector.post(
        "/api/request",
        json!({"method": "tools/call", "params": {"name": "sum", "arguments": {"a": 2, "b": 3}}}),
    );
    assert_eq!(sum["result"]["content"][0]["text"], "2 + 3 = 5", "{sum}");
    let invalid =
        inspector.post("/api/validate", json!({"schema": {"type": "object", "required": ["a"]}, "value": {}}));
    assert_eq!(invalid["valid"], false);
}

#[test]
fn oauth_discovery_step_by_step_then_authorize_from_the_page() {
    let (_auth, server) = setup(&[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("auth.json");
    let inspector = Inspector::start(&["--url", &server.url], &store);
    // The connection waits for an authorization; the discovery needs none.
    let steps = inspector.get("/api/auth");
    let names: Vec<(&str, bool)> = steps["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["ok"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("request without a token", true),
            ("protected resource metadata", true),
            ("resource matches the URL", true),
            ("authorization server metadata", true),
            ("PKCE", true),
            ("client registration", true),
        ],
        "{steps:#}"
    );
    assert!(steps["steps"][0]["said"].as_str().unwrap().contains("resource_metadata="), "{steps:#}");
    assert!(steps["steps"][5]["said"].as_str().unwrap().contains("dynamic registration"), "{steps:#}");
    // The connection's own authorization put its URL on the page; a person opens it.
    let authorize = inspector.event("authorize");
    let url = authorize["url"].as_str().unwrap();
    assert!(url.contains("code_challenge_method=S256") && url.contains("resource="), "{url}");
    authorize_in_browser(url, &dir.path().join("cookies"));
    let server_info = inspector.connected();
    assert_eq!(server_info["serverInfo"]["name"], "paypedia", "{server_info}");
    let iban = inspector.post(
        "/api/request",
        json!({"method": "tools/call", "params": {"name": "iban_check", "arguments": {"input": "FR76 3000 6000 0112 3456 7890 189"}}}),
    );
    assert!(iban["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("FR76"), "{iban}");
    // The traffic holds each HTTP exchange's status and headers, the credentials hidden.
    let journal = inspector.get("/api/events?wait=0");
    let exchanges: Vec<&Value> = journal["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "http").collect();
    let authorized = exchanges
        .iter()
        .find(|e| e["status"] == 200 && e["rpcMethod"] == "tools/call")
        .unwrap_or_else(|| panic!("no tools/call exchange: {exchanges:?}"));
    let sent: Vec<(String, String)> = serde_json::from_value(authorized["requestHeaders"].clone()).unwrap();
    assert!(sent.iter().any(|(k, v)| k == "authorization" && v == "(hidden)"), "{sent:?}");
    assert!(sent.iter().any(|(k, _)| k == "mcp-protocol-version"), "{sent:?}");
    // Nothing the page gets holds the token.
    let stored: Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    let access = stored["tokens"][0]["tokens"]["access_token"].as_str().unwrap().to_owned();
    let journal = inspector.get("/api/events?wait=0").to_string();
    let exported =
        http("GET", &format!("{}/api/traffic.jsonl", inspector.base), &[("x-inspector-token", &inspector.token)], "").1;
    for seen in [journal, exported, inspector.get("/api/auth").to_string(), server_info.to_string()] {
        assert!(!seen.contains(&access), "the access token reached the page");
    }
}
