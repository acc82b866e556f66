//! What OpenTelemetry costs a server: `mcp-example` built without the `otel` feature against
//! the same server built with it, in one run, over HTTP (`echo` calls at 16 keep-alive
//! connections, 2026-07-28) and over stdio (64 calls in flight, and one at a time). The build
//! with telemetry runs three ways: exporting every span (`OTEL_TRACES_SAMPLER=always_on`) over
//! OTLP/HTTP to a collector this process serves on a loopback port (it reads every request and
//! answers 200, counting the bytes), and with sampling off (`always_off`, the exporter still
//! configured: the histograms are pushed to it); and, shown but not judged, with no
//! `OTEL_` variable set: no exporter, so no export thread, and what is left is the instrumentation
//! itself (the histograms, which the `/metrics` page serves, and the trace context passed on).
//! The build without telemetry runs twice too, the second time shown as any other variant: the
//! ratio of a server to itself, the noise a cost must stand out of here to be measurable.
//!
//! Targets: every span exported costs under 10% of the throughput at 16 connections; sampling
//! off costs nothing measurable (within 3%). Exits 1 when one is missed (`--no-fail`: always 0),
//! or when the collector received nothing from the sampled runs.
//!
//! Run (the build with telemetry goes to its own target directory, so that the one without it
//! keeps its features):
//!
//! ```text
//! CARGO_TARGET_DIR=target/otel cargo build --profile dist -p mcp-example --features otel
//! cargo build --profile dist -p mcp-example -p mcp-bench && target/dist/bench-otel
//! ```
//!
//! `--otel-server PATH` names the build with telemetry elsewhere; `--rounds N` runs each
//! measurement N times rather than 3 (the medians steady on a noisy machine).

#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_bench::http::{load, post_request, HttpProcess};
use mcp_bench::{cpu_time, median, report, report_line, sibling_binary, time, StdioProcess};

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A collector on a loopback port that takes whatever is posted and answers 200.
mod collector {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};

    /// Starts it; the counter holds the bytes received so far.
    pub async fn start(received: Arc<AtomicU64>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let received = received.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let received = received.clone();
                        async move {
                            let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            received.fetch_add(body.len() as u64, Ordering::Relaxed);
                            let mut answer = hyper::Response::new(Full::new(Bytes::new()));
                            answer.headers_mut().insert("content-type", "application/x-protobuf".parse().unwrap());
                            Ok::<_, Infallible>(answer)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        url
    }
}

/// One way of running the server: which build, and its telemetry environment.
struct Variant {
    name: &'static str,
    program: PathBuf,
    env: Vec<(&'static str, String)>,
    /// The least ratio to the build without telemetry it must reach; `None`: shown, not judged.
    target: Option<f64>,
}

impl Variant {
    fn command(&self) -> (PathBuf, Vec<(&'static str, String)>) {
        (self.program.clone(), self.env.clone())
    }
}

fn variants(plain: PathBuf, traced: PathBuf, collector: &str) -> Vec<Variant> {
    let exporting = |sampler: &str| {
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.to_owned()),
            ("OTEL_TRACES_SAMPLER", sampler.to_owned()),
            ("OTEL_SERVICE_NAME", "bench-otel".to_owned()),
        ]
    };
    vec![
        Variant { name: "without otel", program: plain.clone(), env: vec![], target: None },
        // The same build again: how far apart two runs of one server measure here (the noise a
        // cost must stand out of to be measurable).
        Variant { name: "without otel, again", program: plain, env: vec![], target: None },
        Variant {
            name: "otel, every span exported",
            program: traced.clone(),
            env: exporting("always_on"),
            target: Some(0.90),
        },
        Variant {
            name: "otel, sampling off",
            program: traced.clone(),
            env: exporting("always_off"),
            target: Some(0.97),
        },
        // No exporter, so no export thread: the instrumentation alone (and the histograms the
        // /metrics page serves).
        Variant { name: "otel, nothing configured", program: traced, env: vec![], target: None },
    ]
}

/// What a run of one variant measured: its throughput and the server's CPU per call.
#[derive(Clone, Copy)]
struct Figures {
    per_second: f64,
    cpu_per_call: Duration,
}

/// Requests per second at 16 connections and the server's CPU per request, per variant and
/// round (the rounds interleaved, so that a noisy spell touches every variant alike).
async fn http_throughput(variants: &[Variant]) -> Vec<Vec<Figures>> {
    let servers: Vec<HttpProcess> = variants
        .iter()
        .map(|v| {
            let (program, env) = v.command();
            HttpProcess::start_with_env(&program, &["--http", "{addr}"], &env)
        })
        .collect();
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    let requests: Vec<Vec<u8>> = servers.iter().map(|s| post_request(s.port, &headers, BODY)).collect();
    for (server, request) in servers.iter().zip(&requests) {
        load(server.port, request, 4, Duration::from_millis(500)).await; // warm-up
    }
    let mut measured = vec![Vec::new(); servers.len()];
    for round in 0..rounds() {
        for i in in_turn(round, servers.len()) {
            let (server, request) = (&servers[i], &requests[i]);
            let cpu = cpu_time(server.child.id());
            let started = std::time::Instant::now();
            let per_second = load(server.port, request, 16, Duration::from_secs(1)).await;
            let calls = per_second * started.elapsed().as_secs_f64();
            let cpu_per_call = cpu_time(server.child.id()).saturating_sub(cpu).div_f64(calls.max(1.0));
            measured[i].push(Figures { per_second, cpu_per_call });
        }
    }
    measured
}

