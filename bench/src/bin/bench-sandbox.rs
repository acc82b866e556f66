//! `bench-sandbox`: what the kernel sandbox of `mcp-stack-sandbox` costs a stdio server, in the
//! same run: paypedia's spawn to `initialize` answered, plain and inside the strict default policy
//! (Landlock, seccomp, a user namespace, limits; started the way the client starts it: the child
//! made without `fork`, the policy applied before exec), alternating, with the same sandbox started
//! through a `pre_exec` hook (a fork) beside; then the latency of `tools/call` inside each.
//!
//! `cargo build --profile dist -p paypedia && cargo build --profile dist -p mcp-bench && target/dist/bench-sandbox`
#![allow(clippy::print_stdout)] // a benchmark reports on stdout

use std::fs::File;
use std::io::{BufRead as _, BufReader, BufWriter, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp::client::{Confine, StartOptions, Stderr};
use mcp_bench::{median, report, sibling_binary};
use mcp_sandbox::{Policy, Sandbox};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const CHECK: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"iban_check","arguments":{"input":"FR7630006000011234567890189"}}}"#;

/// How a process is started.
#[derive(Clone, Copy)]
enum Start<'a> {
    /// As `mcp call` starts an unsandboxed server (no hook: `posix_spawn`).
    Plain,
    /// With an empty `pre_exec` hook, as the gateway and `mcp chat` start one (`fork`, then exec).
    Forked,
    /// Inside the sandbox as the client starts it (`Confine::start`: no `fork`).
    Sandboxed(&'a Sandbox),
    /// Inside the sandbox with its steps as a `pre_exec` hook (`fork`), as `mcp sandbox -- CMD`
    /// and the doctor start one.
    SandboxedForked(&'a Sandbox),
}

/// Time spent in `Sandbox::prepare` (the parent's share before the fork), summed.
static PREPARE_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A started server: its pipes, the process to reap, and what its sandbox keeps meanwhile.
struct Server {
    stdin: BufWriter<File>,
    stdout: BufReader<File>,
    process: Process,
    kept: Option<Box<dyn std::any::Any + Send + Sync>>,
}

enum Process {
    Child(Child),
    Pid(u32),
}

impl Server {
    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line
    }

    /// Closes its stdin, reaps it, then drops what its sandbox kept.
    #[allow(unsafe_code)]
    fn finish(self) {
        drop(self.stdin);
        match self.process {
            Process::Child(mut child) => drop(child.wait()),
            // SAFETY: waitpid on our own child, not yet reaped.
            Process::Pid(pid) => unsafe {
                libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
            },
        }
        drop(self.kept);
    }
}

