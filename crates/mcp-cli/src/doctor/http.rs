//! The HTTP server's transport, probed with raw requests: the `initialize` of each legacy
//! revision, the guards against DNS rebinding (a foreign Origin, a foreign Host on loopback), a
//! 404 for an unknown session, the 401 challenge and its protected-resource metadata, and TLS.

use std::time::Duration;

use http_body_util::BodyExt;
use mcp::client::ClientOptions;
use mcp::net::fetch::{Fetcher, Streaming};
use mcp::types::ProtocolVersion;
use serde_json::{json, Value};

use super::{id_of, initialize, rules, Level, Report};

/// The most of an answer read.
const MAX_ANSWER: usize = 1024 * 1024;
/// An origin no server should trust.
const FOREIGN: &str = "http://doctor.invalid";

/// One raw POST's outcome.
struct Answer {
    status: u16,
    headers: http::HeaderMap,
    message: Option<Value>,
}

/// Whether the URL's host is loopback.
pub fn is_loopback_url(url: &str) -> bool {
    url.parse::<http::Uri>().ok().and_then(|u| u.host().map(mcp::net::fetch::is_loopback)).unwrap_or(false)
}

/// Runs the HTTP checks into `report`.
pub async fn probe(
    url: &str,
    headers: &[(String, String)],
    options: &ClientOptions,
    timeout: Duration,
    report: &mut Report,
) {
    let fetcher = match Fetcher::new(&options.ca_files) {
        Ok(f) => f,
        Err(e) => {
            return report.find(
                &rules::CONNECT,
                Level::Error,
                None,
                format!("the CA files cannot be read: {e}"),
                "pass PEM files to --cacert",
            )
        }
    };
    let probe = Probe { fetcher, url, headers, timeout };
    let mut accepted = Vec::new();
    let mut baseline: Option<(Value, Answer)> = None;
    for revision in ProtocolVersion::LEGACY {
        let request = initialize(revision);
        let answer = match probe.post(&request, &[]).await {
            Ok(answer) => answer,
            Err(e) => return unreachable_server(url, &e, report),
        };
        if answer.status == 401 {
            challenge(&probe, &answer, report).await;
            report.find(
                &rules::NOT_CHECKED,
                Level::Note,
                None,
                "the Origin, Host and session checks need an answer without authorization".into(),
                "run the doctor against a development instance without --auth-issuer to check them",
            );
            return;
        }
        let session = session_of(&answer);
        accepted.push(
            match answer.message.as_ref().map(|m| (m["result"]["protocolVersion"].as_str(), m.get("error"))) {
                Some((Some(v), _)) if v == revision => revision.to_owned(),
                Some((Some(v), _)) => format!("{revision}→{v}"),
                Some((None, Some(e))) => format!("{revision}: refused ({})", e["message"].as_str().unwrap_or("error")),
                _ => format!("{revision}: HTTP {}", answer.status),
            },
        );
        if let Some(session) = &session {
            probe.delete(session).await;
        }
        if baseline.is_none()
            && (200..300).contains(&answer.status)
            && answer.message.as_ref().is_some_and(|m| m.get("result").is_some())
        {
            baseline = Some((request, answer));
        }
    }
    if url.starts_with("https://") {
        report.pass("TLS: the certificate is valid for the host and trusted");
    }
    report.pass(format!("initialize over HTTP: {}", accepted.join(", ")));
    let (request, answer) = match baseline {
        Some(b) => b,
        None => {
            (
                discover(),
                match probe.post(&discover(), &modern_headers()).await {
                    Ok(a) if (200..300).contains(&a.status) => a,
                    _ => {
                        report.find(&rules::NOT_CHECKED, Level::Note, None, "no request succeeded, so the Origin and Host guards cannot be told apart from other refusals".into(), "");
                        return;
                    }
                },
            )
        }
    };
    let extra = if request["method"] == "server/discover" { modern_headers() } else { Vec::new() };
    guard(&probe, &request, &extra, ("origin", FOREIGN), report).await;
    if is_loopback_url(url) {
        guard(&probe, &request, &extra, ("host", "doctor.invalid"), report).await;
    }
    if session_of(&answer).is_some() {
        unknown_session(&probe, report).await;
    }
}

struct Probe<'a> {
    fetcher: Fetcher,
    url: &'a str,
    headers: &'a [(String, String)],
    timeout: Duration,
}

