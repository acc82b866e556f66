//! Benchmarks `mcp-example --http` against `http-floor` (hyper + serde_json, no framework) in
//! one run: `echo` tool calls (2026-07-28, stateless) over keep-alive connections at 1, 16 and
//! 64 connections, printed as ratios. Then the same server behind the OAuth resource server
//! (`--auth-issuer`, an ES256 JWT on every request, its keys served by this process) against
//! itself without authorization, at 16 connections; and with every layer a production server
//! turns on (the resource server, a JWT of its own per client so the verdict cache is not all it
//! measures, `--audit-log` to a file, `--rate-limit` far above the load) against itself with none.
//! Exits 1 if a target is missed (`--no-fail`: always 0).
//!
//! Run: `cargo build --profile dist -p mcp-example -p mcp-bench && target/dist/bench-http`
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::time::Duration;

use mcp_bench::http::{load, load_each, post_request, HttpProcess};
use mcp_bench::{report, sibling_binary};

mod issuer {
    //! An issuer for the benchmark: an ES256 key, its metadata and JWKS on a loopback port.

    use std::convert::Infallible;

    use base64::Engine as _;
    use bytes::Bytes;
    use http_body_util::Full;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    pub struct Issuer {
        pub url: String,
        pkcs8: Vec<u8>,
    }

    impl Issuer {
        pub async fn start() -> Issuer {
            let rng = ring::rand::SystemRandom::new();
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap().as_ref().to_vec();
            let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng).unwrap();
            let point = pair.public_key().as_ref().to_vec();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let jwks = serde_json::json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "bench", "alg": "ES256",
                "x": b64(&point[1..33]), "y": b64(&point[33..65])}]})
            .to_string();
            let metadata = serde_json::json!({"issuer": url, "jwks_uri": format!("{url}/jwks"), "token_endpoint": format!("{url}/token")}).to_string();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else { return };
                    let (jwks, metadata) = (jwks.clone(), metadata.clone());
                    tokio::spawn(async move {
                        let service =
                            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                                let body =
                                    if request.uri().path() == "/jwks" { jwks.clone() } else { metadata.clone() };
                                async move { Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(body)))) }
                            });
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                    });
                }
            });
            Issuer { url, pkcs8 }
        }

        /// A token for `audience`, valid for an hour.
        pub fn token(&self, audience: &str) -> String {
            self.token_for("bench", audience)
        }

        /// A token of `subject`'s for `audience`, valid for an hour.
        pub fn token_for(&self, subject: &str, audience: &str) -> String {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
            let claims = serde_json::json!({"iss": self.url, "sub": subject, "aud": audience, "exp": now + 3600, "iat": now, "scope": "mcp"});
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
            header.kid = Some("bench".into());
            jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_ec_der(&self.pkcs8)).unwrap()
        }
    }
}

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// The same server behind the resource server, a JWT on every request, against itself without
/// authorization.
async fn with_a_jwt(headers: &[(&str, &str)]) -> bool {
    let issuer = issuer::Issuer::start().await;
    let plain = HttpProcess::start(&sibling_binary("mcp-example"), &["--http", "{addr}"]);
    let protected =
        HttpProcess::start(&sibling_binary("mcp-example"), &["--http", "{addr}", "--auth-issuer", &issuer.url]);
    let bearer = format!("Bearer {}", issuer.token(&format!("http://127.0.0.1:{}/mcp", protected.port)));
    let mut with_token = headers.to_vec();
    with_token.push(("Authorization", &bearer));
    let protected_req = post_request(protected.port, &with_token, BODY);
    let plain_req = post_request(plain.port, headers, BODY);
    load(protected.port, &protected_req, 4, Duration::from_millis(500)).await; // warm-up, keys fetched
    load(plain.port, &plain_req, 4, Duration::from_millis(500)).await;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        a.push(load(protected.port, &protected_req, 16, Duration::from_secs(1)).await);
        b.push(load(plain.port, &plain_req, 16, Duration::from_secs(1)).await);
    }
    report_medians("echo with a JWT on every request, 16 connections, vs without (req/s)", a, b, 0.80)
}