/// Starts `path`.
#[allow(unsafe_code)]
fn start(path: &Path, how: Start<'_>) -> Server {
    let mut command = Command::new(path);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let kept = match how {
        Start::Plain => None,
        Start::Forked => {
            // SAFETY: the hook does nothing.
            unsafe { std::os::unix::process::CommandExt::pre_exec(&mut command, || Ok(())) };
            None
        }
        Start::Sandboxed(sandbox) => {
            let options = StartOptions { stderr: Stderr::Discard, own_process_group: false, die_with_parent: false };
            let started = sandbox.start(&command, options).expect("Linux").expect("the sandbox applies on this kernel");
            let (started, kept) = started;
            return Server {
                stdin: BufWriter::new(File::from(started.stdin)),
                stdout: BufReader::new(File::from(started.stdout)),
                process: Process::Pid(started.pid),
                kept: Some(kept),
            };
        }
        Start::SandboxedForked(sandbox) => {
            let started = Instant::now();
            let kept = sandbox.prepare(&mut command).expect("the sandbox applies on this kernel");
            PREPARE_NS.fetch_add(started.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
            Some(kept)
        }
    };
    let mut child = command.spawn().expect("spawn");
    let stdin = BufWriter::new(File::from(std::os::fd::OwnedFd::from(child.stdin.take().unwrap())));
    let stdout = BufReader::new(File::from(std::os::fd::OwnedFd::from(child.stdout.take().unwrap())));
    Server { stdin, stdout, process: Process::Child(child), kept }
}

/// Spawn to the `initialize` answer.
fn to_initialize(path: &Path, how: Start<'_>) -> Duration {
    let started = Instant::now();
    let mut p = start(path, how);
    p.send(INIT);
    let answer = p.recv();
    let took = started.elapsed();
    assert!(answer.contains("\"id\":0") && answer.contains("protocolVersion"), "{answer}");
    p.finish();
    took
}

/// Median `tools/call` round trip over `calls` sequential calls on one process.
fn call_latency(path: &Path, how: Start<'_>, calls: usize) -> Duration {
    let mut p = start(path, how);
    p.send(INIT);
    p.recv();
    p.send(INITIALIZED);
    let samples = (0..calls)
        .map(|_| {
            let started = Instant::now();
            p.send(CHECK);
            let answer = p.recv();
            assert!(answer.contains("VALID"), "{answer}");
            started.elapsed()
        })
        .collect();
    p.finish();
    median(samples)
}

fn main() {
    let no_fail = std::env::args().any(|a| a == "--no-fail");
    let paypedia = sibling_binary("paypedia");
    let sandbox = Sandbox::new(Policy::strict()).named("paypedia");
    println!("Landlock ABI {}; policy: {}", mcp_sandbox::landlock_abi(), sandbox.policy.summary());
    let boxed_start = Start::Sandboxed(&sandbox);
    let forked_start = Start::SandboxedForked(&sandbox);
    for _ in 0..5 {
        to_initialize(&paypedia, Start::Plain);
        to_initialize(&paypedia, boxed_start);
        to_initialize(&paypedia, forked_start);
    }
    PREPARE_NS.store(0, std::sync::atomic::Ordering::Relaxed);
    const RUNS: u32 = 60;
    let (mut plain, mut forked, mut boxed, mut boxed_forked) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        plain.push(to_initialize(&paypedia, Start::Plain));
        forked.push(to_initialize(&paypedia, Start::Forked));
        boxed.push(to_initialize(&paypedia, boxed_start));
        boxed_forked.push(to_initialize(&paypedia, forked_start));
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (plain, forked, boxed, boxed_forked) = (median(plain), median(forked), median(boxed), median(boxed_forked));
    let prepare = PREPARE_NS.load(std::sync::atomic::Ordering::Relaxed) as f64 / f64::from(RUNS) / 1e3;
    let ratio = boxed.as_secs_f64() / plain.as_secs_f64();
    let start_ok = ratio < 1.2;
    report(
        "paypedia spawn to initialize, sandboxed (us)",
        us(boxed),
        us(plain),
        "us",
        ratio,
        "< 1.20 x plain",
        start_ok,
    );
    println!(
        "  forked plain start (an empty pre_exec hook, as the gateway and mcp chat start unsandboxed servers): {:.0} us ({:.2} x)",
        us(forked),
        forked.as_secs_f64() / plain.as_secs_f64()
    );
    println!(
        "  sandboxed with a pre_exec hook (fork; as mcp sandbox -- CMD starts one): {:.0} us ({:.2} x); its prepare in the parent: {prepare:.0} us on average",
        us(boxed_forked),
        boxed_forked.as_secs_f64() / plain.as_secs_f64()
    );
    let (mut plain_calls, mut boxed_calls) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        plain_calls.push(call_latency(&paypedia, Start::Plain, 400));
        boxed_calls.push(call_latency(&paypedia, boxed_start, 400));
    }
    let (plain_call, boxed_call) = (median(plain_calls), median(boxed_calls));
    let call_ratio = boxed_call.as_secs_f64() / plain_call.as_secs_f64();
    let call_ok = call_ratio < 1.1;
    report(
        "tools/call iban_check p50, sandboxed (us)",
        us(boxed_call),
        us(plain_call),
        "us",
        call_ratio,
        "< 1.10 x plain",
        call_ok,
    );
    if !(no_fail || start_ok && call_ok) {
        std::process::exit(1);
    }
}
