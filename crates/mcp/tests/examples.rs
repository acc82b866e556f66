//! Every example of `crates/mcp/examples/` run as a host runs it: its binary started as a child
//! process, spoken to over real pipes, in both eras where the example is about them; an HTTP
//! one (`http_scopes`) served on a real socket and spoken to with tokens signed here.
//!
//! The binaries are the ones `cargo test` builds beside this test
//! (`target/debug/examples/NAME`); with `--test examples` alone, build them first
//! (`cargo build -p mcp-stack --examples`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::client::{Client, ClientOptions, Handlers, StdioCommand, ToolCall};
use mcp::testing::{assert_tool_error, assert_tool_ok};
use mcp::types::completion::{CompletionArgument, CompletionRef};
use mcp::types::elicitation::{ElicitAction, ElicitResult};
use mcp::types::tasks::TaskStatus;
use serde_json::{json, Value};

/// The path of example `name`'s binary, which must exist.
fn example(name: &str) -> String {
    let exe = std::env::current_exe().expect("the test's path");
    let dir: PathBuf = exe.parent().and_then(|deps| deps.parent()).expect("target/debug").join("examples");
    let path = dir.join(name);
    assert!(path.exists(), "{} is not built: run `cargo build -p mcp-stack --examples` first", path.display());
    path.to_string_lossy().into_owned()
}

/// A client of example `name`, in the 2026-07-28 era or (`legacy`) after `initialize`.
async fn connect(name: &str, legacy: bool, handlers: Handlers) -> Client {
    let options = ClientOptions { legacy_only: legacy, handlers, ..ClientOptions::default() };
    Client::connect_stdio(StdioCommand::new(example(name)), options).await.expect("the example starts and answers")
}

fn text_of_read(result: &Value) -> &str {
    result["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("a text resource: {result}"))
}

#[tokio::test]
async fn calculator_adds_in_both_eras() {
    for legacy in [false, true] {
        let client = connect("calculator", legacy, Handlers::default()).await;
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["sum"]);
        assert_eq!(assert_tool_ok(&client.call_tool("sum", json!({"a": 2, "b": 3})).await.unwrap()), "2 + 3 = 5");
        assert_tool_error(&client.call_tool("sum", json!({"a": 2})).await.unwrap(), "\"b\" is a required property");
        client.close().await;
    }
}

#[tokio::test]
async fn notes_keeps_its_state_across_calls_and_tells_subscribers() {
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let sink = seen.clone();
    let options = ClientOptions {
        legacy_only: true, // resources/subscribe is a session's
        on_notification: Some(Arc::new(move |method: &str, params: &Value| {
            sink.lock().unwrap().push((method.to_owned(), params.clone()))
        })),
        ..ClientOptions::default()
    };
    let client = Client::connect_stdio(StdioCommand::new(example("notes")), options).await.unwrap();
    assert!(assert_tool_ok(&client.call_tool("list_notes", json!({})).await.unwrap()).contains("empty"));
    client.request("resources/subscribe", json!({"uri": "notes://all"})).await.unwrap();
    for (text, count) in [("milk", 1), ("eggs", 2)] {
        let answer = assert_tool_ok(&client.call_tool("add_note", json!({"text": text})).await.unwrap());
        assert_eq!(answer, format!("noted; the notebook holds {count} notes"));
    }
    assert_eq!(assert_tool_ok(&client.call_tool("list_notes", json!({})).await.unwrap()), "1. milk\n2. eggs");
    let read = client.request("resources/read", json!({"uri": "notes://all"})).await.unwrap();
    assert_eq!(text_of_read(&read), "milk\neggs");
    assert_tool_error(&client.call_tool("add_note", json!({"text": "a\nb"})).await.unwrap(), "one line");
    let updated = |seen: &[(String, Value)]| {
        seen.iter().filter(|(m, p)| m == "notifications/resources/updated" && p["uri"] == "notes://all").count()
    };
    for _ in 0..100 {
        if updated(&seen.lock().unwrap()) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(updated(&seen.lock().unwrap()), 2, "one update per note added: {:?}", seen.lock().unwrap());
    client.close().await;
}

#[tokio::test]
async fn structured_declares_its_output_schema_and_answers_with_it() {
    let client = connect("structured", false, Handlers::default()).await;
    let tools = client.list_tools().await.unwrap();
    let schema = tools[0].output_schema.as_ref().expect("an outputSchema derived from Stats");
    assert!(schema["properties"]["words"].is_object(), "{schema:?}");
    let result = client.call_tool("word_stats", json!({"text": "the quick brownish fox"})).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"words": 4, "characters": 22, "longest": "brownish"})));
    client.close().await;
}

