//! The resource server on a real socket, with tokens minted here: every way a token can be
//! wrong, the challenges of every revision, the metadata at both well-known paths, scopes per
//! tool and resource (403 naming them all), the caller in handlers, sessions bound to their
//! subject, key rotation, introspection.

use std::sync::Arc;
use std::time::Duration;

use mcp::auth::{EitherVerifier, IntrospectionVerifier, JwksCache, JwksSource, JwtVerifier, ResourceServer};
use mcp::fetch::Fetcher;
use mcp::server::{NoArgs, RequestContext, ResourceRequest, Router, ToolDef, ToolError};
use mcp::transport::http::{serve_service, HttpConfig, McpService};
use serde_json::{json, Value};

use crate::auth_keys::{b64, now, Issuer, Key};
use crate::http::{rpc, send, Reply, CT, JSON_SSE, QUICK};
use crate::support::modern;

struct Protected {
    addr: String,
    resource: String,
    issuer: Issuer,
    key: Key,
}

fn base_router() -> Router {
    Router::new()
        .info("protected", "1.0.0")
        .require_scopes(&["mcp:basic"])
        .tool("whoami", "Says who calls.", |_: NoArgs, cx: RequestContext| async move {
            let caller = cx.caller().ok_or_else(|| ToolError::new("no caller"))?;
            Ok::<_, ToolError>(
                json!({"subject": caller.subject(), "client": caller.client_id(), "scopes": caller.scopes(), "issuer": caller.issuer(), "debug": format!("{caller:?}")})
                    .to_string(),
            )
        })
        .tool_def(ToolDef::new("write_file").description("Writes.").scopes(&["files:write"]), |_: NoArgs, _cx: RequestContext| async move {
            Ok::<_, ToolError>("written")
        })
        .resource("test://secret", "secret", |_r: ResourceRequest, _cx: RequestContext| async move {
            Ok::<_, ToolError>("the secret".to_owned())
        })
        .resource_scopes("test://secret", &["secret:read"])
}

async fn protected(configure: impl FnOnce(Router) -> Router) -> Protected {
    let key = Key::new("k1");
    let issuer = Issuer::start(vec![key.jwk()]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let resource = format!("http://{addr}/mcp");
    *issuer.audience.lock().unwrap() = resource.clone();
    let fetcher = Fetcher::new(&[]).unwrap();
    let keys = JwksCache::new(JwksSource::Issuer(issuer.url.clone()), fetcher.clone())
        .with_cooldown(Duration::from_millis(300));
    let jwt = JwtVerifier::new(&issuer.url, keys);
    let opaque = IntrospectionVerifier::new(format!("{}/introspect", issuer.url), "rs", "rs-secret", fetcher)
        .issuer(&issuer.url);
    let server = ResourceServer::new(EitherVerifier::new(Arc::new(jwt), Arc::new(opaque)))
        .authorization_server(&issuer.url)
        .resource(&resource);
    let router = configure(base_router());
    let layer = server.layer(&router);
    let service = tower_layer::Layer::layer(&layer, McpService::new(router, HttpConfig::default()));
    tokio::spawn(serve_service(listener, service, None));
    Protected { addr, resource, issuer, key }
}

impl Protected {
    fn claims(&self) -> Value {
        json!({"iss": self.issuer.url, "sub": "alice", "aud": self.resource, "exp": now() + 600, "iat": now(), "scope": "mcp:basic", "client_id": "c1"})
    }

    fn token_with(&self, changes: Value) -> String {
        let mut claims = self.claims();
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                claims.as_object_mut().unwrap().remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        self.key.sign(&claims)
    }

    fn metadata_url(&self) -> String {
        format!("http://{}/.well-known/oauth-protected-resource/mcp", self.addr)
    }

    /// A 2026-07-28 `tools/call` with `authorization` (a whole header value).
    async fn call_tool(&self, authorization: Option<&str>, tool: &str) -> Reply {
        let body = rpc(1, "tools/call", modern(json!({"name": tool, "arguments": {}})));
        let mut headers = vec![
            JSON_SSE,
            CT,
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
        ];
        if let Some(value) = authorization {
            headers.push(("Authorization", value));
        }
        send(&self.addr, "POST", "/mcp", &headers, &body.to_string(), QUICK).await
    }

    async fn call_with(&self, token: &str, tool: &str) -> Reply {
        self.call_tool(Some(&format!("Bearer {token}")), tool).await
    }
}

/// The `WWW-Authenticate` attributes of a reply.
fn challenge(reply: &Reply) -> String {
    reply
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("no challenge: {} {}", reply.status, reply.body))
        .to_owned()
}

