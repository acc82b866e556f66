//! OAuth end to end, against a real authorization server (oidc-provider) and a protected
//! `paypedia`: `mcp login` with PKCE through a browser (curl with a cookie jar plays it) and
//! dynamic registration, calls with the stored token, a refresh with rotation, two processes
//! refreshing at once, `--stored-auth-only`, `client_credentials`, a token for another resource
//! refused, key rotation followed without a restart, an opaque token through introspection;
//! `mcp gateway` as a resource server (a scope per upstream and per tool) and reaching a
//! protected upstream with the tokens `mcp login` stored.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::gateway::Gateway;
use common::oidc::{
    call_iban, free_port, http, http_with_head, login, run, setup, stored, text, AuthServer, Protected, IBAN,
};
use common::{example, mcp};

/// Waits until the stored access token is due for renewal (in its last ten seconds).
fn until_due(store: &Path) {
    let expires = stored(store)["tokens"][0]["tokens"]["expires_at"].as_u64().unwrap();
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    while expires.saturating_sub(now()) >= 10 {
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn login_with_pkce_then_calls_refresh_with_rotation_and_logout() {
    let (auth, server) = setup(&["--ttl", "14"], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let out = login(&store, &server.url, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("logged in to"), "{}", text(&out));
    assert_eq!(auth.stats()["registrations"], 1, "dynamic registration");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&store).unwrap().permissions().mode() & 0o777, 0o600);
    let first = stored(&store);
    let entry = &first["tokens"][0];
    assert_eq!(entry["resource"], server.url.as_str());
    assert_eq!(entry["issuer"], auth.issuer.as_str());
    let old_refresh = entry["tokens"]["refresh_token"].as_str().expect("a refresh token").to_owned();
    // Calls use the stored token.
    let out = call_iban(&store, &server.url, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("VALID"), "{}", text(&out));
    assert_eq!(auth.tokens("authorization_code"), 1);
    // Near expiry the token is renewed, and the refresh token rotates.
    until_due(&store);
    let out = call_iban(&store, &server.url, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(auth.tokens("refresh_token"), 1, "one refresh");
    let rotated = stored(&store)["tokens"][0]["tokens"]["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(rotated, old_refresh, "the refresh token rotated");
    let form = format!(
        "grant_type=refresh_token&refresh_token={}&client_id={}",
        old_refresh,
        entry["client_id"].as_str().unwrap()
    );
    let (status, body) = http(
        "POST",
        &format!("{}/token", auth.issuer),
        &[("content-type", "application/x-www-form-urlencoded")],
        &form,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("invalid_grant"), "the old refresh token no longer works: {body}");
    // `mcp auth status` shows it without a secret; `mcp logout` forgets it.
    let status = run(&store, &["auth", "status"]);
    assert!(text(&status).contains(&server.url) && text(&status).contains("paypedia:read"), "{}", text(&status));
    assert!(!text(&status).contains(&rotated));
    let out = run(&store, &["logout", &server.url]);
    assert!(out.status.success(), "{}", text(&out));
    let out = call_iban(&store, &server.url, &["--stored-auth-only"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("mcp login"), "{}", text(&out));
    // A second login reuses the registration.
    assert!(login(&store, &server.url, &[]).status.success());
    assert_eq!(auth.stats()["registrations"], 1, "the stored registration is reused");
}

#[test]
fn two_processes_needing_a_refresh_at_once_make_one_refresh_request() {
    let (auth, server) = setup(&["--ttl", "14"], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    assert!(login(&store, &server.url, &[]).status.success());
    until_due(&store);
    let spawn = || {
        Command::new(mcp())
            .args(["--url", &server.url, "call", "iban_check", &format!("input={IBAN}")])
            .env("MCP_AUTH_FILE", &store)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", text(&a));
    assert!(b.status.success(), "{}", text(&b));
    assert_eq!(auth.tokens("refresh_token"), 1, "exactly one refresh request");
    assert_eq!(auth.refused("refresh_token"), 0, "and no refused one");
}

#[test]
fn without_a_stored_token_stored_auth_only_exits_3_and_starts_nothing() {
    let (auth, server) = setup(&[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let started = Instant::now();
    let out = call_iban(&store, &server.url, &["--stored-auth-only"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains(&format!("mcp login {}", server.url)), "{}", text(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(auth.stats()["registrations"], 0);
}

#[test]
fn client_credentials_with_basic_and_post() {
    let (_auth, server) = setup(&[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "machine-secret\n").unwrap();
    for client in ["machine-basic", "machine-post"] {
        let out = call_iban(
            &store,
            &server.url,
            &[
                "--client-id",
                client,
                "--client-secret-file",
                secret.to_str().unwrap(),
                "--client-credentials",
                "--scope",
                "paypedia:read",
            ],
        );
        assert!(out.status.success(), "{client}: {}", text(&out));
        assert!(text(&out).contains("VALID"));
        let _ = std::fs::remove_file(&store);
    }
}

#[test]
fn a_token_for_another_resource_is_refused() {
    let port = free_port();
    let other = "http://127.0.0.1:9/other";
    let ours = format!("http://127.0.0.1:{port}/mcp=paypedia:read");
    let auth = AuthServer::start(&["--resource", &ours, "--resource", &format!("{other}=paypedia:read")]);
    let server = Protected::start(port, &["--auth-issuer", &auth.issuer]);
    let elsewhere = auth.machine_token("machine-basic", other, "paypedia:read");
    let mine = auth.machine_token("machine-basic", &server.url, "paypedia:read");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |token: &str| {
        let bearer = format!("Bearer {token}");
        let headers = [
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        http("POST", &server.url, &headers, body)
    };
    let (status, refused) = post(&elsewhere);
    assert_eq!(status, 401, "{refused}");
    assert!(refused.contains("another resource"), "{refused}");
    assert_eq!(post(&mine).0, 200);
    // And through `mcp`, holding the wrong token as a header.
    let dir = tempfile::tempdir().unwrap();
    let out = call_iban(
        &dir.path().join("oauth.json"),
        &server.url,
        &["--header", &format!("Authorization: Bearer {elsewhere}")],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
}

#[test]
fn a_key_rotation_is_followed_without_a_restart() {
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp=paypedia:read");
    let mut auth = AuthServer::start(&["--resource", &resource, "--kid", "first"]);
    let server = Protected::start(port, &["--auth-issuer", &auth.issuer]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let header = |token: &str| format!("Authorization: Bearer {token}");
    let before = auth.machine_token("machine-basic", &server.url, "paypedia:read");
    assert!(call_iban(&store, &server.url, &["--header", &header(&before)]).status.success());
    auth.restart_with_new_keys("second");
    let after = auth.machine_token("machine-basic", &server.url, "paypedia:read");
    let kid = |token: &str| {
        use base64::Engine as _;
        let head = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap();
        serde_json::from_slice::<Value>(&head).unwrap()["kid"].as_str().unwrap().to_owned()
    };
    assert_ne!(kid(&before), kid(&after), "the keys rotated");
    let out = call_iban(&store, &server.url, &["--header", &header(&after)]);
    assert!(out.status.success(), "a token signed by the new key is accepted: {}", text(&out));
}

#[test]
fn an_opaque_token_is_accepted_through_introspection() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let auth = AuthServer::start(&["--opaque-resource", &format!("{url}=paypedia:read")]);
    let dir = tempfile::tempdir().unwrap();
    let secret: PathBuf = dir.path().join("rs-secret");
    std::fs::write(&secret, "rs-secret").unwrap();
    let introspection = format!("{}/token/introspection", auth.issuer);
    let server = Protected::start(
        port,
        &[
            "--auth-issuer",
            &auth.issuer,
            "--auth-introspection",
            &introspection,
            "--auth-client-id",
            "resource-server",
            "--auth-client-secret-file",
            secret.to_str().unwrap(),
        ],
    );
    let token = auth.machine_token("machine-basic", &server.url, "paypedia:read");
    assert_eq!(token.split('.').count(), 1, "an opaque token: {token}");
    let store = dir.path().join("oauth.json");
    let out = call_iban(&store, &server.url, &["--header", &format!("Authorization: Bearer {token}")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(auth.stats()["introspections"].as_u64().unwrap() >= 1);
    let out = call_iban(&store, &server.url, &["--header", "Authorization: Bearer not-a-real-token"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
}

/// `mcp bridge --url URL --no-browser` as a host starts it, its tokens in `store`; its stderr
/// lines go to `lines`.
fn bridge(store: &Path, url: &str, lines: std::sync::mpsc::Sender<String>) -> Child {
    let mut child = Command::new(mcp())
        .args(["bridge", "--url", url, "--no-browser"])
        .env("MCP_AUTH_FILE", store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    child
}

/// Calls `iban_check` through a bridge on its stdin and stdout.
fn call_through(child: &mut Child) -> String {
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}"#;
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"iban_check","arguments":{{"input":"{IBAN}"}}}}}}"#
    );
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("protocolVersion"), "{line}");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    writeln!(stdin, "{call}").unwrap();
    // The bridge may announce its catalog (`notifications/tools/list_changed`) before answering.
    loop {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 || line.contains(r#""id":2"#) {
            return line;
        }
    }
}

#[test]
fn two_bridges_started_at_once_make_one_authorization() {
    let (auth, server) = setup(&[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let (tx, rx) = std::sync::mpsc::channel();
    let mut first = bridge(&store, &server.url, tx.clone());
    let mut second = bridge(&store, &server.url, tx);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut said = String::new();
    let authorize = loop {
        let line =
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or_else(|_| panic!("{said}"));
        said.push_str(&line);
        said.push('\n');
        if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http") && w.contains("code_challenge")) {
            break url.to_owned();
        }
    };
    let jar = store.with_extension("cookies");
    let browser = Command::new("curl")
        .args(["-s", "-L", "--max-redirs", "20", "-c", jar.to_str().unwrap(), "-b", jar.to_str().unwrap(), &authorize])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&browser.stdout).contains("Authorized"));
    for child in [&mut first, &mut second] {
        let answer = call_through(child);
        assert!(answer.contains("\"result\"") && !answer.contains("\"isError\":true"), "{answer}");
    }
    std::thread::sleep(Duration::from_millis(300));
    let urls = rx.try_iter().filter(|l| l.contains("code_challenge")).count();
    assert_eq!(urls, 0, "the second bridge asked for an authorization of its own");
    assert_eq!(auth.tokens("authorization_code"), 1, "one authorization for both bridges");
    for mut child in [first, second] {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A 2026-07-28 `tools/call` of `tool` at `url` with a bearer `token` (none when empty):
/// status, head, body.
fn call_with_token(url: &str, token: &str, tool: &str, arguments: Value) -> (u16, String, String) {
    let params = serde_json::json!({"name": tool, "arguments": arguments});
    request_with_token(url, token, "tools/call", params, Some(tool))
}

/// A 2026-07-28 request of `method` with `params` at `url` with a bearer `token` (none when
/// empty), `named` mirrored in `Mcp-Name`: status, head, body.
fn request_with_token(
    url: &str,
    token: &str,
    method: &str,
    mut params: Value,
    named: Option<&str>,
) -> (u16, String, String) {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}});
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(named) = named {
        headers.push(("mcp-name", named));
    }
    if !token.is_empty() {
        headers.push(("authorization", bearer.as_str()));
    }
    http_with_head("POST", url, &headers, &body.to_string())
}

#[test]
fn the_gateway_asks_a_scope_per_upstream_and_per_tool() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let auth = AuthServer::start(&["--resource", &format!("{url}=tools:use,tools:math")]);
    let servers =
        serde_json::json!({"ex": {"command": example(), "scopes": ["tools:use"], "toolScopes": {"sum": "tools:math"}}});
    let gateway = Gateway::launch(servers, &format!("127.0.0.1:{port}"), &["--auth-issuer", &auth.issuer], &[])
        .unwrap_or_else(|e| panic!("the gateway did not start: {e}"));
    assert_eq!(gateway.url, url);

    // No token: 401 with a challenge pointing at the gateway's metadata.
    let (status, head, _) = call_with_token(&url, "", "ex__echo", serde_json::json!({"text": "hi"}));
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("www-authenticate: bearer") && head.contains("resource_metadata="), "{head}");

    // The upstream's scope: its tools, but not the one that needs one more.
    let user = auth.machine_token("machine-basic", &url, "tools:use");
    let (status, _, body) = call_with_token(&url, &user, "ex__echo", serde_json::json!({"text": "through"}));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("through") && !body.contains("\"isError\":true"), "{body}");
    let (status, head, body) = call_with_token(&url, &user, "ex__sum", serde_json::json!({"a": 1, "b": 2}));
    assert_eq!(status, 403, "{body}");
    assert!(head.contains("error=\"insufficient_scope\"") && head.contains("tools:math"), "{head}");

    // With both scopes the tool answers.
    let both = auth.machine_token("machine-basic", &url, "tools:use tools:math");
    let (status, _, body) = call_with_token(&url, &both, "ex__sum", serde_json::json!({"a": 1, "b": 2}));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("1 + 2 = 3"), "{body}");

    // A token for another resource is no token for the gateway.
    let other = AuthServer::start(&["--resource", "http://127.0.0.1:1/mcp=tools:use"]);
    let foreign = other.machine_token("machine-basic", "http://127.0.0.1:1/mcp", "tools:use");
    let (status, _, _) = call_with_token(&url, &foreign, "ex__echo", serde_json::json!({"text": "x"}));
    assert_eq!(status, 401);
}

#[test]
fn an_upstreams_scopes_guard_its_resources_templates_prompts_and_completions_too() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let auth = AuthServer::start(&["--resource", &format!("{url}=tools:use,other,prompts:greet")]);
    let servers = serde_json::json!({"ex": {"command": example(), "scopes": ["tools:use"],
        "promptScopes": {"greet": "prompts:greet"}}});
    let gateway = Gateway::launch(servers, &format!("127.0.0.1:{port}"), &["--auth-issuer", &auth.issuer], &[])
        .unwrap_or_else(|e| panic!("the gateway did not start: {e}"));
    let greet_ref = serde_json::json!({"ref": {"type": "ref/prompt", "name": "ex__greet"}, "argument": {"name": "name", "value": "A"}});
    let template_ref = serde_json::json!({"ref": {"type": "ref/resource", "uri": "example://greeting/{name}"},
        "argument": {"name": "name", "value": "A"}});
    let requests: [(&str, Value, Option<&str>); 5] = [
        ("resources/read", serde_json::json!({"uri": "example://about"}), Some("example://about")),
        ("resources/read", serde_json::json!({"uri": "example://greeting/Ada"}), Some("example://greeting/Ada")),
        ("prompts/get", serde_json::json!({"name": "ex__greet", "arguments": {"name": "Ada"}}), Some("ex__greet")),
        ("completion/complete", greet_ref, None),
        ("completion/complete", template_ref, None),
    ];
    let outsider = auth.machine_token("machine-basic", &url, "other");
    let user = auth.machine_token("machine-basic", &url, "tools:use");
    let greeter = auth.machine_token("machine-basic", &url, "tools:use prompts:greet");
    for (method, params, named) in &requests {
        let (status, head, body) = request_with_token(&url, &outsider, method, params.clone(), *named);
        assert_eq!(status, 403, "{method} {params} without the upstream's scope: {head}\n{body}");
        assert!(head.contains("error=\"insufficient_scope\"") && head.contains("tools:use"), "{head}");
        let greeting = params.to_string().contains("ex__greet");
        let token = if greeting { &greeter } else { &user };
        let (status, _, body) = request_with_token(&url, token, method, params.clone(), *named);
        assert_eq!(status, 200, "{method} {params} with the scopes: {body}");
        assert!(!body.contains("\"error\""), "{method}: {body}");
    }
    // The prompt's own scope on top of the upstream's.
    let (status, head, _) = request_with_token(&url, &user, "prompts/get", requests[2].1.clone(), Some("ex__greet"));
    assert_eq!(status, 403, "{head}");
    assert!(head.contains("prompts:greet"), "{head}");
    drop(gateway);
}

#[test]
fn the_gateway_reaches_a_protected_upstream_with_the_tokens_mcp_login_stored() {
    let (auth, server) = setup(&[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("oauth.json");
    let out = login(&store, &server.url, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(auth.tokens("authorization_code"), 1);

    let servers = serde_json::json!({"pay": {"url": server.url}});
    let store_path = store.to_str().unwrap();
    let gateway = Gateway::launch(servers, "127.0.0.1:0", &[], &[("MCP_AUTH_FILE", store_path)])
        .unwrap_or_else(|e| panic!("the gateway did not start: {e}"));
    // A caller of the gateway (no token of its own: the gateway is not protected here) reaches
    // the protected upstream with the person's stored token; no new authorization is made.
    let out = run(&store, &["--url", &gateway.url, "call", "pay__iban_check", &format!("input={IBAN}")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("VALID"), "{}", text(&out));
    assert_eq!(auth.tokens("authorization_code"), 1, "the gateway made no authorization of its own");
    drop(gateway);
}
