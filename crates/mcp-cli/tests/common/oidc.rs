//! The test authorization server: npm `oidc-provider` (tests/fixtures/oidc-as), started on a
//! free loopback port and stopped by pid. `scripts/test.sh` installs it; a missing install is a
//! failure that says how to fix it, never a skip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/oidc-as")
}

/// The Node.js to run it with: `$MCP_TEST_NODE`, else `node` on the PATH.
fn node() -> String {
    std::env::var("MCP_TEST_NODE").unwrap_or_else(|_| "node".into())
}

/// A running authorization server.
pub struct AuthServer {
    child: Child,
    /// Its issuer, `http://127.0.0.1:PORT`.
    pub issuer: String,
    args: Vec<String>,
}

impl AuthServer {
    /// Starts it with `args` (see server.mjs: `--resource URL=SCOPES`, `--ttl`, `--kid`...).
    pub fn start(args: &[&str]) -> AuthServer {
        let dir = fixture_dir();
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "the test authorization server is not installed: run `npm ci --prefix tests/fixtures/oidc-as` (scripts/test.sh does)"
        );
        let mut child = Command::new(node())
            .arg(dir.join("server.mjs"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start node ({}): {e}", node()));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let ready: Value = serde_json::from_str(&first).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the authorization server did not start: {first:?}")
        });
        // Its stdout goes on (a line per token request): read to the end, so that it never fills.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        AuthServer {
            child,
            issuer: ready["issuer"].as_str().unwrap().to_owned(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.issuer.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// How many token requests of `grant_type` succeeded. Asked of the server itself (its
    /// `/__stats`), which counts a request before answering it: a count read from its stdout
    /// could still be on its way when the client that made the request has already exited.
    pub fn tokens(&self, grant_type: &str) -> usize {
        self.token_count(grant_type)
    }

    /// How many token requests of `grant_type` were refused (counted as [`Self::tokens`] are).
    pub fn refused(&self, grant_type: &str) -> usize {
        self.token_count(&format!("{grant_type}:error"))
    }

    fn token_count(&self, key: &str) -> usize {
        self.stats()["token"][key].as_u64().unwrap_or(0) as usize
    }

    /// `GET /__stats`.
    pub fn stats(&self) -> Value {
        let (status, body) = http("GET", &format!("{}/__stats", self.issuer), &[], "");
        assert_eq!(status, 200);
        serde_json::from_str(&body).unwrap()
    }

    /// Stops it and starts it again on the same port with `--kid kid`: its keys rotate.
    pub fn restart_with_new_keys(&mut self, kid: &str) {
        let port = self.port().to_string();
        self.stop();
        let mut args: Vec<String> = Vec::new();
        let mut skip = false;
        for arg in &self.args {
            if skip {
                skip = false;
                continue;
            }
            if arg == "--kid" || arg == "--port" {
                skip = true;
                continue;
            }
            args.push(arg.clone());
        }
        args.extend(["--port".into(), port, "--kid".into(), kid.into()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        for _ in 0..50 {
            // The port is free again once the old process is gone.
            if TcpStream::connect(("127.0.0.1", self.port())).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        *self = AuthServer::start(&refs);
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A `client_credentials` token for `resource`, asked directly at the token endpoint.
    pub fn machine_token(&self, client: &str, resource: &str, scope: &str) -> String {
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:machine-secret"));
        let form = format!("grant_type=client_credentials&resource={}&scope={}", urlencode(resource), urlencode(scope));
        let (status, body) = http(
            "POST",
            &format!("{}/token", self.issuer),
            &[("authorization", &format!("Basic {basic}")), ("content-type", "application/x-www-form-urlencoded")],
            &form,
        );
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        answer["access_token"].as_str().unwrap().to_owned()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Percent-encodes a form value.
pub fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One plain HTTP/1.1 request to a loopback URL: the status and the body.
pub fn http(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (status, _head, body) = http_with_head(method, url, headers, body);
    (status, body)
}

/// One plain HTTP/1.1 request to a loopback URL: the status, the head in lower case (status line
/// and header lines) and the body.
pub fn http_with_head(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let rest = url.strip_prefix("http://").expect("a loopback http URL");
    let (authority, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let mut stream = TcpStream::connect(authority).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    let head = text.split("\r\n\r\n").next().unwrap_or("").to_ascii_lowercase();
    let chunked = head.contains("transfer-encoding: chunked");
    (status, head, if chunked { dechunk(&body) } else { body })
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let Some((size, rest)) = body.split_once("\r\n") else { return out };
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { return out };
        if n == 0 || rest.len() < n {
            return out;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `paypedia --http 127.0.0.1:PORT` with `args`, killed when dropped.
pub struct Protected {
    child: Child,
    /// Its endpoint.
    pub url: String,
}

impl Protected {
    pub fn start(port: u16, args: &[&str]) -> Protected {
        Protected::start_with_env(port, args, &[])
    }

    /// [`Protected::start`] with environment variables.
    pub fn start_with_env(port: u16, args: &[&str], env: &[(&str, &str)]) -> Protected {
        let mut child = Command::new(super::paypedia())
            .args(["--http", &format!("127.0.0.1:{port}")])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let line = lines.next().and_then(Result::ok).unwrap_or_default();
        assert!(line.contains("serving MCP"), "paypedia did not start: {line}");
        std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
        Protected { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for Protected {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An authorization server knowing one protected paypedia, and that paypedia.
pub fn setup(as_args: &[&str], server_args: &[&str]) -> (AuthServer, Protected) {
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp=paypedia:read,paypedia:batch");
    let mut args = vec!["--resource", resource.as_str()];
    args.extend_from_slice(as_args);
    let auth = AuthServer::start(&args);
    let mut server = vec!["--auth-issuer", auth.issuer.as_str()];
    server.extend_from_slice(server_args);
    let protected = Protected::start(port, &server);
    (auth, protected)
}

/// The person at a browser, played by curl: follows the authorization URL through every
/// redirect with a cookie jar (the test server approves at once) up to the loopback callback.
pub fn authorize_in_browser(authorize: &str, jar: &std::path::Path) {
    let browser = Command::new("curl")
        .args(["-s", "-L", "--max-redirs", "20", "-c", jar.to_str().unwrap(), "-b", jar.to_str().unwrap(), authorize])
        .output()
        .expect("curl plays the browser (scripts/test.sh installs it)");
    assert!(
        String::from_utf8_lossy(&browser.stdout).contains("Authorized"),
        "{}",
        String::from_utf8_lossy(&browser.stdout)
    );
}

/// An IBAN paypedia knows.
pub const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

/// `mcp` with `args`, its tokens in `store`.
pub fn run(store: &Path, args: &[&str]) -> Output {
    Command::new(super::mcp()).args(args).env("MCP_AUTH_FILE", store).stdin(Stdio::null()).output().unwrap()
}

pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `mcp login URL --no-browser`, the browser played by curl following every redirect with a
/// cookie jar, up to the loopback callback.
pub fn login(store: &Path, url: &str, extra: &[&str]) -> Output {
    let mut child = Command::new(super::mcp())
        .arg("login")
        .args((!url.is_empty()).then_some(url)) // none: --config and --server name it
        .arg("--no-browser")
        .args(extra)
        .env("MCP_AUTH_FILE", store)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let authorize = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break None;
        }
        said.push_str(&line);
        if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http") && w.contains("code_challenge")) {
            break Some(url.to_owned());
        }
    };
    let authorize = authorize.unwrap_or_else(|| panic!("no authorization URL: {said}"));
    assert!(
        authorize.contains("code_challenge_method=S256")
            && authorize.contains("state=")
            && authorize.contains("resource=")
    );
    authorize_in_browser(&authorize, &store.with_extension("cookies"));
    let mut out = child.wait_with_output().unwrap();
    std::io::Read::read_to_end(&mut stderr, &mut out.stderr).unwrap();
    out
}

pub fn stored(store: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(store).unwrap()).unwrap()
}

pub fn call_iban(store: &Path, url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--url", url, "call", "iban_check", "input=FR76 3000 6000 0112 3456 7890 189"];
    args.extend_from_slice(extra);
    run(store, &args)
}
