//! Benchmarks `mcp gateway` and `mcp bridge` against calling `mcp-example` directly, in one run,
//! side by side with `mcp-remote` and `supergateway` from npm (when `npm` can install them):
//! the median round trip of one `echo` call at a time through each path, the latency each adds,
//! and pipelined calls per second through the gateway against the server alone.
//!
//! - stdio: the server itself; `mcp gateway` (stdio, names kept) in front of it; `relay-floor`
//!   in front of it (one more process and two more pipes and nothing else: the least any stdio
//!   gateway can add, copying bytes or, with `--parse`, parsing and writing each message);
//!   `mcp bridge --url` and `mcp-remote` in front of `mcp-example --http`.
//! - HTTP (a legacy session): `mcp-example --http`; `mcp bridge --http -- mcp-example`;
//!   `supergateway --stdio mcp-example`.
//!
//! Target: the gateway adds under 50 µs p50 per call on a stdio upstream. It also prints what
//! the gateway adds beyond the relay floors, which is its own cost. Exits 1 when the target is
//! missed (with `--no-fail`, always 0).
//!
//! Run: `cargo build --profile dist -p mcp-stack-cli -p mcp-example -p mcp-bench && target/dist/bench-gateway`

#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mcp_bench::http::HttpProcess;
use mcp_bench::{median, sibling_binary, time, StdioProcess};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const CALLS: usize = 2_000;
const ROUNDS: usize = 3;

fn echo(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
    )
}

/// A way of reaching the server over stdio.
struct StdioPath {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
}