/// The order the variants are measured in, in round `round` of `count` variants: a row of
/// Williams' design, a Latin square in which each variant is measured in each place, and follows
/// each other variant, equally often over `count` rounds (`2 * count` when `count` is odd, the
/// rounds after the first `count` taking the rows reversed). So no variant always follows the
/// same one (a server measured right after the one exporting every span shares the machine with
/// that one's last exports, and the collector taking them), nor always comes first or last.
fn in_turn(round: usize, count: usize) -> Vec<usize> {
    let first = (0..count).map(|i| if i % 2 == 1 { i.div_ceil(2) } else { (count - i / 2) % count });
    let mut order: Vec<usize> = first.map(|variant| (variant + round) % count).collect();
    if count % 2 == 1 && (round / count) % 2 == 1 {
        order.reverse();
    }
    order
}

/// Each variant's figures against the first's: the first's medians, and for the others the
/// first's medians times the median of their ratios round by round (a noisy spell touches both
/// figures of a round alike, so a round's ratio is steadier than either figure).
fn paired(rounds: Vec<Vec<Figures>>) -> Vec<Figures> {
    let base = median_figures(rounds[0].clone());
    let ratio = |of: &[Figures], figure: fn(&Figures) -> f64| {
        median_of(of.iter().zip(&rounds[0]).map(|(v, b)| figure(v) / figure(b)).collect())
    };
    rounds
        .iter()
        .map(|of| Figures {
            per_second: base.per_second * ratio(of, |f| f.per_second),
            cpu_per_call: base.cpu_per_call.mul_f64(ratio(of, |f| f.cpu_per_call.as_secs_f64())),
        })
        .collect()
}

/// The median throughput and the median CPU per call of some rounds.
fn median_figures(rounds: Vec<Figures>) -> Figures {
    Figures {
        per_second: median_of(rounds.iter().map(|r| r.per_second).collect()),
        cpu_per_call: median(rounds.iter().map(|r| r.cpu_per_call).collect()),
    }
}

/// The server's CPU per call of each variant, and what telemetry adds to the first's (shown,
/// not judged: the targets are the throughput's).
fn cpu_lines(variants: &[Variant], figures: &[Figures]) {
    let base = figures[0].cpu_per_call.as_secs_f64() * 1e6;
    let lines: Vec<String> = variants
        .iter()
        .zip(figures)
        .map(|(v, f)| {
            let us = f.cpu_per_call.as_secs_f64() * 1e6;
            format!("{} {us:.2} µs ({:+.0}%)", v.name, (us / base - 1.0) * 100.0)
        })
        .collect();
    println!("  the server's CPU per call: {}", lines.join("; "));
}

fn median_of(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn echo(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
    )
}

fn start_stdio(variant: &Variant) -> StdioProcess {
    let (program, env) = variant.command();
    let mut p = StdioProcess::spawn_with_env(&program, &[], &env);
    p.send(INIT);
    p.recv();
    p.send(INITIALIZED);
    p
}

/// Calls per second over stdio with 64 in flight (written in windows of 64, then read), and the
/// server's CPU per call, once the server is warm: a first [`STDIO_WARM_UP`] calls are not
/// measured (a new process's first calls also pay for its heap's first pages, and with
/// telemetry for its span buffers, its first batches and the collector's connection), as the
/// HTTP servers are warmed before they are measured.
fn stdio_pipelined(variant: &Variant, calls: usize) -> Figures {
    let mut p = start_stdio(variant);
    pipeline(&mut p, variant, 1..=STDIO_WARM_UP);
    let cpu = cpu_time(p.child.id());
    let (elapsed, ()) = time(|| pipeline(&mut p, variant, STDIO_WARM_UP + 1..=STDIO_WARM_UP + calls));
    let cpu_per_call = cpu_time(p.child.id()).saturating_sub(cpu) / calls as u32;
    p.finish();
    Figures { per_second: calls as f64 / elapsed.as_secs_f64(), cpu_per_call }
}

/// The calls a stdio server makes before it is measured.
const STDIO_WARM_UP: usize = 5_000;