fn assert_refused(reply: &Reply, status: u16, error: Option<&str>) {
    assert_eq!(reply.status, status, "{}", reply.body);
    let header = challenge(reply);
    assert!(header.starts_with("Bearer "), "{header}");
    match error {
        Some(error) => assert!(header.contains(&format!("error=\"{error}\"")), "{header}"),
        None => assert!(!header.contains("error="), "{header}"),
    }
    assert!(header.contains("resource_metadata=\""), "{header}");
}

#[tokio::test]
async fn a_request_without_a_valid_bearer_token_is_refused_with_a_challenge() {
    let p = protected(|r| r).await;
    let none = p.call_tool(None, "whoami").await;
    assert_refused(&none, 401, None);
    assert!(challenge(&none).contains(&format!("resource_metadata=\"{}\"", p.metadata_url())));
    assert!(challenge(&none).contains("scope=\"mcp:basic\""), "{}", challenge(&none));
    assert_refused(&p.call_tool(Some("Basic YWxpY2U6c2VjcmV0"), "whoami").await, 401, None);
    assert_refused(&p.call_tool(Some("foo"), "whoami").await, 401, None);
    assert_refused(&p.call_tool(Some("Bearer"), "whoami").await, 400, Some("invalid_request"));
    assert_refused(&p.call_tool(Some("Bearer two words"), "whoami").await, 400, Some("invalid_request"));
    assert_refused(&p.call_with("garbage", "whoami").await, 401, Some("invalid_token"));
    assert_refused(&p.call_with("a.b.c", "whoami").await, 401, Some("invalid_token"));
    // The same valid token works in the header:
    let good = p.call_with(&p.token_with(json!({})), "whoami").await;
    assert_eq!(good.status, 200, "{}", good.body);
}

#[tokio::test]
async fn forged_and_unsigned_tokens_are_refused() {
    let p = protected(|r| r).await;
    let claims = p.claims();
    // alg: none, with and without a signature part.
    let unsigned = format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), b64(claims.to_string().as_bytes()));
    assert_refused(&p.call_with(&unsigned, "whoami").await, 401, Some("invalid_token"));
    // Self-signed: another key claiming the issuer's key id, and one naming a key of its own.
    let other = Key::new("k1");
    assert_refused(&p.call_with(&other.sign(&claims), "whoami").await, 401, Some("invalid_token"));
    let stranger = Key::new("mine");
    assert_refused(&p.call_with(&stranger.sign(&claims), "whoami").await, 401, Some("invalid_token"));
    // HS256 with the issuer's public key as the secret (the algorithm-confusion attack).
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some("k1".into());
    let secret = jsonwebtoken::EncodingKey::from_secret(p.key.public_pem().as_bytes()).unwrap();
    let confused = jsonwebtoken::encode(&header, &claims, &secret).unwrap();
    assert_refused(&p.call_with(&confused, "whoami").await, 401, Some("invalid_token"));
    // A real token with its payload swapped.
    let real = p.token_with(json!({}));
    let parts: Vec<&str> = real.split('.').collect();
    let mut richer = claims.clone();
    richer["scope"] = json!("mcp:basic files:write");
    let tampered = format!("{}.{}.{}", parts[0], b64(richer.to_string().as_bytes()), parts[2]);
    assert_refused(&p.call_with(&tampered, "write_file").await, 401, Some("invalid_token"));
}