/// The same server with the resource server (a token per client), an audit log to a file and a
/// rate limit it never reaches, against itself with no layer, at 16 connections.
async fn with_every_layer(headers: &[(&str, &str)]) -> bool {
    const CLIENTS: usize = 16;
    let issuer = issuer::Issuer::start().await;
    let audit = std::env::temp_dir().join(format!("bench-http-audit-{}.log", std::process::id()));
    let plain = HttpProcess::start(&sibling_binary("mcp-example"), &["--http", "{addr}"]);
    let layered = HttpProcess::start(
        &sibling_binary("mcp-example"),
        &[
            "--http",
            "{addr}",
            "--auth-issuer",
            &issuer.url,
            "--audit-log",
            audit.to_str().unwrap(),
            "--rate-limit",
            "1000000/s",
        ],
    );
    let audience = format!("http://127.0.0.1:{}/mcp", layered.port);
    let layered_reqs: Vec<Vec<u8>> = (0..CLIENTS)
        .map(|i| {
            let bearer = format!("Bearer {}", issuer.token_for(&format!("client-{i}"), &audience));
            let mut with_token = headers.to_vec();
            with_token.push(("Authorization", &bearer));
            post_request(layered.port, &with_token, BODY)
        })
        .collect();
    let plain_req = post_request(plain.port, headers, BODY);
    load_each(layered.port, &layered_reqs, Duration::from_millis(500)).await; // warm-up, keys fetched
    load(plain.port, &plain_req, 4, Duration::from_millis(500)).await;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        a.push(load_each(layered.port, &layered_reqs, Duration::from_secs(1)).await);
        b.push(load(plain.port, &plain_req, CLIENTS, Duration::from_secs(1)).await);
    }
    drop(layered);
    let _ = std::fs::remove_file(&audit);
    report_medians(
        "echo with a JWT per client, audit log and rate limit, 16 connections, vs no layer (req/s)",
        a,
        b,
        0.70,
    )
}

/// Reports the median of `ours` against the median of `theirs` (requests per second of the same
/// runs), and whether their ratio reaches `target`.
fn report_medians(name: &str, mut ours: Vec<f64>, mut theirs: Vec<f64>, target: f64) -> bool {
    ours.sort_by(f64::total_cmp);
    theirs.sort_by(f64::total_cmp);
    let (a, b) = (ours[ours.len() / 2], theirs[theirs.len() / 2]);
    let ratio = a / b;
    report(name, a, b, "req/s", ratio, &format!(">= {target:.2}"), ratio >= target);
    ratio >= target
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let ours = HttpProcess::start(&sibling_binary("mcp-example"), &["--http", "{addr}"]);
    let floor = HttpProcess::start(&sibling_binary("http-floor"), &["{addr}"]);
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    let ours_req = post_request(ours.port, &headers, BODY);
    let floor_req = post_request(floor.port, &headers, BODY);
    load(ours.port, &ours_req, 4, Duration::from_millis(500)).await; // warm-up
    load(floor.port, &floor_req, 4, Duration::from_millis(500)).await;
    let mut ok = true;
    for (conns, target) in [(1, 0.70), (16, 0.70), (64, 0.70)] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            a.push(load(ours.port, &ours_req, conns, Duration::from_secs(1)).await);
            b.push(load(floor.port, &floor_req, conns, Duration::from_secs(1)).await);
        }
        ok &= report_medians(&format!("echo over HTTP, {conns} connection(s) (req/s)"), a, b, target);
    }
    ok &= with_a_jwt(&headers).await;
    ok &= with_every_layer(&headers).await;
    drop((ours, floor)); // killed before exit, which runs no destructors
    if !ok && !no_fail {
        std::process::exit(1);
    }
}
