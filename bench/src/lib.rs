//! Shared pieces of the benchmarks: driving a stdio server process, timing, memory readings.
//!
//! Every benchmark measures our server and a no-framework floor in the same run, on the same
//! machine, and prints ratios: absolute numbers on a shared, noisy machine mean little.
#![allow(clippy::print_stdout)] // benchmarks report on stdout

pub mod http;

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A binary built next to the running benchmark (same target directory and profile).
pub fn sibling_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let path = exe.parent().unwrap().join(name);
    assert!(path.exists(), "{} not found: build it first (cargo build --profile dist --workspace)", path.display());
    path
}

/// A stdio server process with buffered pipes.
pub struct StdioProcess {
    /// The child.
    pub child: Child,
    /// Its stdin.
    pub stdin: BufWriter<ChildStdin>,
    /// Its stdout.
    pub stdout: BufReader<ChildStdout>,
}

impl StdioProcess {
    /// Spawns `path` with `args`.
    pub fn spawn(path: &Path, args: &[&str]) -> StdioProcess {
        StdioProcess::spawn_with_env(path, args, &[])
    }

    /// [`spawn`](Self::spawn) with these environment variables set.
    pub fn spawn_with_env(path: &Path, args: &[&str], env: &[(&str, String)]) -> StdioProcess {
        let mut child = Command::new(path)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", path.display()));
        let stdin = BufWriter::new(child.stdin.take().unwrap());
        let stdout = BufReader::new(child.stdout.take().unwrap());
        StdioProcess { child, stdin, stdout }
    }

    /// Writes one line and flushes.
    pub fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads one line.
    pub fn recv(&mut self) -> String {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the server closed its stdout");
        line
    }

    /// Peak resident set size (VmHWM) in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        rss_field(self.child.id(), "VmHWM:")
    }

    /// Current resident set size (VmRSS) in KiB.
    pub fn rss_kib(&self) -> u64 {
        rss_field(self.child.id(), "VmRSS:")
    }

    /// Closes stdin and waits for the exit.
    pub fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// A field of /proc/PID/status in KiB (`VmRSS:`, `VmHWM:`).
pub fn rss_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The CPU time process `pid` has used so far, all its threads together (the first field of
/// each `/proc/PID/task/TID/schedstat`, nanoseconds; a thread that already ended is not in it,
/// so a later reading can be smaller: subtract with `saturating_sub`).
/// What a request costs a server, steadier than throughput on a shared machine, where the load
/// and the server compete for the same cores.
pub fn cpu_time(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    let nanos: u64 = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// Pins this process, and the children it spawns from now on, to one CPU.
///
/// Latency is measured with client and server on the same core: otherwise the figure is
/// dominated by the scheduler's cross-core wake-ups, which flip between ~7 us and ~40 us on
/// this kind of machine and say nothing about the server.
#[allow(unsafe_code)]
pub fn pin_to_one_cpu() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity only read
    // and write that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The median of some durations.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Times `f` once.
pub fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed(), out)
}

/// Prints one result line: name, ours, floor, ratio, target, verdict.
pub fn report(name: &str, ours: f64, floor: f64, unit: &str, ratio: f64, target: &str, ok: bool) {
    let verdict = if ok { "OK" } else { "MISSED" };
    report_line(name, ours, floor, unit, ratio, &format!("(target {target}) {verdict}"));
}

/// Prints one result line as [`report`] does, `tail` in place of the target and verdict.
pub fn report_line(name: &str, ours: f64, floor: f64, unit: &str, ratio: f64, tail: &str) {
    println!("{name:<44} ours {ours:>12.1} {unit:<8} floor {floor:>12.1} {unit:<8} ratio {ratio:>6.2} {tail}");
}