fn start_stdio(path: &StdioPath) -> StdioProcess {
    let args: Vec<&str> = path.args.iter().map(String::as_str).collect();
    let mut p = StdioProcess::spawn(&path.program, &args);
    p.send(INIT);
    let answer = p.recv();
    assert!(answer.contains("protocolVersion"), "{}: {answer}", path.name);
    p.send(INITIALIZED);
    // The first calls also wait for anything the path connects lazily; what it announces
    // meanwhile (the gateway's `notifications/tools/list_changed` once its catalog is in) is
    // read past, so that no notification is left to be read as a timed call's answer.
    for id in 1..=2 {
        p.send(&echo(id));
        loop {
            let line = p.recv();
            if line.contains("hello") {
                break;
            }
            assert!(line.contains(r#""method":"notifications/"#), "{}: {line}", path.name);
        }
    }
    p
}

/// Median round trips of each path, in alternating rounds (drift hits all alike).
fn stdio_latencies(paths: &[StdioPath]) -> Vec<Duration> {
    let mut servers: Vec<StdioProcess> = paths.iter().map(start_stdio).collect();
    let mut samples = vec![Vec::new(); paths.len()];
    let mut id = 10;
    for _ in 0..ROUNDS {
        for (server, samples) in servers.iter_mut().zip(samples.iter_mut()) {
            for _ in 0..CALLS / ROUNDS {
                id += 1;
                let line = echo(id);
                let (d, answer) = time(|| {
                    server.send(&line);
                    server.recv()
                });
                assert!(answer.contains("hello"), "{answer}");
                samples.push(d);
            }
        }
    }
    for server in servers {
        server.finish();
    }
    samples.into_iter().map(median).collect()
}

/// Calls per second with 64 in flight.
fn stdio_throughput(path: &StdioPath, calls: usize) -> f64 {
    let mut p = start_stdio(path);
    let (elapsed, ()) = time(|| {
        let mut sent = 0;
        let mut received = 0;
        while received < calls {
            while sent < calls && sent - received < 64 {
                sent += 1;
                p.stdin.write_all(echo(100 + sent).as_bytes()).unwrap();
                p.stdin.write_all(b"\n").unwrap();
            }
            p.stdin.flush().unwrap();
            let line = p.recv();
            assert!(line.contains("hello"), "{line}");
            received += 1;
        }
    });
    p.finish();
    calls as f64 / elapsed.as_secs_f64()
}

/// A blocking keep-alive HTTP/1.1 connection that reads JSON and (chunked) SSE answers alike.
struct Http {
    reader: BufReader<TcpStream>,
    port: u16,
    session: Option<String>,
}

impl Http {
    fn open(port: u16) -> Http {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_nodelay(true).unwrap();
        Http { reader: BufReader::new(stream), port, session: None }
    }

    /// POSTs `body` to /mcp; returns the body (an SSE body's `data:` lines joined).
    fn post(&mut self, body: &str) -> String {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.port,
            body.len()
        );
        if let Some(session) = &self.session {
            request.push_str(&format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.reader.get_mut().write_all(request.as_bytes()).unwrap();
        let (headers, body) = self.response();
        if let Some(id) = headers.iter().find_map(|h| h.strip_prefix("mcp-session-id:")) {
            self.session = Some(id.trim().to_owned());
        }
        body
    }

    fn response(&mut self) -> (Vec<String>, String) {
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            assert!(self.reader.read_line(&mut line).unwrap() > 0, "the server closed the connection");
            let line = line.trim_end().to_owned();
            if line.is_empty() {
                break;
            }
            headers.push(line.to_ascii_lowercase());
        }
        let length = headers.iter().find_map(|h| h.strip_prefix("content-length:")).map(|v| v.trim().parse().unwrap());
        let mut body = Vec::new();
        match length {
            Some(n) => {
                body.resize(n, 0);
                self.reader.read_exact(&mut body).unwrap();
            }
            None => loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                self.reader.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            },
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let sse = headers.iter().any(|h| h.starts_with("content-type:") && h.contains("event-stream"));
        let text = if sse {
            text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect::<Vec<_>>().join("\n")
        } else {
            text
        };
        (headers, text)
    }
}

fn open_session(port: u16) -> Http {
    let mut http = Http::open(port);
    let answer = http.post(INIT);
    assert!(answer.contains("protocolVersion"), "{answer}");
    http.post(INITIALIZED);
    assert!(http.post(&echo(1)).contains("hello"));
    http
}

/// Median HTTP round trips through each port, alternating.
fn http_latencies(ports: &[u16]) -> Vec<Duration> {
    let mut conns: Vec<Http> = ports.iter().map(|p| open_session(*p)).collect();
    let mut samples = vec![Vec::new(); ports.len()];
    let mut id = 10;
    for _ in 0..ROUNDS {
        for (conn, samples) in conns.iter_mut().zip(samples.iter_mut()) {
            for _ in 0..CALLS / ROUNDS {
                id += 1;
                let line = echo(id);
                let (d, answer) = time(|| conn.post(&line));
                assert!(answer.contains("hello"), "{answer}");
                samples.push(d);
            }
        }
    }
    samples.into_iter().map(median).collect()
}

/// Calls per second through `port` from `sessions` legacy sessions at once (one thread and one
/// connection each, one call at a time each) for `duration`.
fn http_throughput(port: u16, sessions: usize, duration: Duration) -> f64 {
    let started = std::time::Instant::now() + Duration::from_millis(200);
    let workers: Vec<_> = (0..sessions)
        .map(|_| {
            std::thread::spawn(move || {
                let mut conn = open_session(port);
                while std::time::Instant::now() < started {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let mut calls = 0usize;
                while started.elapsed() < duration {
                    assert!(conn.post(&echo(100 + calls)).contains("hello"));
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    let calls: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    calls as f64 / duration.as_secs_f64()
}

/// `mcp-remote` and `supergateway`, installed from npm into a cache directory; `None` (with the
/// reason printed) when npm cannot.
fn npm_peers() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::temp_dir().join("mcp-bench-npm");
    let bin = dir.join("node_modules/.bin");
    if !bin.join("mcp-remote").exists() || !bin.join("supergateway").exists() {
        std::fs::create_dir_all(&dir).ok()?;
        let status = Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .args(["mcp-remote", "supergateway"])
            .status();
        if !matches!(status, Ok(s) if s.success()) {
            println!("mcp-remote and supergateway: not measured (npm install failed: {status:?})");
            return None;
        }
    }
    Some((bin.join("mcp-remote"), bin.join("supergateway")))
}

fn gateway_config(example: &Path) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-bench-gateway-{}.json", std::process::id()));
    let config = serde_json::json!({"mcpServers": {"example": {"command": example, "prefix": "", "shared": true}}});
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let mcp = sibling_binary("mcp");
    let example = sibling_binary("mcp-example");
    let relay = sibling_binary("relay-floor");
    let config = gateway_config(&example);
    let remote_server = HttpProcess::start(&example, &["--http", "{addr}"]);
    let remote_url = format!("http://127.0.0.1:{}/mcp", remote_server.port);
    let peers = npm_peers();

    let s = |name, program: &Path, args: &[&str]| StdioPath {
        name,
        program: program.to_owned(),
        args: args.iter().map(|a| a.to_string()).collect(),
    };
    let config_arg = config.to_string_lossy().into_owned();
    let example_arg = example.to_string_lossy().into_owned();
    let mut stdio_paths = vec![
        s("mcp-example (stdio, the floor)", &example, &[]),
        s("mcp gateway (stdio) -> mcp-example", &mcp, &["--config", &config_arg, "gateway"]),
        s("relay floor (bytes) -> mcp-example", &relay, &["--", &example_arg]),
        s("relay floor (parsed) -> mcp-example", &relay, &["--parse", "--", &example_arg]),
        s("mcp bridge --url -> mcp-example --http", &mcp, &["bridge", "--url", &remote_url]),
    ];
    if let Some((remote, _)) = &peers {
        stdio_paths.push(s("mcp-remote -> mcp-example --http", remote, &[&remote_url, "--transport", "http-only"]));
    }
    println!("stdio, one call at a time ({CALLS} calls, median):");
    let latencies = stdio_latencies(&stdio_paths);
    let floor = latencies[0];
    for (path, latency) in stdio_paths.iter().zip(&latencies) {
        println!("  {:<42} {:>8.1} µs   (+{:.1} µs)", path.name, micros(*latency), micros(*latency) - micros(floor));
    }
    let added = micros(latencies[1]) - micros(floor);
    let ok = added < 50.0;
    println!("  the gateway adds {added:.1} µs p50 per call (target < 50 µs): {}", if ok { "met" } else { "NOT met" });
    let (bytes, parsed) = (micros(latencies[2]) - micros(floor), micros(latencies[3]) - micros(floor));
    println!(
        "  a relay of bytes adds {bytes:.1} µs, a parsing relay {parsed:.1} µs: the gateway's own cost is {:.1} µs beyond the parsing relay",
        added - parsed
    );

    let direct = stdio_throughput(&stdio_paths[0], 20_000);
    let through = stdio_throughput(&stdio_paths[1], 20_000);
    println!(
        "stdio, 64 in flight: mcp-example {direct:.0} calls/s, through the gateway {through:.0} calls/s (ratio {:.2})",
        through / direct
    );

    let direct_http = HttpProcess::start(&example, &["--http", "{addr}"]);
    let bridge = HttpProcess::start(&mcp, &["bridge", "--http", "{addr}", "--", &example.to_string_lossy()]);
    let bridge_one_thread =
        HttpProcess::start(&mcp, &["bridge", "--threads", "1", "--http", "{addr}", "--", &example.to_string_lossy()]);
    let mut ports = vec![
        ("mcp-example --http (the floor)", direct_http.port),
        ("mcp bridge --http -- mcp-example", bridge.port),
        ("mcp bridge --threads 1 --http", bridge_one_thread.port),
    ];
    let supergateway = peers.as_ref().map(|(_, sg)| {
        let example = example.to_string_lossy().into_owned();
        HttpProcess::start(sg, &["--stdio", &example, "--outputTransport", "streamableHttp", "--port", "{port}"])
    });
    if let Some(sg) = &supergateway {
        ports.push(("supergateway --stdio mcp-example", sg.port));
    }
    println!("HTTP, a legacy session, one call at a time ({CALLS} calls, median):");
    let latencies = http_latencies(&ports.iter().map(|(_, p)| *p).collect::<Vec<_>>());
    for ((name, _), latency) in ports.iter().zip(&latencies) {
        println!("  {name:<42} {:>8.1} µs   (+{:.1} µs)", micros(*latency), micros(*latency) - micros(latencies[0]));
    }
    println!("HTTP, 16 legacy sessions at once, one call at a time each (calls/s, median of {ROUNDS}):");
    let mut rates = vec![Vec::new(); 3];
    for _ in 0..ROUNDS {
        for (rate, (_, port)) in rates.iter_mut().zip(&ports) {
            rate.push(http_throughput(*port, 16, Duration::from_secs(1)));
        }
    }
    for ((name, _), mut rate) in ports.iter().zip(rates) {
        rate.sort_by(f64::total_cmp);
        println!("  {name:<42} {:>8.0} calls/s", rate[ROUNDS / 2]);
    }
    drop((bridge, bridge_one_thread, direct_http, supergateway, remote_server));
    let _ = std::fs::remove_file(&config);
    if !ok && !no_fail {
        std::process::exit(1);
    }
}
