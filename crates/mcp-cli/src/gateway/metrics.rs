//! Per-upstream counters, and the `/metrics` page in the Prometheus text format.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 10] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5, 10.0];

/// What one upstream has done since the gateway started.
#[derive(Debug, Default)]
pub struct Metrics {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub restarts: AtomicU64,
    pub up: AtomicBool,
    /// Children running for one downstream session each.
    pub session_children: AtomicU64,
    latency_micros: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
}

impl Metrics {
    /// Counts one request that took `elapsed`; `failed` when it ended in an error.
    pub fn record(&self, elapsed: Duration, failed: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.latency_micros.fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
        let seconds = elapsed.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A counter's name, its help, and how to read it.
type Counter = (&'static str, &'static str, fn(&Metrics) -> u64);

fn escaped(label: &str) -> String {
    label.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The page: each metric's help and type once, then one line per upstream.
pub fn render<'a>(upstreams: impl Iterator<Item = (&'a str, &'a Metrics)> + Clone) -> String {
    let mut out = String::new();
    let counters: [Counter; 3] = [
        ("mcp_gateway_requests_total", "Requests forwarded to the upstream.", |m| m.requests.load(Ordering::Relaxed)),
        ("mcp_gateway_errors_total", "Forwarded requests that ended in an error.", |m| {
            m.errors.load(Ordering::Relaxed)
        }),
        ("mcp_gateway_restarts_total", "Times the upstream was connected again.", |m| {
            m.restarts.load(Ordering::Relaxed)
        }),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (key, m) in upstreams.clone() {
            let _ = writeln!(out, "{name}{{upstream=\"{}\"}} {}", escaped(key), value(m));
        }
    }
    let _ = writeln!(out, "# HELP mcp_gateway_up Whether the upstream is connected.\n# TYPE mcp_gateway_up gauge");
    for (key, m) in upstreams.clone() {
        let _ =
            writeln!(out, "mcp_gateway_up{{upstream=\"{}\"}} {}", escaped(key), u8::from(m.up.load(Ordering::Relaxed)));
    }
    let _ = writeln!(
        out,
        "# HELP mcp_gateway_session_children Children running for one client session each.\n# TYPE mcp_gateway_session_children gauge"
    );
    for (key, m) in upstreams.clone() {
        let n = m.session_children.load(Ordering::Relaxed);
        let _ = writeln!(out, "mcp_gateway_session_children{{upstream=\"{}\"}} {n}", escaped(key));
    }
    let name = "mcp_gateway_request_duration_seconds";
    let _ = writeln!(out, "# HELP {name} Time from forwarding a request to its answer.\n# TYPE {name} histogram");
    for (key, m) in upstreams {
        let key = escaped(key);
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(&m.buckets) {
            cumulative += count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{upstream=\"{key}\",le=\"{bound}\"}} {cumulative}");
        }
        let total = m.requests.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{upstream=\"{key}\",le=\"+Inf\"}} {total}");
        let sum = m.latency_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum{{upstream=\"{key}\"}} {sum}\n{name}_count{{upstream=\"{key}\"}} {total}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_counts_per_upstream() {
        let a = Metrics::default();
        a.record(Duration::from_micros(300), false);
        a.record(Duration::from_millis(20), true);
        a.up.store(true, Ordering::Relaxed);
        let b = Metrics::default();
        let page = render([("a", &a), ("b\"q", &b)].into_iter());
        assert!(page.contains("mcp_gateway_requests_total{upstream=\"a\"} 2"), "{page}");
        assert!(page.contains("mcp_gateway_errors_total{upstream=\"a\"} 1"));
        assert!(page.contains("mcp_gateway_up{upstream=\"a\"} 1"));
        assert!(page.contains("mcp_gateway_up{upstream=\"b\\\"q\"} 0"));
        assert!(page.contains("le=\"0.0005\"} 1") && page.contains("le=\"0.025\"} 2"));
        assert!(page.contains("mcp_gateway_request_duration_seconds_count{upstream=\"a\"} 2"));
        assert_eq!(page.matches("# TYPE mcp_gateway_requests_total counter").count(), 1);
    }
}