impl Probe<'_> {
    async fn post(&self, body: &Value, extra: &[(String, String)]) -> Result<Answer, String> {
        let headers: Vec<(&str, String)> =
            self.headers.iter().chain(extra).map(|(k, v)| (k.as_str(), v.clone())).collect();
        let streaming = self.fetcher.post_json_streaming(self.url, body, &headers, self.timeout).await?;
        let status = streaming.status.as_u16();
        let headers = streaming.headers.clone();
        let message = tokio::time::timeout(self.timeout, read_message(streaming)).await.ok().flatten();
        Ok(Answer { status, headers, message })
    }

    async fn delete(&self, session: &str) {
        let _ = self.fetcher.delete(self.url, &[("mcp-session-id", session.to_owned())]).await;
    }
}

fn discover() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": ProtocolVersion::V2026_07_28,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-doctor", "version": env!("CARGO_PKG_VERSION")}
    }}})
}

fn modern_headers() -> Vec<(String, String)> {
    vec![
        ("mcp-protocol-version".into(), ProtocolVersion::V2026_07_28.into()),
        ("mcp-method".into(), "server/discover".into()),
    ]
}

fn session_of(answer: &Answer) -> Option<String> {
    answer.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The connection failed: a certificate problem named plainly, or the server not reachable.
fn unreachable_server(url: &str, error: &str, report: &mut Report) {
    if url.starts_with("https://") && error.to_ascii_lowercase().contains("certificate") {
        report.find(&rules::TLS, Level::Error, None, error.to_owned(), "serve a certificate for this host name from a CA clients trust (a public CA, or give clients the CA with --cacert / SSL_CERT_FILE); renew it before it expires");
    } else {
        report.find(
            &rules::CONNECT,
            Level::Error,
            None,
            error.to_owned(),
            "check the URL (scheme, host, port, path) and that the server is running",
        );
    }
}

/// The same request from a foreign Origin (or Host) must be refused.
async fn guard(
    probe: &Probe<'_>,
    request: &Value,
    extra: &[(String, String)],
    (name, value): (&str, &str),
    report: &mut Report,
) {
    let mut headers = extra.to_vec();
    headers.push((name.to_owned(), value.to_owned()));
    let Ok(answer) = probe.post(request, &headers).await else { return };
    if let Some(session) = session_of(&answer) {
        probe.delete(&session).await;
    }
    let header = if name == "origin" { "Origin" } else { "Host" };
    if (200..300).contains(&answer.status) {
        let fix = if name == "origin" {
            "refuse requests whose Origin is not one you serve (403): the spec requires servers to validate Origin, or any web page the user visits can drive the server"
        } else {
            "on loopback, accept only Host headers of 127.0.0.1, localhost or [::1] with your port (403 otherwise): a DNS-rebinding page reaches the server under a foreign name"
        };
        report.find(
            if name == "origin" { &rules::HTTP_ORIGIN } else { &rules::HTTP_HOST },
            Level::Error,
            Some(format!("POST {header}: {value}")),
            format!("a request with {header}: {value} was answered ({})", answer.status),
            fix,
        );
    } else {
        report.pass(format!("a foreign {header} is refused ({})", answer.status));
    }
}

/// A request naming a session the server never issued must get 404.
async fn unknown_session(probe: &Probe<'_>, report: &mut Report) {
    let headers = vec![
        ("mcp-session-id".to_owned(), "doctor-unknown-session".to_owned()),
        ("mcp-protocol-version".to_owned(), ProtocolVersion::V2025_11_25.to_owned()),
    ];
    let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let Ok(answer) = probe.post(&request, &headers).await else { return };
    if answer.status == 404 {
        report.pass("an unknown session gets 404");
    } else {
        report.find(
            &rules::HTTP_SESSION,
            Level::Error,
            Some("POST Mcp-Session-Id: doctor-unknown-session".into()),
            format!("a request with an unknown session id got {}, not 404", answer.status),
            "answer 404 to a session id you do not know (expired, or from before a restart): clients start a new session on 404 and are stuck on anything else",
        );
    }
}

/// A 401: it must say where the protected-resource metadata is, and that metadata must be
/// about this URL.
async fn challenge(probe: &Probe<'_>, answer: &Answer, report: &mut Report) {
    let challenge = answer.headers.get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if challenge.is_empty() {
        report.find(&rules::HTTP_CHALLENGE, Level::Error, Some("401".into()), "a 401 without WWW-Authenticate: clients cannot tell how to authorize".into(),
            "answer 401 with `WWW-Authenticate: Bearer resource_metadata=\"https://host/.well-known/oauth-protected-resource/path\"` (RFC 9728)");
    } else if !challenge.contains("resource_metadata") {
        report.find(&rules::HTTP_CHALLENGE, Level::Warning, Some("401".into()), format!("WWW-Authenticate names no resource_metadata: {challenge}"),
            "add resource_metadata=\"...\" to the Bearer challenge; clients then find the metadata without guessing well-known paths");
    } else {
        report.pass("401 carries a Bearer challenge with resource_metadata");
    }
    let named = challenge
        .split("resource_metadata=")
        .nth(1)
        .and_then(|rest| rest.trim_start_matches('"').split('"').next())
        .map(str::to_owned);
    let candidates: Vec<String> = named.into_iter().chain(well_known(probe.url)).collect();
    for url in &candidates {
        let Ok(fetched) = probe.fetcher.get(url, &[]).await else { continue };
        if !fetched.status.is_success() {
            continue;
        }
        let Ok(metadata) = fetched.json() else { continue };
        return check_metadata(probe.url, url, &metadata, report);
    }
    report.find(&rules::PRM, Level::Error, None, format!("no protected-resource metadata at {}", candidates.join(" or ")),
        "serve the metadata (RFC 9728) at /.well-known/oauth-protected-resource plus the MCP path, with `resource` and `authorization_servers`");
}

fn well_known(url: &str) -> Vec<String> {
    let Ok(uri) = url.parse::<http::Uri>() else { return Vec::new() };
    let origin = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("https"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default()
    );
    let path = uri.path().trim_end_matches('/');
    let mut urls = vec![format!("{origin}/.well-known/oauth-protected-resource{path}")];
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    }
    urls
}