/// Calls `echo` with the ids `ids`, 64 in flight.
fn pipeline(p: &mut StdioProcess, variant: &Variant, ids: std::ops::RangeInclusive<usize>) {
    use std::io::Write;
    for window in ids.collect::<Vec<_>>().chunks(64) {
        for id in window {
            p.stdin.write_all(echo(*id).as_bytes()).unwrap();
            p.stdin.write_all(b"\n").unwrap();
        }
        p.stdin.flush().unwrap();
        for _ in window {
            let line = p.recv();
            assert!(line.contains("hello"), "{}: {line}", variant.name);
        }
    }
}

/// The median round trip of one call at a time over stdio (after 200 calls not measured).
fn stdio_latency(variant: &Variant, calls: usize) -> Duration {
    let mut p = start_stdio(variant);
    for id in 1..=200 {
        p.send(&echo(id)); // warming up, as above
        p.recv();
    }
    let samples = (201..=200 + calls)
        .map(|id| {
            time(|| {
                p.send(&echo(id));
                p.recv()
            })
            .0
        })
        .collect();
    p.finish();
    median(samples)
}

/// How many times each measurement runs (`--rounds N`, 3 by default).
fn rounds() -> usize {
    let mut args = std::env::args().skip_while(|a| a != "--rounds");
    args.nth(1).and_then(|n| n.parse().ok()).filter(|n| *n > 0).unwrap_or(3)
}

fn traced_server() -> PathBuf {
    let mut args = std::env::args().skip_while(|a| a != "--otel-server");
    if let Some(path) = args.nth(1) {
        return PathBuf::from(path);
    }
    // target/dist/bench-otel -> target/otel/dist/mcp-example
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().and_then(Path::parent).unwrap();
    let path = target.join("otel").join("dist").join("mcp-example");
    assert!(
        path.exists(),
        "{} not found: build it with `CARGO_TARGET_DIR=target/otel cargo build --profile dist -p mcp-example --features otel`",
        path.display()
    );
    path
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let received = Arc::new(AtomicU64::new(0));
    let collector = collector::start(received.clone()).await;
    let variants = variants(sibling_binary("mcp-example"), traced_server(), &collector);
    let mut ok = true;

    let http = paired(http_throughput(&variants).await);
    let exported_http = received.swap(0, Ordering::Relaxed);
    println!("echo over HTTP, 16 connections (req/s; {} rounds, ratios the median of each round's):", rounds());
    ok &= compare(&variants, &http, "req/s");
    cpu_lines(&variants, &http);
    println!("  the collector received {} KiB of spans", exported_http / 1024);

    let mut piped = vec![Vec::new(); variants.len()];
    for round in 0..rounds() {
        for i in in_turn(round, variants.len()) {
            piped[i].push(stdio_pipelined(&variants[i], 50_000));
        }
    }
    // One call at a time with client and server on one CPU (as bench-stdio measures latency):
    // across cores, the scheduler's wake-ups make the figure flip between runs.
    mcp_bench::pin_to_one_cpu();
    let mut latency = vec![Vec::new(); variants.len()];
    for round in 0..rounds() {
        for i in in_turn(round, variants.len()) {
            latency[i].push(stdio_latency(&variants[i], 2_000));
        }
    }
    // The stdio servers flush their spans as they exit: give the collector a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let exported_stdio = received.swap(0, Ordering::Relaxed);
    println!("echo over stdio, 64 in flight (calls/s; {} rounds, ratios the median of each round's):", rounds());
    let piped = paired(piped);
    ok &= compare(&variants, &piped, "calls/s");
    cpu_lines(&variants, &piped);
    println!("echo over stdio, one at a time, client and server on one CPU (median round trip, µs):");
    let latency: Vec<f64> = latency.into_iter().map(|l| median(l).as_secs_f64() * 1e6).collect();
    for (v, l) in variants.iter().zip(&latency) {
        println!("  {:<28} {l:>8.1} µs   (+{:.1} µs)", v.name, l - latency[0]);
    }
    println!("  the collector received {} KiB of spans", exported_stdio / 1024);
    if exported_http == 0 || exported_stdio == 0 {
        println!("the collector received no span from a sampled run: the build named is not the one with telemetry");
        ok = false;
    }
    if !ok && !no_fail {
        std::process::exit(1);
    }
}

/// Prints each variant against the first; whether every exported span costs under 10% and
/// sampling off under 3%.
fn compare(variants: &[Variant], figures: &[Figures], unit: &str) -> bool {
    let mut ok = true;
    for (v, figure) in variants.iter().zip(figures.iter().map(|f| f.per_second)).skip(1) {
        let ratio = figure / figures[0].per_second;
        let name = format!("  {}", v.name);
        match v.target {
            Some(target) => {
                let met = ratio >= target;
                report(&name, figure, figures[0].per_second, unit, ratio, &format!(">= {target:.2}"), met);
                ok &= met;
            }
            None => report_line(&name, figure, figures[0].per_second, unit, ratio, "(not judged)"),
        }
    }
    ok
}
