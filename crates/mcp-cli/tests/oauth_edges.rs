//! OAuth at its edges, against a real authorization server (oidc-provider) and a protected
//! paypedia: each resource-server flag (`--auth-jwks`, `--auth-scope`, `--auth-resource`,
//! `MCP_AUTH_CLIENT_SECRET`) and `--max-concurrent`; `mcpServers` entries with `url`, `headers`
//! and `oauth`; `mcp login --server NAME`; a metadata redirect to another host refused; and an
//! `invalid_grant` on refresh that drops the refresh token alone.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::mcp;
use common::oidc::{call_iban, free_port, login, run, setup, stored, text, AuthServer, Protected, IBAN};

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

/// An authorization server knowing `url` with `scopes`, and paypedia on `port` with `args`.
fn protected(url_scopes: &str, port: u16, args: &[&str]) -> (AuthServer, Protected) {
    let auth = AuthServer::start(&["--resource", url_scopes]);
    let mut all = vec!["--auth-issuer", auth.issuer.as_str()];
    all.extend_from_slice(args);
    let server = Protected::start(port, &all);
    (auth, server)
}

#[test]
fn auth_jwks_takes_the_keys_from_the_url_given() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    // Keys from another server than the issuer's: the issuer's tokens do not verify.
    let other = AuthServer::start(&["--kid", "other"]);
    let (auth, server) =
        protected(&format!("{url}=paypedia:read"), port, &["--auth-jwks", &format!("{}/jwks", other.issuer)]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let token = auth.machine_token("machine-basic", &url, "paypedia:read");
    let out = call_iban(&store, &server.url, &["--header", &bearer(&token)]);
    assert_eq!(out.status.code(), Some(3), "signed by keys not in --auth-jwks: {}", text(&out));
    drop(server);
    // The issuer's own JWKS given: they do.
    let server =
        Protected::start(port, &["--auth-issuer", &auth.issuer, "--auth-jwks", &format!("{}/jwks", auth.issuer)]);
    let out = call_iban(&store, &server.url, &["--header", &bearer(&token)]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn auth_scope_is_needed_by_every_request() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (auth, server) = protected(&format!("{url}=paypedia:read,org:member"), port, &["--auth-scope", "org:member"]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let without = auth.machine_token("machine-basic", &url, "paypedia:read");
    let out = call_iban(&store, &server.url, &["--header", &bearer(&without), "--stored-auth-only"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let (status, head, _) = common::oidc::http_with_head(
        "POST",
        &server.url,
        &[
            ("authorization", &format!("Bearer {without}")),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    assert_eq!(status, 403, "{head}");
    assert!(head.contains("insufficient_scope") && head.contains("org:member"), "{head}");
    let with = auth.machine_token("machine-basic", &url, "paypedia:read org:member");
    let out = call_iban(&store, &server.url, &["--header", &bearer(&with)]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn auth_resource_is_the_audience_tokens_must_name() {
    let port = free_port();
    let public = "https://pay.example.com/mcp";
    let local = format!("http://127.0.0.1:{port}/mcp");
    let auth = AuthServer::start(&[
        "--resource",
        &format!("{public}=paypedia:read"),
        "--resource",
        &format!("{local}=paypedia:read"),
    ]);
    let server = Protected::start(port, &["--auth-issuer", &auth.issuer, "--auth-resource", public]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let for_public = auth.machine_token("machine-basic", public, "paypedia:read");
    let out = call_iban(&store, &server.url, &["--header", &bearer(&for_public)]);
    assert!(out.status.success(), "a token for --auth-resource: {}", text(&out));
    let for_local = auth.machine_token("machine-basic", &local, "paypedia:read");
    let out = call_iban(&store, &server.url, &["--header", &bearer(&for_local)]);
    assert_eq!(out.status.code(), Some(3), "a token for the URL served is for another audience: {}", text(&out));
    let (status, body) = common::oidc::http(
        "GET",
        &format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"),
        &[],
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["resource"], public, "{body}");
}

#[test]
fn the_introspection_secret_can_come_from_the_environment() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let auth = AuthServer::start(&["--opaque-resource", &format!("{url}=paypedia:read")]);
    let introspection = format!("{}/token/introspection", auth.issuer);
    let start = |secret: &str| {
        let args = ["--auth-issuer", auth.issuer.as_str(), "--auth-introspection", &introspection];
        let args = [&args[..], &["--auth-client-id", "resource-server"]].concat();
        Protected::start_with_env(port, &args, &[("MCP_AUTH_CLIENT_SECRET", secret)])
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let token = auth.machine_token("machine-basic", &url, "paypedia:read");
    let server = start("rs-secret");
    let out = call_iban(&store, &url, &["--header", &bearer(&token)]);
    assert!(out.status.success(), "{}", text(&out));
    drop(server);
    // A wrong secret: introspection is refused, so is the token.
    let server = start("wrong-secret");
    let out = call_iban(&store, &url, &["--header", &bearer(&token)]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    drop(server);
}

#[test]
fn max_concurrent_makes_requests_wait_their_turn() {
    // Sequential spawns would hide it: two calls in flight at once, from two threads.
    let concurrent = |args: &'static [&'static str]| {
        let server = mcp::testing::HttpServer::start(common::example(), args).unwrap();
        let url = Arc::new(server.url().to_owned());
        let started = Instant::now();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let url = url.clone();
                std::thread::spawn(move || {
                    Command::new(mcp())
                        .args(["--url", &url, "call", "wait", "ms=600"])
                        .stdin(Stdio::null())
                        .output()
                        .unwrap()
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().unwrap().status.success());
        }
        started.elapsed()
    };
    let one_at_a_time = concurrent(&["--max-concurrent", "1"]);
    assert!(one_at_a_time >= Duration::from_millis(1200), "the second call waited for the first: {one_at_a_time:?}");
}

#[test]
fn mcp_servers_entries_with_url_headers_and_oauth() {
    let (auth, server) = setup(&[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let secret = dir.path().join("client.secret");
    std::fs::write(&secret, "machine-secret").unwrap();
    let token = auth.machine_token("machine-basic", &server.url, "paypedia:read");
    let config = dir.path().join("servers.json");
    let servers = json!({"mcpServers": {
        "with-header": {"url": server.url, "headers": {"Authorization": "Bearer ${PAY_TOKEN}"}},
        "with-oauth": {"url": server.url, "oauth": {"clientId": "machine-post", "clientSecretFile": secret, "grant": "client_credentials"}},
        "with-login": {"url": server.url},
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    let cfg = config.to_str().unwrap();
    let call = |name: &str, env: &[(&str, &str)]| {
        Command::new(mcp())
            .args(["--config", cfg, "--server", name, "call", "iban_check", &format!("input={IBAN}")])
            .env("MCP_AUTH_FILE", &store)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = call("with-header", &[("PAY_TOKEN", &token)]);
    assert!(out.status.success() && text(&out).contains("VALID"), "{}", text(&out));
    let out = call("with-header", &[]);
    assert_eq!(out.status.code(), Some(2), "an unset variable is named: {}", text(&out));
    assert!(text(&out).contains("PAY_TOKEN"), "{}", text(&out));
    let out = call("with-oauth", &[]);
    assert!(out.status.success() && text(&out).contains("VALID"), "{}", text(&out));
    assert_eq!(auth.tokens("client_credentials"), 2, "the machine token above, and the entry's grant");
    // `mcp login --server NAME` authorizes the entry; its calls then use the stored tokens.
    let out = login(&store, "", &["--config", cfg, "--server", "with-login"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(stored(&store)["tokens"][0]["resource"], server.url.as_str());
    let out = Command::new(mcp())
        .args([
            "--config",
            cfg,
            "--server",
            "with-login",
            "call",
            "iban_check",
            &format!("input={IBAN}"),
            "--stored-auth-only",
        ])
        .env("MCP_AUTH_FILE", &store)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// A server that asks for a token, and whose metadata URLs all redirect to `elsewhere`.
fn redirecting_server(elsewhere: String) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(12) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap_or(0);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            let answer = if request.starts_with("GET /.well-known") {
                format!("HTTP/1.1 302 Found\r\nLocation: {elsewhere}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            } else {
                let metadata = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
                format!("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"{metadata}\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            };
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, handle)
}

#[test]
fn a_metadata_redirect_to_another_host_is_not_followed() {
    // The other host counts what reaches it: nothing may.
    let evil = TcpListener::bind("127.0.0.1:0").unwrap();
    let evil_port = evil.local_addr().unwrap().port();
    evil.set_nonblocking(true).unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if evil.accept().is_ok() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let (port, _server) =
        redirecting_server(format!("http://localhost:{evil_port}/.well-known/oauth-protected-resource"));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let out = Command::new(mcp())
        .args(["login", &format!("http://127.0.0.1:{port}/mcp"), "--no-browser"])
        .env("MCP_AUTH_FILE", &store)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("redirects to another host"), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the other host was never asked");
}

#[test]
fn invalid_grant_on_refresh_drops_the_refresh_token_and_keeps_the_registration() {
    let (auth, server) = setup(&[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    assert!(login(&store, &server.url, &[]).status.success());
    assert_eq!(auth.stats()["registrations"], 1);
    // The access token is past due and the refresh token is one the server does not know.
    let mut state = stored(&store);
    state["tokens"][0]["tokens"]["expires_at"] = json!(1);
    state["tokens"][0]["tokens"]["refresh_token"] = json!("revoked-by-the-server");
    std::fs::write(&store, state.to_string()).unwrap();
    let out = call_iban(&store, &server.url, &["--stored-auth-only"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("mcp login"), "{}", text(&out));
    assert_eq!(auth.refused("refresh_token"), 1, "one refresh tried, refused");
    let after = stored(&store);
    let entry = &after["tokens"][0];
    assert!(entry["tokens"]["refresh_token"].is_null(), "the refresh token is dropped: {entry}");
    assert!(entry["client_id"].is_string(), "the registration is kept: {after}");
    // Logging in again reuses the registration.
    assert!(login(&store, &server.url, &[]).status.success());
    assert_eq!(auth.stats()["registrations"], 1, "no second registration");
    let out = run(&store, &["--url", &server.url, "call", "iban_check", &format!("input={IBAN}")]);
    assert!(out.status.success(), "{}", text(&out));
}