#[tokio::test]
async fn issuer_audience_and_times_are_checked() {
    let p = protected(|r| r).await;
    let cases = [
        ("wrong iss", json!({"iss": "https://evil.example"})),
        ("wrong aud", json!({"aud": "https://elsewhere.example/mcp"})),
        ("aud array without us", json!({"aud": ["https://a.example", "https://b.example/mcp"]})),
        ("no aud", json!({"aud": null})),
        ("expired", json!({"exp": now() - 3600})),
        ("nbf in the future", json!({"nbf": now() + 3600})),
        ("no exp", json!({"exp": null})),
        ("no sub", json!({"sub": null})),
    ];
    for (what, changes) in cases {
        let reply = p.call_with(&p.token_with(changes), "whoami").await;
        assert_eq!(reply.status, 401, "{what}: {}", reply.body);
        assert!(challenge(&reply).contains("error=\"invalid_token\""), "{what}");
    }
    let array_with_us = p.token_with(json!({"aud": ["https://a.example", p.resource.clone()]}));
    assert_eq!(p.call_with(&array_with_us, "whoami").await.status, 200);
    let trailing_slash = p.token_with(json!({"aud": format!("{}/", p.resource)}));
    assert_eq!(p.call_with(&trailing_slash, "whoami").await.status, 200, "the audience is compared in canonical form");
    let small_skew = p.token_with(json!({"nbf": now() + 5}));
    assert_eq!(p.call_with(&small_skew, "whoami").await.status, 200, "a few seconds of clock skew are allowed");
}

#[tokio::test]
async fn a_token_in_the_query_string_never_counts() {
    let p = protected(|r| r).await;
    let token = p.token_with(json!({}));
    let body = rpc(1, "tools/call", modern(json!({"name": "whoami", "arguments": {}})));
    let headers =
        [JSON_SSE, CT, ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "whoami")];
    let path = format!("/mcp?access_token={token}");
    let reply = send(&p.addr, "POST", &path, &headers, &body.to_string(), QUICK).await;
    assert_refused(&reply, 401, None);
    assert!(reply.body.contains("Authorization header"), "{}", reply.body);
}

#[tokio::test]
async fn missing_scopes_get_403_naming_every_scope_the_request_needs() {
    let p = protected(|r| r).await;
    let basic = p.token_with(json!({}));
    let reply = p.call_with(&basic, "write_file").await;
    assert_refused(&reply, 403, Some("insufficient_scope"));
    assert!(challenge(&reply).contains("scope=\"mcp:basic files:write\""), "{}", challenge(&reply));
    let none = p.token_with(json!({"scope": null}));
    let reply = p.call_with(&none, "write_file").await;
    assert_refused(&reply, 403, Some("insufficient_scope"));
    assert!(challenge(&reply).contains("scope=\"mcp:basic files:write\""));
    let writer = p.token_with(json!({"scope": "mcp:basic files:write"}));
    let reply = p.call_with(&writer, "write_file").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "written");
    // A resource's scopes.
    let read = rpc(2, "resources/read", modern(json!({"uri": "test://secret"})));
    let headers = |t: &'static str| {
        vec![
            JSON_SSE,
            CT,
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "test://secret"),
            ("Authorization", t),
        ]
    };
    let bearer: &'static str = Box::leak(format!("Bearer {writer}").into_boxed_str());
    let reply = send(&p.addr, "POST", "/mcp", &headers(bearer), &read.to_string(), QUICK).await;
    assert_refused(&reply, 403, Some("insufficient_scope"));
    assert!(challenge(&reply).contains("scope=\"mcp:basic secret:read\""));
}

