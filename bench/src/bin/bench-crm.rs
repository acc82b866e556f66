//! Benchmarks `crm-mcp`'s `search_customer` over 100,000 customers (the demo data ×10) on
//! SQLite and on PostgreSQL (a throwaway cluster started here), for 1-, 2- and 3+-character
//! queries and e-mail addresses: p50 and p99 of the call's round trip over stdio, next to the
//! floor of the same run (`mcp-example`'s `echo`, the transport and framework without a
//! database). Then the cold start to the first answer against `mcp-example`'s.
//! Targets, on both backends: every kind of query p50 under 2 ms and p99 under 20 ms; an exact
//! e-mail address and a customer id (`get_customer`) p50 under 0.5 ms. Each line says OK or
//! MISSED; the run exits 1 if any is missed (`--no-fail`: 0).
//!
//! Run: `cargo build --profile dist -p crm-mcp -p mcp-example -p mcp-bench && target/dist/bench-crm`
//! (`--no-postgres` for SQLite only).
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crm_mcp::pg_cluster::Cluster;
use mcp_bench::{median, report, sibling_binary, StdioProcess};
use serde_json::json;

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const ROUNDS: usize = 300;
const RO_PASSWORD: &str = "bench-ro-password-1234";

const CLASSES: [(&str, &[&str]); 6] = [
    ("1 character", &["田", "藤", "木", "子", "a"]),
    ("2 characters", &["山田", "佐藤", "ヤマ", "たな", "ta"]),
    ("3+ characters", &["山田太郎", "ヤマダタロウ", "たかはし", "tanaka", "髙橋誠", "Haruka Sato"]),
    ("rare or absent 1–2 characters", &["鬱", "ゐ", "zq", "ヂ", "@q"]),
    ("e-mail", &["yamada@example.com", "haruka.sato@example.com", "YAMADA@EXAMPLE.COM", "example.org"]),
    ("exact e-mail", &["yamada@example.com", "YAMADA@EXAMPLE.COM"]),
];

fn started(program: &Path, args: &[&str], env: &[(&str, &str)]) -> StdioProcess {
    for (k, v) in env {
        std::env::set_var(k, v);
    }
    let mut p = StdioProcess::spawn(program, args);
    for (k, _) in env {
        std::env::remove_var(k);
    }
    p.send(INIT);
    let r = p.recv();
    assert!(r.contains("serverInfo"), "{r}");
    p.send(INITIALIZED);
    p
}

fn call(p: &mut StdioProcess, id: usize, tool: &str, arguments: serde_json::Value) -> Duration {
    let line =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let start = Instant::now();
    p.send(&line.to_string());
    let r = p.recv();
    let d = start.elapsed();
    assert!(!r.contains("\"isError\":true") && r.contains("\"result\""), "{r}");
    d
}

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One line: p50 against the floor, and p99, each checked against its target.
fn check(name: &str, samples: Vec<Duration>, floor_p50: Duration, p50_max: Duration, p99_max: Duration) -> bool {
    let (p50, p99) = (percentile(samples.clone(), 0.5), percentile(samples, 0.99));
    let ok = p50 < p50_max && p99 < p99_max;
    let target = format!("p50 < {} ms, p99 < {} ms", ms(p50_max), ms(p99_max));
    report(
        &format!("{name} p50"),
        ms(p50) * 1000.0,
        ms(floor_p50) * 1000.0,
        "us",
        ms(p50) / ms(floor_p50),
        &target,
        ok,
    );
    println!("{:<44} p99 {:>8.2} ms", name, ms(p99));
    ok
}

/// p50 and p99 of each query class and of the id lookup, with the floor's p50 beside.
fn search_latencies(backend: &str, p: &mut StdioProcess, floor_p50: Duration) -> bool {
    let mut ok = true;
    for (class, queries) in CLASSES {
        for (i, q) in queries.iter().enumerate().take(3) {
            call(p, 1_000 + i, "search_customer", json!({"query": q}));
        }
        let samples: Vec<Duration> = (0..ROUNDS)
            .map(|i| call(p, 10_000 + i, "search_customer", json!({"query": queries[i % queries.len()]})))
            .collect();
        let p50_max = if class == "exact e-mail" { Duration::from_micros(500) } else { Duration::from_millis(2) };
        ok &= check(&format!("{backend}: search {class}"), samples, floor_p50, p50_max, Duration::from_millis(20));
    }
    let samples: Vec<Duration> = (0..ROUNDS)
        .map(|i| call(p, 20_000 + i, "get_customer", json!({"customer_id": 1023 + (i % 50) as i64})))
        .collect();
    ok &= check(
        &format!("{backend}: get_customer by id"),
        samples,
        floor_p50,
        Duration::from_micros(500),
        Duration::from_millis(20),
    );
    ok
}