/// A client that answers the booking question with `answer` (an `accept` with these values), or
/// declines when it is `None`.
fn answering(answer: Option<Value>) -> Handlers {
    Handlers {
        elicitation: Some(Arc::new(move |params| {
            let answer = answer.clone();
            Box::pin(async move {
                let asked = serde_json::to_value(&params).unwrap();
                assert!(asked["message"].as_str().unwrap().contains("Chez Nous"), "{asked}");
                Ok(match answer {
                    Some(Value::Object(values)) => ElicitResult {
                        result_type: None,
                        action: ElicitAction::Accept,
                        content: Some(values),
                        meta: None,
                    },
                    _ => ElicitResult { result_type: None, action: ElicitAction::Decline, content: None, meta: None },
                })
            })
        })),
        ..Handlers::default()
    }
}

#[tokio::test]
async fn elicitation_asks_the_user_in_both_eras() {
    for legacy in [false, true] {
        let client = connect("elicitation", legacy, answering(Some(json!({"guests": 4, "name": "Ada"})))).await;
        let result = client.call_tool("book_table", json!({"restaurant": "Chez Nous"})).await.unwrap();
        assert_eq!(assert_tool_ok(&result), "booked: Ada at Chez Nous for 4 guests", "legacy: {legacy}");
        client.close().await;
        let client = connect("elicitation", legacy, answering(None)).await;
        let result = client.call_tool("book_table", json!({"restaurant": "Chez Nous"})).await.unwrap();
        assert_eq!(assert_tool_ok(&result), "the user declined: nothing was booked", "legacy: {legacy}");
        client.close().await;
    }
}

#[tokio::test]
async fn progress_is_reported_and_a_cancelled_call_stops() {
    let client = connect("progress", false, Handlers::default()).await;
    let steps: Arc<Mutex<Vec<f64>>> = Arc::default();
    let sink = steps.clone();
    let result = client
        .call_tool_with_progress("count_to", json!({"to": 5, "every_ms": 1}), move |p| {
            sink.lock().unwrap().push(p.progress)
        })
        .await
        .unwrap();
    assert_eq!(assert_tool_ok(&result), "counted to 5");
    assert_eq!(*steps.lock().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0]);
    // Stop waiting for a long count: the client sends notifications/cancelled, the tool stops.
    let long = client.call_tool("count_to", json!({"to": 10000, "every_ms": 10}));
    assert!(tokio::time::timeout(Duration::from_millis(300), long).await.is_err(), "10000 steps take 100 s");
    let mut said = String::new();
    for _ in 0..250 {
        said = client.stderr();
        if said.contains("count_to: cancelled at") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(said.contains("count_to: cancelled at") && said.contains("of 10000"), "stderr: {said}");
    assert_eq!(assert_tool_ok(&client.call_tool("count_to", json!({"to": 1})).await.unwrap()), "counted to 1");
    client.close().await;
}

#[tokio::test]
async fn completion_offers_the_template_variables_values() {
    let client = connect("completion", false, Handlers::default()).await;
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "weather://{city}");
    let reference = CompletionRef::Resource { uri: "weather://{city}".into() };
    let offered =
        client.complete(reference, CompletionArgument { name: "city".into(), value: "Pa".into() }).await.unwrap();
    assert_eq!(offered.completion.values, ["paris", "parma"]);
    let read = client.request("resources/read", json!({"uri": "weather://porto"})).await.unwrap();
    assert_eq!(text_of_read(&read), "porto: windy, 17 °C");
    let unknown = client.request("resources/read", json!({"uri": "weather://oslo"})).await;
    let message = unknown.expect_err("no forecast for oslo").to_string();
    assert!(message.contains("no forecast for \"oslo\""), "{message}");
    client.close().await;
}