#[tokio::test]
async fn a_scope_hierarchy_lets_a_broad_scope_stand_for_narrow_ones() {
    let p = protected(|r| r.scope_hierarchy(|granted, needed| needed.starts_with(&format!("{granted}:")))).await;
    let broad = p.token_with(json!({"scope": "mcp:basic files"}));
    assert_eq!(p.call_with(&broad, "write_file").await.status, 200);
    let unrelated = p.token_with(json!({"scope": "mcp:basic mail"}));
    assert_eq!(p.call_with(&unrelated, "write_file").await.status, 403);
}

#[tokio::test]
async fn handlers_see_the_caller_but_not_its_token() {
    let p = protected(|r| r).await;
    let token = p.token_with(json!({"sub": "alice@example.com"}));
    let reply = p.call_with(&token, "whoami").await;
    let text = reply.json()["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    let who: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(who["subject"], "alice@example.com");
    assert_eq!(who["client"], "c1");
    assert_eq!(who["scopes"], json!(["mcp:basic"]));
    assert_eq!(who["issuer"], json!(p.issuer.url));
    assert!(!who["debug"].as_str().unwrap().contains(&token), "Debug never prints the token");
}

#[tokio::test]
async fn tools_list_can_show_only_what_the_token_may_call() {
    let p = protected(|r| r.list_only_permitted_tools()).await;
    let list = |token: String| {
        let addr = p.addr.clone();
        async move {
            let body = rpc(1, "tools/list", modern(json!({})));
            let bearer = format!("Bearer {token}");
            let headers = [
                JSON_SSE,
                CT,
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/list"),
                ("Authorization", bearer.as_str()),
            ];
            let reply = send(&addr, "POST", "/mcp", &headers, &body.to_string(), QUICK).await;
            let names: Vec<String> = reply.json()["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect();
            names
        }
    };
    assert_eq!(list(p.token_with(json!({}))).await, ["whoami"]);
    assert_eq!(list(p.token_with(json!({"scope": "mcp:basic files:write"}))).await, ["whoami", "write_file"]);
}

#[tokio::test]
async fn protected_resource_metadata_is_served_at_both_well_known_paths() {
    let p = protected(|r| r).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource/mcp/",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/",
    ] {
        let reply = send(&p.addr, "GET", path, &[], "", QUICK).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
        let doc = reply.json();
        assert_eq!(doc["resource"], json!(p.resource), "{path}");
        assert_eq!(doc["authorization_servers"], json!([p.issuer.url]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["scopes_supported"], json!(["files:write", "mcp:basic", "secret:read"]));
    }
    assert_eq!(send(&p.addr, "GET", "/.well-known/oauth-protected-resource/other", &[], "", QUICK).await.status, 404);
    assert_eq!(send(&p.addr, "OPTIONS", "/.well-known/oauth-protected-resource/mcp", &[], "", QUICK).await.status, 204);
}

#[tokio::test]
async fn every_revision_gets_the_401_challenge() {
    let p = protected(|r| r).await;
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let init = rpc(
            1,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        let reply = send(&p.addr, "POST", "/mcp", &[JSON_SSE, CT], &init.to_string(), QUICK).await;
        assert_refused(&reply, 401, None);
    }
    let modern_reply = p.call_tool(None, "whoami").await;
    assert_refused(&modern_reply, 401, None);
    // 2024-11-05: the event stream and its message endpoint.
    let sse = send(&p.addr, "GET", "/sse", &[("Accept", "text/event-stream")], "", QUICK).await;
    assert_refused(&sse, 401, None);
    let get = send(&p.addr, "GET", "/mcp", &[("Accept", "text/event-stream")], "", QUICK).await;
    assert_refused(&get, 401, None);
    let message = send(&p.addr, "POST", "/mcp?sessionId=abc", &[CT], "{}", QUICK).await;
    assert_refused(&message, 401, None);
}

#[tokio::test]
async fn a_legacy_session_belongs_to_the_subject_that_opened_it() {
    let p = protected(|r| r).await;
    let alice = format!("Bearer {}", p.token_with(json!({"sub": "alice"})));
    let bob = format!("Bearer {}", p.token_with(json!({"sub": "bob"})));
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let reply =
        send(&p.addr, "POST", "/mcp", &[JSON_SSE, CT, ("Authorization", &alice)], &init.to_string(), QUICK).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let sid = reply.header("mcp-session-id").unwrap().to_owned();
    let call = rpc(2, "tools/call", json!({"name": "whoami", "arguments": {}}));
    let on = |who: &'static str| -> Vec<(&'static str, &'static str)> {
        let sid: &'static str = Box::leak(sid.clone().into_boxed_str());
        vec![JSON_SSE, CT, ("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25"), ("Authorization", who)]
    };
    let alice: &'static str = Box::leak(alice.into_boxed_str());
    let bob: &'static str = Box::leak(bob.into_boxed_str());
    let mine = send(&p.addr, "POST", "/mcp", &on(alice), &call.to_string(), QUICK).await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    let theirs = send(&p.addr, "POST", "/mcp", &on(bob), &call.to_string(), QUICK).await;
    assert_eq!(theirs.status, 404, "another subject is told the session does not exist: {}", theirs.body);
    let delete = send(&p.addr, "DELETE", "/mcp", &on(bob), "", QUICK).await;
    assert_eq!(delete.status, 404, "nor may it end it");
    assert_eq!(send(&p.addr, "POST", "/mcp", &on(alice), &call.to_string(), QUICK).await.status, 200);
}

#[tokio::test]
async fn keys_are_fetched_once_and_again_when_the_issuer_rotates_them() {
    let p = protected(|r| r).await;
    let token = p.token_with(json!({}));
    for _ in 0..20 {
        assert_eq!(p.call_with(&token, "whoami").await.status, 200);
    }
    assert_eq!(p.issuer.fetches(), 1, "the keys are cached, and verified tokens too");
    // The issuer rotates: a new key, the old one gone.
    let next = Key::new("k2");
    *p.issuer.keys.lock().unwrap() = vec![next.jwk()];
    let mut claims = p.claims();
    claims["jti"] = json!("after-rotation");
    let rotated = next.sign(&claims);
    assert_eq!(p.call_with(&rotated, "whoami").await.status, 200, "an unknown kid fetches the keys again");
    assert_eq!(p.issuer.fetches(), 2);
    // Unknown key ids within the cool-down do not make us hammer the issuer.
    for i in 0..10 {
        let stranger = Key::new(&format!("x{i}"));
        assert_eq!(p.call_with(&stranger.sign(&claims), "whoami").await.status, 401);
    }
    assert!(p.issuer.fetches() <= 3, "{} fetches", p.issuer.fetches());
}

#[tokio::test]
async fn opaque_tokens_are_checked_by_introspection_and_their_audience_too() {
    let p = protected(|r| r).await;
    let good = p.call_with("opaque-good", "whoami").await;
    assert_eq!(good.status, 200, "{}", good.body);
    let text = good.json()["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("carol"), "{text}");
    assert_refused(&p.call_with("opaque-other", "whoami").await, 401, Some("invalid_token"));
    assert_refused(&p.call_with("opaque-revoked", "whoami").await, 401, Some("invalid_token"));
}

#[tokio::test]
async fn a_batch_needs_the_scopes_of_all_its_calls() {
    let p = protected(|r| r).await;
    let token = format!("Bearer {}", p.token_with(json!({"sub": "dana"})));
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let reply =
        send(&p.addr, "POST", "/mcp", &[JSON_SSE, CT, ("Authorization", &token)], &init.to_string(), QUICK).await;
    let sid = reply.header("mcp-session-id").unwrap().to_owned();
    let batch = json!([
        rpc(2, "tools/call", json!({"name": "whoami", "arguments": {}})),
        rpc(3, "tools/call", json!({"name": "write_file", "arguments": {}})),
    ]);
    let headers = [JSON_SSE, CT, ("Mcp-Session-Id", sid.as_str()), ("Authorization", token.as_str())];
    let reply = send(&p.addr, "POST", "/mcp", &headers, &batch.to_string(), QUICK).await;
    assert_refused(&reply, 403, Some("insufficient_scope"));
    assert!(challenge(&reply).contains("files:write"));
}

/// The resource server reads a message with the endpoint's own reader: a key given twice, which
/// its peek once read one way and the endpoint another, is refused (by the endpoint, for every
/// caller), and nothing runs.
#[tokio::test]
async fn a_key_given_twice_is_refused_behind_the_resource_server() {
    let p = protected(|r| r).await;
    let writer = format!("Bearer {}", p.token_with(json!({"scope": "mcp:basic files:write"})));
    let meta = modern(json!({}))["_meta"].to_string();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{{"name":"write_file","arguments":{{}},"_meta":{meta}}}}}"#
    );
    let headers = [
        JSON_SSE,
        CT,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "write_file"),
        ("Authorization", writer.as_str()),
    ];
    let reply = send(&p.addr, "POST", "/mcp", &headers, &body, QUICK).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], -32600, "{}", reply.body);
    assert!(reply.body.contains("appears more than once"), "{}", reply.body);
    assert!(!reply.body.contains("written"), "the tool ran: {}", reply.body);
    // The same in a batch of a 2025-03-26 session is refused item by item.
    let batch =
        r#"[{"jsonrpc":"2.0","id":2,"id":3,"method":"tools/call","params":{"name":"write_file","arguments":{}}}]"#
            .to_string();
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}),
    );
    let auth = [JSON_SSE, CT, ("Authorization", writer.as_str())];
    let reply = send(&p.addr, "POST", "/mcp", &auth, &init.to_string(), QUICK).await;
    let sid = reply.header("mcp-session-id").expect("a session").to_owned();
    let in_session = [JSON_SSE, CT, ("Authorization", writer.as_str()), ("Mcp-Session-Id", sid.as_str())];
    let reply = send(&p.addr, "POST", "/mcp", &in_session, &batch, QUICK).await;
    assert!(!reply.body.contains("written"), "the tool ran: {}", reply.body);
}