fn check_metadata(server: &str, at: &str, metadata: &Value, report: &mut Report) {
    let resource = metadata["resource"].as_str().unwrap_or_default();
    let canonical = |u: &str| mcp::net::oauth::canonical_resource(u);
    if canonical(resource) != canonical(server) {
        report.find(&rules::PRM, Level::Error, Some(at.to_owned()), format!("the metadata's resource is {resource:?}, not this server's URL {server}"),
            "set `resource` to the exact URL clients use (scheme, host, port, path): clients must refuse metadata for another resource, and tokens are issued for it");
    }
    match metadata["authorization_servers"].as_array() {
        Some(servers) if !servers.is_empty() => {
            report.pass(format!("protected-resource metadata at {at} names {} authorization server(s)", servers.len()))
        }
        _ => report.find(
            &rules::PRM,
            Level::Error,
            Some(at.to_owned()),
            "the metadata lists no authorization_servers".into(),
            "list the issuer URL of your authorization server in `authorization_servers`",
        ),
    }
}

/// The first JSON-RPC answer in a response, JSON or an SSE stream.
async fn read_message(streaming: Streaming) -> Option<Value> {
    let sse = streaming
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let mut body = streaming.body;
    let mut text = Vec::new();
    while text.len() < MAX_ANSWER {
        let frame = match body.frame().await {
            Some(Ok(frame)) => frame,
            _ => break,
        };
        if let Ok(data) = frame.into_data() {
            text.extend_from_slice(&data);
        }
        if sse {
            if let Some(message) = sse_answer(&String::from_utf8_lossy(&text)) {
                return Some(message);
            }
        }
    }
    if sse {
        return sse_answer(&String::from_utf8_lossy(&text));
    }
    serde_json::from_slice(&text).ok()
}

/// The first `data:` event holding an answer (a message with an id and no method).
fn sse_answer(text: &str) -> Option<Value> {
    let text = text.replace("\r\n", "\n");
    for event in text.split("\n\n") {
        let data: Vec<&str> =
            event.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.strip_prefix(' ').unwrap_or(d)).collect();
        if let Ok(message) = serde_json::from_str::<Value>(&data.join("\n")) {
            if id_of(&message).is_some() && message.get("method").is_none() {
                return Some(message);
            }
        }
    }
    None
}
