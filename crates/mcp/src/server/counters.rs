//! The process's own counters in the Prometheus text format, named as the OpenTelemetry rules
//! for Prometheus would name them (dots as underscores, `_total` on counters): audit lines
//! dropped, requests refused by a rate limit, tasks created. Every `/metrics` page serves them
//! (a server's `--metrics-addr`, `mcp gateway`'s), beside its own.

/// The counters, each with its `# HELP` and `# TYPE` lines.
pub fn prometheus() -> String {
    let counters = [
        (
            "mcp_audit_lines_dropped_total",
            "Audit log lines dropped because the log could not be written as fast as requests came.",
            super::middleware::audit_lines_dropped(),
        ),
        (
            "mcp_rate_limit_refusals_total",
            "Requests refused by a rate limit.",
            super::middleware::rate_limit_refusals(),
        ),
        ("mcp_tasks_created_total", "Tool calls that became tasks.", super::tasks::tasks_created()),
    ];
    counters
        .iter()
        .map(|(name, help, value)| format!("# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"))
        .collect()
}