/// An audit log kept in memory, read as JSON lines.
#[derive(Clone, Default)]
struct AuditBuffer(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for AuditBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl AuditBuffer {
    fn lines(&self) -> Vec<Value> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The lines once there are `n` (the log's own thread writes them, just after each answer).
    async fn at_least(&self, n: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + QUICK;
        while self.lines().len() < n && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.lines()
    }
}

/// Reads a 2024-11-05 event stream until it holds `needle`.
async fn read_until(stream: &mut tokio::net::TcpStream, seen: &mut String, needle: &str) {
    use tokio::io::AsyncReadExt as _;
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        let n = tokio::time::timeout(QUICK, stream.read(&mut buf)).await.expect("the stream answers in time").unwrap();
        assert!(n > 0, "the stream ended before {needle:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

#[tokio::test]
async fn the_audit_log_names_initialize_and_the_subject_on_both_http_transports() {
    use tokio::io::AsyncWriteExt as _;
    let audit = AuditBuffer::default();
    let log = audit.clone();
    let p = protected(move |r| r.layer(mcp::middleware::AuditLog::to_writer(log))).await;
    let alice = format!("Bearer {}", p.token_with(json!({"sub": "alice"})));
    let bob = format!("Bearer {}", p.token_with(json!({"sub": "bob"})));

    // Streamable HTTP, a 2025-11-25 session: initialize, then a call.
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "audited-client", "version": "4.2"}}),
    );
    let reply =
        send(&p.addr, "POST", "/mcp", &[JSON_SSE, CT, ("Authorization", &alice)], &init.to_string(), QUICK).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let sid = reply.header("mcp-session-id").unwrap().to_owned();
    let call = rpc(2, "tools/call", json!({"name": "whoami", "arguments": {}}));
    let headers = [
        JSON_SSE,
        CT,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Authorization", &alice),
    ];
    assert_eq!(send(&p.addr, "POST", "/mcp", &headers, &call.to_string(), QUICK).await.status, 200);

    // The 2024-11-05 transport: the stream opened with bob's token, initialize and a call posted.
    let mut stream = tokio::net::TcpStream::connect(&p.addr).await.unwrap();
    let get =
        format!("GET /sse HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nAuthorization: {bob}\r\n\r\n", p.addr);
    stream.write_all(get.as_bytes()).await.unwrap();
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "sessionId=").await;
    let endpoint = seen.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().trim().to_owned();
    let old_init = rpc(
        7,
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old-client", "version": "0.9"}}),
    );
    let posted = [CT, ("Authorization", bob.as_str())];
    assert_eq!(send(&p.addr, "POST", &endpoint, &posted, &old_init.to_string(), QUICK).await.status, 202);
    read_until(&mut stream, &mut seen, "\"protocolVersion\":\"2024-11-05\"").await;
    let old_call = rpc(8, "tools/call", json!({"name": "whoami", "arguments": {}}));
    assert_eq!(send(&p.addr, "POST", &endpoint, &posted, &old_call.to_string(), QUICK).await.status, 202);
    read_until(&mut stream, &mut seen, "\"id\":8").await;

    let lines = audit.at_least(4).await;
    let summary: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["method"].as_str().unwrap().into(),
                l["protocolVersion"].as_str().unwrap().into(),
                l["subject"].as_str().unwrap_or("-").into(),
            )
        })
        .collect();
    let expected = [
        ("initialize", "2025-11-25", "alice"),
        ("tools/call", "2025-11-25", "alice"),
        ("initialize", "2024-11-05", "bob"),
        ("tools/call", "2024-11-05", "bob"),
    ];
    let expected: Vec<(String, String, String)> =
        expected.iter().map(|(m, v, s)| (m.to_string(), v.to_string(), s.to_string())).collect();
    assert_eq!(summary, expected, "{lines:#?}");
    assert_eq!(lines[0]["client"], json!({"name": "audited-client", "version": "4.2"}));
    assert_eq!(lines[2]["client"], json!({"name": "old-client", "version": "0.9"}));
    assert_eq!(lines[0]["clientId"], "c1");
    assert!(lines.iter().all(|l| l["outcome"] == "ok"), "{lines:#?}");
    let text = String::from_utf8(audit.0.lock().unwrap().clone()).unwrap();
    assert!(!text.contains(alice.trim_start_matches("Bearer ")), "the token never reaches the log");
}

#[tokio::test]
async fn a_refused_initialize_opens_no_session_and_is_logged() {
    let audit = AuditBuffer::default();
    let log = audit.clone();
    let p = protected(move |r| r.layer(mcp::middleware::AuditLog::to_writer(log))).await;
    let alice = format!("Bearer {}", p.token_with(json!({"sub": "alice"})));
    let bad = rpc(1, "initialize", json!({"protocolVersion": 7}));
    let reply =
        send(&p.addr, "POST", "/mcp", &[JSON_SSE, CT, ("Authorization", &alice)], &bad.to_string(), QUICK).await;
    assert_eq!(reply.json()["error"]["code"], -32602, "{}", reply.body);
    assert!(reply.header("mcp-session-id").is_none(), "no session for a refused initialize");
    let lines = audit.at_least(1).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!((lines[0]["method"].as_str(), lines[0]["outcome"].as_str()), (Some("initialize"), Some("error")));
    assert_eq!(lines[0]["errorCode"], -32602);
    assert_eq!(lines[0]["subject"], "alice");
}
