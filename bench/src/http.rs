//! A small HTTP/1.1 load generator over keep-alive connections, and server process helpers.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server process listening on a port; killed when dropped.
pub struct HttpProcess {
    /// The child.
    pub child: Child,
    /// Its port.
    pub port: u16,
}

impl Drop for HttpProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl HttpProcess {
    /// Starts `path` with `args` (where `{addr}` and `{port}` are replaced) and waits until it
    /// listens.
    pub fn start(path: &std::path::Path, args: &[&str]) -> HttpProcess {
        HttpProcess::start_with_env(path, args, &[])
    }

    /// [`start`](Self::start) with these environment variables set.
    pub fn start_with_env(path: &std::path::Path, args: &[&str], env: &[(&str, String)]) -> HttpProcess {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let args: Vec<String> =
            args.iter().map(|a| a.replace("{addr}", &addr).replace("{port}", &port.to_string())).collect();
        let child = Command::new(path)
            .args(&args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Owned at once, so a server that never listens is still killed.
        let process = HttpProcess { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{} did not listen", path.display());
            std::thread::sleep(Duration::from_millis(10));
        }
        process
    }
}

/// One keep-alive connection that sends a fixed POST and reads whole responses.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects to the port.
    pub async fn open(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Conn { stream, buf: Vec::with_capacity(8192) }
    }

    /// Sends `request` (a full HTTP/1.1 request) and reads one response; returns its status
    /// and body.
    pub async fn round_trip(&mut self, request: &[u8]) -> (u16, Vec<u8>) {
        self.stream.write_all(request).await.unwrap();
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end]).to_ascii_lowercase();
                let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
                    .unwrap_or(0);
                let total = end + 4 + len;
                while self.buf.len() < total {
                    self.fill().await;
                }
                let body = self.buf[end + 4..total].to_vec();
                self.buf.drain(..total);
                return (status, body);
            }
            self.fill().await;
        }
    }

    async fn fill(&mut self) {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the server closed the connection");
        self.buf.extend_from_slice(&chunk[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A POST of `body` to `/mcp` with extra headers.
pub fn post_request(port: u16, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req.into_bytes()
}

/// Requests per second with `conns` connections sending `request` for `duration`.
pub async fn load(port: u16, request: &[u8], conns: usize, duration: Duration) -> f64 {
    load_each(port, &vec![request.to_vec(); conns], duration).await
}

/// Requests per second with one connection per request of `requests`, each sending its own for
/// `duration` (one client each, as when every client has a token of its own).
pub async fn load_each(port: u16, requests: &[Vec<u8>], duration: Duration) -> f64 {
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for request in requests {
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::open(port).await;
            let mut done = 0u64;
            while Instant::now() < deadline {
                let (status, _) = conn.round_trip(&request).await;
                assert_eq!(status, 200);
                done += 1;
            }
            done
        }));
    }
    let start = Instant::now();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}