#[test]
fn client_calls_a_server_it_starts() {
    let out = std::process::Command::new(example("client"))
        .args([example("calculator").as_str(), "sum", r#"{"a": 2, "b": 3}"#])
        .output()
        .expect("the client example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, "tool sum: Adds two numbers. Call this for any addition.\nsum answered: 2 + 3 = 5\n");
    let out = std::process::Command::new(example("client")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: client SERVER"));
}

/// The names of the tools `client` sees, sorted.
async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

/// A report of 100 sections of 200 ms: 20 s, far longer than any test waits.
fn long_report() -> Value {
    json!({"topic": "glaciers", "sections": 100, "ms_per_section": 200})
}

#[tokio::test]
async fn task_job_runs_a_report_as_a_task_followed_polled_capped_and_cancelled() {
    let client = connect("task_job", false, Handlers::default()).await;
    assert_eq!(tool_names(&client).await, ["report"], "a client that follows tasks sees no job tools");
    // `call_tool` follows the task to its end; each new status comes as progress.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    let args = json!({"topic": "tides", "sections": 3, "ms_per_section": 200});
    let result = client
        .call_tool_with_progress("report", args, move |p| sink.lock().unwrap().push(p.message.unwrap_or_default()))
        .await
        .unwrap();
    let expected = "Report on tides\n1. tides (section 1)\n2. tides (section 2)\n3. tides (section 3)";
    assert_eq!(assert_tool_ok(&result), expected);
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|m| m.starts_with("task working")), "the call became a task: {seen:?}");
    assert!(seen.last().is_some_and(|m| m.starts_with("task completed")), "{seen:?}");

    // Started without waiting: two long reports become tasks, the third is refused at once.
    let mut ids = Vec::new();
    for _ in 0..2 {
        match client.start_tool("report", long_report()).await.unwrap() {
            ToolCall::Task(task) => {
                assert_eq!(task.status, TaskStatus::Working);
                ids.push(task.id);
            }
            ToolCall::Done(result) => panic!("a 20 s report answered at once: {result:?}"),
        }
    }
    let ToolCall::Done(busy) = client.start_tool("report", long_report()).await.unwrap() else {
        panic!("a third report started past the cap of 2")
    };
    assert_tool_error(&busy, "2 jobs running for this account (the limit is 2): retry in about");
    // Polled, a task says how far it got (its progress is its status message).
    let mut task = client.get_task(&ids[0]).await.unwrap();
    for _ in 0..100 {
        if task.message.as_deref().is_some_and(|m| m.starts_with("wrote section")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        task = client.get_task(&ids[0]).await.unwrap();
    }
    assert_eq!(task.status, TaskStatus::Working);
    assert!(task.message.as_deref().is_some_and(|m| m.ends_with(" of 100")), "{task:?}");
    // Cancelled, it reads cancelled at once and its place is free for another report.
    client.cancel_task(&ids[0]).await.unwrap();
    assert_eq!(client.get_task(&ids[0]).await.unwrap().status, TaskStatus::Cancelled);
    let ToolCall::Task(again) = client.start_tool("report", long_report()).await.unwrap() else {
        panic!("the cancel freed no place")
    };
    for id in [&ids[1], &again.id] {
        client.cancel_task(id).await.unwrap();
    }
    client.close().await;
}

#[tokio::test]
async fn task_job_tasks_are_listed_in_2025_11_25() {
    let client = connect("task_job", true, Handlers::default()).await;
    let ToolCall::Task(task) = client.start_tool("report", long_report()).await.unwrap() else {
        panic!("a 20 s report answered at once")
    };
    let listed = client.list_tasks().await.unwrap();
    assert!(listed.iter().any(|t| t.id == task.id && t.status == TaskStatus::Working), "{listed:?}");
    client.cancel_task(&task.id).await.unwrap();
    let listed = client.list_tasks().await.unwrap();
    assert!(listed.iter().any(|t| t.id == task.id && t.status == TaskStatus::Cancelled), "{listed:?}");
    client.close().await;
}

#[tokio::test]
async fn task_job_offers_job_tools_to_a_client_that_follows_no_task() {
    let options = ClientOptions { tasks: false, ..ClientOptions::default() };
    let client = Client::connect_stdio(StdioCommand::new(example("task_job")), options).await.unwrap();
    assert_eq!(tool_names(&client).await, ["report", "report_cancel", "report_list", "report_status"]);
    let started = assert_tool_ok(&client.call_tool("report", long_report()).await.unwrap());
    let job = started.strip_prefix("Started job ").and_then(|s| s.split(' ').next()).unwrap_or_else(|| {
        panic!("no job id: {started}");
    });
    assert!(started.contains("call report_status with"), "{started}");
    let status = assert_tool_ok(&client.call_tool("report_status", json!({"job_id": job})).await.unwrap());
    assert!(status.starts_with(&format!("Job {job} is working")), "{status}");
    let listed = assert_tool_ok(&client.call_tool("report_list", json!({})).await.unwrap());
    assert!(listed.contains(&format!("{job} working")), "{listed}");
    let cancelled = assert_tool_ok(&client.call_tool("report_cancel", json!({"job_id": job})).await.unwrap());
    assert!(cancelled.starts_with(&format!("Job {job} was cancelled")), "{cancelled}");
    client.close().await;
}

/// `http_scopes` on a real socket behind the resource server, with tokens signed here and the
/// signing key published as a JWKS on a loopback port of the test's.
#[cfg(all(feature = "cli", feature = "auth", feature = "client-http"))]
mod http_scopes {
    use base64::Engine as _;
    use mcp::fetch::{Fetched, Fetcher};
    use mcp::testing::HttpServer;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// The authorization server, as far as the resource server sees it: an ES256 key whose
    /// public half is served at `{url}/jwks`.
    struct Issuer {
        url: String,
        key: rcgen::KeyPair,
    }

    impl Issuer {
        async fn start() -> Issuer {
            let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
            let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
            let raw = key.public_key_raw(); // 0x04 || x || y
            let jwk = json!({"kty": "EC", "crv": "P-256", "x": b64(&raw[1..33]), "y": b64(&raw[33..65]), "kid": "k1", "alg": "ES256", "use": "sig"});
            let jwks = json!({ "keys": [jwk] }).to_string();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            tokio::spawn(async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    let jwks = jwks.clone();
                    tokio::spawn(async move {
                        let mut head = Vec::new();
                        let mut buf = [0u8; 1024];
                        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                            match stream.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => head.extend_from_slice(&buf[..n]),
                            }
                        }
                        let (status, body) = if head.starts_with(b"GET /jwks ") {
                            ("200 OK", jwks.as_str())
                        } else {
                            ("404 Not Found", "")
                        };
                        let answer = format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = stream.write_all(answer.as_bytes()).await;
                        let _ = stream.shutdown().await;
                    });
                }
            });
            Issuer { url, key }
        }

        /// An access token for `subject` with `scope` (space-separated), for the server at
        /// `audience`, valid ten minutes.
        fn token(&self, subject: &str, audience: &str, scope: &str) -> String {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
            let claims = json!({"iss": self.url, "sub": subject, "aud": audience, "scope": scope, "client_id": "examples", "iat": now, "exp": now + 600});
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
            header.kid = Some("k1".into());
            header.typ = Some("at+jwt".into());
            let key = jsonwebtoken::EncodingKey::from_ec_pem(self.key.serialize_pem().as_bytes()).unwrap();
            jsonwebtoken::encode(&header, &claims, &key).unwrap()
        }
    }

    /// `example http_scopes --http 127.0.0.1:0` trusting `issuer`'s keys.
    fn start(issuer: &Issuer) -> HttpServer {
        let jwks = format!("{}/jwks", issuer.url);
        HttpServer::start(example("http_scopes"), &["--auth-issuer", &issuer.url, "--auth-jwks", &jwks])
            .expect("the example serves HTTP")
    }

    /// A client sending `token` with every request.
    async fn client(server: &HttpServer, token: &str) -> Client {
        let headers = vec![("Authorization".into(), format!("Bearer {token}"))];
        Client::connect_http(server.url(), ClientOptions { headers, ..ClientOptions::default() })
            .await
            .unwrap_or_else(|e| panic!("{e}; the server said: {}", server.stderr()))
    }

    /// A raw `tools/call` of `tool`, with `token` if any: what the resource server answers
    /// before the request reaches the MCP endpoint.
    async fn raw_call(server: &HttpServer, token: Option<&str>, tool: &str) -> Fetched {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}}});
        let mut headers = vec![("accept", "application/json, text/event-stream".to_owned())];
        if let Some(token) = token {
            headers.push(("authorization", format!("Bearer {token}")));
        }
        Fetcher::new(&[]).unwrap().post_json(server.url(), &body, &headers).await.unwrap()
    }

    fn challenge(reply: &Fetched) -> String {
        let header = reply.headers.get("www-authenticate").unwrap_or_else(|| panic!("no challenge: {reply:?}"));
        header.to_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn http_scopes_refuses_missing_tokens_and_scopes_and_serves_the_rest() {
        let issuer = Issuer::start().await;
        let server = start(&issuer);
        let audience = server.url().to_owned(); // the resource URI defaults to the URL served

        // (a) No token: 401 and a challenge pointing at the protected resource metadata, which
        // names the issuer and every scope the tools declare.
        let none = raw_call(&server, None, "read_notes").await;
        assert_eq!(none.status, 401, "{none:?}");
        let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", audience.trim_end_matches("/mcp"));
        let header = challenge(&none);
        assert!(header.starts_with("Bearer "), "{header}");
        assert!(header.contains(&format!("resource_metadata=\"{metadata_url}\"")), "{header}");
        let metadata = Fetcher::new(&[]).unwrap().get(&metadata_url, &[]).await.unwrap().json().unwrap();
        assert_eq!(metadata["resource"], audience);
        assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
        assert_eq!(metadata["scopes_supported"], json!(["notes:read", "notes:write"]));
        // A token for another server is refused too (its audience is not this one).
        let elsewhere = issuer.token("alice", "http://127.0.0.1:1/mcp", "notes:read");
        let reply = raw_call(&server, Some(&elsewhere), "read_notes").await;
        assert_eq!(reply.status, 401);
        assert!(challenge(&reply).contains("error=\"invalid_token\""), "{}", challenge(&reply));

        // (b) notes:read alone: reading works, writing gets 403 insufficient_scope naming the
        // scope, and the write tool is not even listed.
        let read_only = issuer.token("alice", &audience, "notes:read");
        let reader = client(&server, &read_only).await;
        assert_eq!(tool_names(&reader).await, ["read_notes"]);
        let read = reader.call_tool("read_notes", json!({})).await.unwrap();
        assert_eq!(assert_tool_ok(&read), "the notebook is empty");
        let refused = reader.call_tool("add_note", json!({"text": "hello"})).await.expect_err("no notes:write");
        assert!(refused.to_string().contains("403") && refused.to_string().contains("insufficient_scope"), "{refused}");
        let reply = raw_call(&server, Some(&read_only), "add_note").await;
        assert_eq!(reply.status, 403, "{reply:?}");
        let header = challenge(&reply);
        assert!(
            header.contains("error=\"insufficient_scope\"") && header.contains("scope=\"notes:write\""),
            "{header}"
        );

        // (c) Both scopes: both tools, and the handler sees who wrote.
        let both = issuer.token("bob", &audience, "notes:read notes:write");
        let writer = client(&server, &both).await;
        assert_eq!(tool_names(&writer).await, ["add_note", "read_notes"]);
        let added = writer.call_tool("add_note", json!({"text": "buy milk"})).await.unwrap();
        assert_eq!(assert_tool_ok(&added), "noted; the notebook holds 1 notes");
        assert_eq!(assert_tool_ok(&writer.call_tool("read_notes", json!({})).await.unwrap()), "bob: buy milk");
        assert_eq!(assert_tool_ok(&reader.call_tool("read_notes", json!({})).await.unwrap()), "bob: buy milk");
        reader.close().await;
        writer.close().await;
    }
}