/// Spawn to the first answer: `initialize` and one call.
fn cold_start(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    tool: &str,
    arguments: serde_json::Value,
) -> Duration {
    let start = Instant::now();
    let mut p = started(program, args, env);
    call(&mut p, 1, tool, arguments);
    let d = start.elapsed();
    p.finish();
    d
}

fn init(crm: &Path, db: &str, env: &[(&str, &str)]) {
    let out = Command::new(crm).args(["init", "--db", db, "--scale", "10"]).envs(env.iter().copied()).output().unwrap();
    assert!(out.status.success(), "crm-mcp init: {}", String::from_utf8_lossy(&out.stderr));
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let with_postgres = !std::env::args().any(|a| a == "--no-postgres");
    let crm = sibling_binary("crm-mcp");
    let example = sibling_binary("mcp-example");
    let dir = std::env::temp_dir().join(format!("bench-crm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = dir.join("crm-100k.sqlite");
    let sqlite_db = format!("sqlite:{}", sqlite.display());
    let t = Instant::now();
    init(&crm, &sqlite_db, &[]);
    println!("init SQLite, 100,000 customers: {:.1} s", t.elapsed().as_secs_f64());

    let mut floor = started(&example, &[], &[]);
    let floor_samples: Vec<Duration> =
        (0..ROUNDS).map(|i| call(&mut floor, i, "echo", json!({"text": "山田"}))).collect();
    let floor_p50 = median(floor_samples);
    floor.finish();
    println!("floor: mcp-example echo p50 {:.1} us", ms(floor_p50) * 1000.0);

    let mut server = started(&crm, &["--db", &sqlite_db], &[]);
    let mut ok = search_latencies("SQLite", &mut server, floor_p50);
    server.finish();

    let mut cluster = None;
    if with_postgres {
        let pg = Cluster::start().expect("a throwaway PostgreSQL cluster");
        pg.psql("postgres", "CREATE DATABASE crm").unwrap();
        let t = Instant::now();
        init(&crm, "postgres", &[("CRM_DATABASE_URL", &pg.admin_url("crm")), ("CRM_READONLY_PASSWORD", RO_PASSWORD)]);
        println!("init PostgreSQL, 100,000 customers: {:.1} s", t.elapsed().as_secs_f64());
        let url = pg.url("crm_mcp_ro", RO_PASSWORD, "crm");
        let mut server = started(&crm, &[], &[("CRM_DATABASE_URL", &url)]);
        ok &= search_latencies("PostgreSQL", &mut server, floor_p50);
        server.finish();
        cluster = Some((pg, url));
    }

    // Cold start to the first answer (the demo database already cached; then a first run that
    // builds it).
    let cache = dir.join("cache");
    let cache_env = [("XDG_CACHE_HOME", cache.to_str().unwrap())];
    let t = Instant::now();
    let first = cold_start(&crm, &[], &cache_env, "search_customer", json!({"query": "山田"}));
    let _ = t;
    let rounds = 20;
    let crm_cold = median(
        (0..rounds).map(|_| cold_start(&crm, &[], &cache_env, "search_customer", json!({"query": "山田"}))).collect(),
    );
    let file_cold = median(
        (0..rounds)
            .map(|_| cold_start(&crm, &["--db", &sqlite_db], &[], "search_customer", json!({"query": "山田"})))
            .collect(),
    );
    let example_cold =
        median((0..rounds).map(|_| cold_start(&example, &[], &[], "echo", json!({"text": "hi"}))).collect());
    let ratio = ms(crm_cold) / ms(example_cold);
    report(
        "cold start to first answer (demo, cached)",
        ms(crm_cold) * 1000.0,
        ms(example_cold) * 1000.0,
        "us",
        ratio,
        "reported",
        true,
    );
    report(
        "cold start to first answer (100k SQLite)",
        ms(file_cold) * 1000.0,
        ms(example_cold) * 1000.0,
        "us",
        ms(file_cold) / ms(example_cold),
        "reported",
        true,
    );
    println!("first run ever (builds the demo database): {:.0} ms", ms(first));
    if let Some((_pg, url)) = &cluster {
        let env = [("CRM_DATABASE_URL", url.as_str())];
        let pg_cold = median(
            (0..rounds).map(|_| cold_start(&crm, &[], &env, "search_customer", json!({"query": "山田"}))).collect(),
        );
        report(
            "cold start to first answer (PostgreSQL)",
            ms(pg_cold) * 1000.0,
            ms(example_cold) * 1000.0,
            "us",
            ms(pg_cold) / ms(example_cold),
            "reported",
            true,
        );
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
    if !ok && !no_fail {
        std::process::exit(1);
    }
}
