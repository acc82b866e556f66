//! The report as text for a person, as JSON, and as SARIF 2.1.0 (what code-scanning services
//! read from CI).

use serde_json::{json, Value};

use super::{rules, Finding, Level, Report};

/// Lines for a terminal: what passed, then each finding with its fix, then the counts.
pub fn text(report: &Report) -> String {
    let mut out = format!("mcp doctor: {}\n", report.target);
    for line in &report.passed {
        out.push_str(&format!("  ok  {line}\n"));
    }
    for finding in sorted(report) {
        let subject = finding.subject.as_ref().map(|s| format!(" {s}")).unwrap_or_default();
        out.push_str(&format!("\n{}[{}]{subject}: {}\n", finding.level.name(), finding.rule.id, finding.message));
        if !finding.fix.is_empty() {
            out.push_str(&format!("  fix: {}\n", finding.fix));
        }
    }
    out.push_str(&format!("\n{}\n", counts(report)));
    out
}

/// One JSON document.
pub fn json(report: &Report) -> String {
    let findings: Vec<Value> = sorted(report)
        .iter()
        .map(|f| json!({"rule": f.rule.id, "level": f.level.name(), "subject": f.subject, "message": f.message, "fix": f.fix}))
        .collect();
    let document = json!({
        "target": report.target,
        "ok": !report.failed(),
        "errors": count(report, Level::Error),
        "warnings": count(report, Level::Warning),
        "passed": report.passed,
        "findings": findings,
    });
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

/// SARIF 2.1.0: one run, every rule described, each finding a result at a logical location
/// (the server and what in it: a server has no source file the doctor could point at).
pub fn sarif(report: &Report) -> String {
    let rule_list: Vec<Value> = rules::ALL
        .iter()
        .map(|r| json!({"id": r.id, "shortDescription": {"text": r.summary}, "fullDescription": {"text": r.summary}}))
        .collect();
    let results: Vec<Value> = sorted(report)
        .iter()
        .map(|f| {
            let index = rules::ALL.iter().position(|r| r.id == f.rule.id).unwrap_or(0);
            let place = match &f.subject {
                Some(s) => format!("{} {s}", report.target),
                None => report.target.clone(),
            };
            let mut text = f.message.clone();
            if !f.fix.is_empty() {
                text.push_str(&format!(" Fix: {}", f.fix));
            }
            json!({
                "ruleId": f.rule.id,
                "ruleIndex": index,
                "level": f.level.name(),
                "message": {"text": text},
                "locations": [{"logicalLocations": [{"fullyQualifiedName": place, "kind": "resource"}]}],
                "properties": {"fix": f.fix},
            })
        })
        .collect();
    let document = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcp doctor",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://modelcontextprotocol.io/specification",
                "rules": rule_list,
            }},
            "invocations": [{"executionSuccessful": true}],
            "properties": {"target": report.target},
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

fn sorted(report: &Report) -> Vec<&Finding> {
    let mut findings: Vec<&Finding> = report.findings.iter().collect();
    findings.sort_by_key(|f| f.level);
    findings
}

fn count(report: &Report, level: Level) -> usize {
    report.findings.iter().filter(|f| f.level == level).count()
}

fn counts(report: &Report) -> String {
    let (errors, warnings) = (count(report, Level::Error), count(report, Level::Warning));
    if errors + warnings == 0 {
        return "no problems found".into();
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!("{}, {}", plural(errors, "error"), plural(warnings, "warning"))
}
