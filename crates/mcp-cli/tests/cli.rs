//! `mcp` end to end: real processes and sockets against `mcp-example`, over stdio and HTTP in
//! both eras, `--json`, `--config`, and each exit code from a real failure.

use std::process::{Command, Output, Stdio};

use mcp::testing::HttpServer;
use serde_json::Value;

mod common;
use common::{conformance_server, example, mcp, running, unique_sleep, Tmux};

/// `mcp` with `args`, remembering server eras in a directory of this test run's (not the
/// user's cache).
fn run(args: &[&str]) -> Output {
    static CACHE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    run_with_cache(CACHE.get_or_init(|| tempfile::tempdir().unwrap()).path(), args)
}

fn run_with_cache(cache: &std::path::Path, args: &[&str]) -> Output {
    Command::new(mcp()).args(args).env("XDG_CACHE_HOME", cache).stdin(Stdio::null()).output().unwrap()
}

fn stdio(args: &[&str]) -> Output {
    let example = example();
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.push(example.to_str().unwrap());
    run(&all)
}

/// `mcp-example --http` on a port the OS picks, read from its "serving MCP on URL" line.
fn http_server() -> HttpServer {
    HttpServer::start(example(), &[]).expect("mcp-example serves HTTP")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn lists_and_calls_over_stdio_in_both_eras() {
    for era in [&[][..], &["--legacy"][..]] {
        let out = stdio(&[era, &["--json", "tools"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let names: Vec<String> =
            json(&out)["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
        assert!(names.contains(&"echo".to_owned()) && names.contains(&"sum".to_owned()));
        let out = stdio(&[era, &["call", "sum", "a=2", "b=3"]].concat());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "2 + 3 = 5\n");
        let out = stdio(&[era, &["--json", "discover"]].concat());
        let era_text = json(&out)["era"].as_str().unwrap().to_owned();
        assert_eq!(era_text.starts_with("legacy"), !era.is_empty(), "{era_text}");
    }
}

#[test]
fn lists_and_calls_over_http_in_both_eras() {
    let server = http_server();
    for era in [&[][..], &["--legacy"][..]] {
        let out = run(&[era, &["--url", server.url(), "--json", "call", "echo", "text=hello there"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(json(&out)["content"][0]["text"], "hello there");
        let out = run(&[era, &["--url", server.url(), "read", "example://greeting/Ada"]].concat());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "Hello, Ada!\n");
    }
}

#[test]
fn a_server_from_an_mcp_servers_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let body = serde_json::json!({"mcpServers": {"example": {"command": example(), "args": [], "env": {"X": "1"}}}});
    std::fs::write(&config, body.to_string()).unwrap();
    let out = run(&["--config", config.to_str().unwrap(), "--server", "example", "prompt", "greet", "name=Ada"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Ada"));
    let out = run(&["--config", config.to_str().unwrap(), "--server", "missing", "tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("example"), "lists the names it has");
}

#[test]
fn each_exit_code_comes_from_a_real_failure() {
    assert_eq!(run(&["tools", "--", "/nonexistent/server"]).status.code(), Some(3), "cannot start");
    assert_eq!(run(&["--url", "http://127.0.0.1:1/mcp", "tools"]).status.code(), Some(3), "nothing listens");
    let out = stdio(&["call", "no_such_tool"]);
    assert_eq!(out.status.code(), Some(4), "a JSON-RPC error");
    let out = stdio(&["--json", "call", "sum", "a=1e308", "b=1e308"]);
    assert_eq!(out.status.code(), Some(5), "isError: true");
    assert_eq!(json(&out)["isError"], true);
    assert_eq!(run(&["tools"]).status.code(), Some(2), "no server named");
    let help = run(&["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("5  the tool ran and reported an error"));
}

#[test]
fn trace_shows_every_message_on_stderr_and_json_keeps_stdout_clean() {
    let out = stdio(&["--trace", "--json", "call", "echo", "text=x"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("→ {") && stderr.contains("← {"), "{stderr}");
    assert_eq!(json(&out)["content"][0]["text"], "x");
}

#[test]
fn falls_back_to_the_2024_11_05_http_sse_transport() {
    let server = http_server();
    let old = server.url().replace("/mcp", "/sse");
    let out = run(&["--url", &old, "--json", "call", "echo", "text=old transport"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["content"][0]["text"], "old transport");
    let out = run(&["--url", &old, "--trace", "tools"]);
    let trace = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && trace.contains("\"initialize\""), "{trace}");
}

#[test]
fn junk_on_the_servers_stdout_is_skipped() {
    // Invalid UTF-8 and a non-JSON line before the server proper starts writing.
    let script = format!("printf '\\377\\376 not json\\n{{oops\\n'; exec '{}'", example().display());
    let out = run(&["call", "echo", "text=hi", "--", "sh", "-c", &script]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
}

#[test]
fn a_server_that_exits_without_answering_fails_at_once() {
    // It reads the first request and leaves: the client must not wait out its 60 s timeout.
    let out = run(&["ping", "--", "sh", "-c", "read line; exit 0"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the connection closed"), "{stderr}");
}

#[test]
fn the_servers_stderr_is_shown_unless_quiet() {
    let script = format!("echo 'a note from the server' >&2; exec '{}'", example().display());
    let out = run(&["ping", "--", "sh", "-c", &script]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("a note from the server"));
    for quiet in [&["--quiet", "ping"][..], &["ping", "--quiet"][..]] {
        let out = run(&[quiet, &["--", "sh", "-c", &script]].concat());
        assert!(out.status.success());
        assert!(!String::from_utf8_lossy(&out.stderr).contains("a note from the server"), "{quiet:?}");
    }
    // A server that cannot start says why, and the user sees it.
    let out = run(&["tools", "--", "sh", "-c", "echo 'no config file at /etc/x' >&2; exit 1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no config file at /etc/x"));
}

#[test]
fn no_server_is_left_running_after_a_usage_error_or_help() {
    // The server after `--` may be started before the command line is parsed; whatever the
    // parse finds, it must not outlive `mcp`.
    for args in [&["--no-such-flag", "tools"][..], &["call"][..], &["tools", "--help"][..], &["--json"][..]] {
        let sleep = unique_sleep();
        let out = run(&[args, &["--", "sleep", &sleep]].concat());
        assert_ne!(out.status.code(), Some(0).filter(|_| !args.contains(&"--help")), "{args:?}");
        assert!(!running(&sleep), "{args:?} left `sleep {sleep}` running");
    }
}

#[test]
fn a_server_that_ignores_the_end_of_its_input_is_ended() {
    // `sleep` neither answers nor reads stdin: the connection fails, closing stdin does not end
    // it, so the client kills it after its grace period.
    let sleep = unique_sleep();
    let out = run(&["--timeout", "1", "ping", "--", "sleep", &sleep]);
    assert_ne!(out.status.code(), Some(0));
    assert!(!running(&sleep), "`sleep {sleep}` outlived mcp");
}

/// A legacy server in a few lines of shell: it knows `initialize`, `ping`, `tools/list` and
/// `tools/call` (which appends a line to `log`), and answers everything else (`server/discover`
/// included) with "method not found". Like some real legacy servers, it does not insist on
/// `initialize` coming first.
fn legacy_server(log: &std::path::Path) -> String {
    r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  [ -n "$id" ] || continue
  case "$line" in
    *'"method":"initialize"'*) r='{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}' ;;
    *'"method":"ping"'*) r='{}' ;;
    *'"method":"tools/list"'*) r='{"tools":[{"name":"antique","inputSchema":{"type":"object"}}]}' ;;
    *'"method":"tools/call"'*) echo ran >> 'LOG'; r='{"content":[{"type":"text","text":"ran"}]}' ;;
    *) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id"; continue ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$r"
done"#
        .replace("LOG", log.to_str().unwrap())
}

/// The order of the JSON-RPC methods `mcp --trace` sent and received.
fn traced_methods(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|line| {
            let (arrow, message) = line.split_once(' ')?;
            let message: Value = serde_json::from_str(message).ok()?;
            let what = message["method"].as_str().map_or_else(|| format!("answer {}", message["id"]), str::to_owned);
            Some(format!("{arrow} {what}"))
        })
        .collect()
}

#[test]
fn a_servers_era_is_remembered_between_runs() {
    let cache = tempfile::tempdir().unwrap();
    let example = example();
    let server = ["--", example.to_str().unwrap()];
    let tools = [&["--trace", "--json", "tools"][..], &server].concat();
    // First run: the probe (a `ping`, which a 2026-07-28 server does not know, then
    // `server/discover`) is answered before the request goes out.
    let first = run_with_cache(cache.path(), &tools);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let sent = traced_methods(&first);
    assert_eq!(sent[..5], ["→ ping", "← answer 1", "→ server/discover", "← answer 2", "→ tools/list"], "{sent:?}");
    // Second run: the request goes out alongside the probe, one round trip instead of two.
    let second = run_with_cache(cache.path(), &tools);
    assert_eq!(json(&second), json(&first));
    let sent = traced_methods(&second);
    assert_eq!(sent[..2], ["→ server/discover", "→ tools/list"], "{sent:?}");
    // A tool call still waits for the era to be confirmed.
    let call = run_with_cache(cache.path(), &[&["--trace", "call", "echo", "text=hi"][..], &server].concat());
    assert_eq!(String::from_utf8_lossy(&call.stdout), "hi\n");
    let sent = traced_methods(&call);
    assert_eq!(sent[..3], ["→ server/discover", "← answer 1", "→ tools/call"], "{sent:?}");
    // --reprobe forgets it for one run.
    let sent = traced_methods(&run_with_cache(cache.path(), &[&["--reprobe"][..], &tools].concat()));
    assert_eq!(sent[..2], ["→ ping", "← answer 1"], "{sent:?}");
    // Another working directory and another shell environment (a `cd`, a new tab) are the same
    // server: still remembered.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = Command::new(mcp())
        .args(&tools)
        .env("XDG_CACHE_HOME", cache.path())
        .env("OLDPWD", "/somewhere/else")
        .env("SOME_UNRELATED_VARIABLE", "changed")
        .current_dir(elsewhere.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let sent = traced_methods(&moved);
    assert_eq!(sent[..2], ["→ server/discover", "→ tools/list"], "{sent:?}");
    // The same command with another environment of its own (`--env`, an entry's "env") is
    // another server, probed afresh.
    let other = run_with_cache(cache.path(), &[&["--env", "SOME_SERVER_MODE=other"][..], &tools].concat());
    let sent = traced_methods(&other);
    assert_eq!(sent[..2], ["→ ping", "← answer 1"], "{sent:?}");
}

#[test]
fn a_wrong_memory_costs_a_fallback_not_a_wrong_answer() {
    let cache = tempfile::tempdir().unwrap();
    let log = cache.path().join("calls.log");
    let script = legacy_server(&log);
    let server = ["--", "sh", "-c", &script];
    // Learn that it is legacy: its answer to `ping` says so, and it is initialized.
    let out = run_with_cache(cache.path(), &[&["--trace", "--json", "tools"][..], &server].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["tools"][0]["name"], "antique");
    // Remembered as legacy: initialize at once, no probe.
    let out = run_with_cache(cache.path(), &[&["--trace", "ping"][..], &server].concat());
    let sent = traced_methods(&out);
    assert_eq!(sent[0], "→ initialize", "{sent:?}");
    assert!(!sent.iter().any(|m| m.contains("server/discover")), "{sent:?}");
    // Now pretend it was remembered as modern (say the server was downgraded): a request goes
    // out in the modern era, the probe says otherwise, and the request is sent again after
    // `initialize`. The answer is right, and the memory is corrected.
    let file = cache.path().join("mcp").join("eras.json");
    let remembered_modern = || {
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("\"legacy\"", "\"2026-07-28\"")).unwrap();
    };
    remembered_modern();
    let out = run_with_cache(cache.path(), &[&["--trace", "--json", "tools"][..], &server].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["tools"][0]["name"], "antique");
    assert!(traced_methods(&out).contains(&"→ initialize".to_owned()));
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"legacy\""));
    // A tool call under the same wrong memory runs once, not once before and once after
    // `initialize`.
    remembered_modern();
    let out = run_with_cache(cache.path(), &[&["call", "antique"][..], &server].concat());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "ran\n");
}

#[test]
fn roots_are_offered_only_when_asked_for_with_root() {
    let server = conformance_server();
    let server = server.to_str().unwrap();
    let tool = "test_input_required_result_list_roots";
    let out = run(&["call", tool, "--", server]);
    assert_eq!(out.status.code(), Some(4), "no roots capability, so the server's request fails: {out:?}");
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let out = run(&["call", tool, "--root", root.to_str().unwrap(), "--", server]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("Client roots: file://{}", root.display()));
    let out = run(&["call", tool, "--root", "/nonexistent/dir", "--", server]);
    assert_eq!(out.status.code(), Some(2), "a root that does not exist is a usage error");
}

#[test]
fn a_config_with_one_server_needs_no_name_and_servers_lists_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.json");
    let entry = serde_json::json!({"command": example(), "args": []});
    std::fs::write(&one, serde_json::json!({"mcpServers": {"example": entry}}).to_string()).unwrap();
    let out = run(&["--config", one.to_str().unwrap(), "call", "echo", "text=solo"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "solo\n", "{}", String::from_utf8_lossy(&out.stderr));
    let two = dir.path().join("two.json");
    let servers = serde_json::json!({"mcpServers": {"example": entry, "remote": {"type": "http", "url": "https://mcp.example/mcp"}}});
    std::fs::write(&two, servers.to_string()).unwrap();
    let out = run(&["--config", two.to_str().unwrap(), "tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--server"), "says to name one");
    let out = run(&["--config", two.to_str().unwrap(), "--json", "servers"]);
    let listed = json(&out)["servers"].clone();
    assert_eq!(listed[0]["name"], "example");
    assert_eq!(listed[0]["transport"], "stdio");
    assert_eq!(listed[1], serde_json::json!({"name": "remote", "transport": "http", "url": "https://mcp.example/mcp"}));
    let out = run(&["--config", two.to_str().unwrap(), "servers"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("remote\thttp\thttps://mcp.example/mcp"));
}

#[test]
fn an_elicitation_form_is_answered_at_a_terminal() {
    let server = conformance_server();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let command = format!(
        "{} call test_elicitation message=Who? -- {} > {}; echo EXIT=$? >> {}",
        mcp().display(),
        server.display(),
        out.display(),
        out.display()
    );
    let tmux = Tmux::new();
    tmux.run(&["new-session", "-d", "-s", "t", "-x", "160", "-y", "50", &command]);
    tmux.wait_for("The server asks: Who?");
    tmux.wait_for("email (text, required)");
    tmux.type_line("ada@example.com");
    tmux.wait_for("username (text, required)");
    tmux.type_line(""); // required: asked again
    tmux.wait_for("this field is required");
    tmux.type_line("ada");
    tmux.wait_for("Send {");
    tmux.type_line("y");
    for _ in 0..400 {
        if std::fs::read_to_string(&out).unwrap_or_default().contains("EXIT=") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let printed = std::fs::read_to_string(&out).unwrap();
    assert!(
        printed.contains(r#"User response: <action: accept, content: {"email":"ada@example.com","username":"ada"}>"#),
        "{printed}"
    );
    assert!(printed.contains("EXIT=0"), "{printed}");
}

#[test]
fn without_a_terminal_a_form_is_declined_or_filled_with_defaults() {
    let server = conformance_server();
    let out = run(&["call", "test_elicitation", "message=Who?", "--", server.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("action: decline"), "{out:?}");
}

#[test]
fn mcp_call_follows_a_batch_showing_its_progress_and_prints_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ibans.txt"), "FR76 3000 6000 0112 3456 7890 189\n".repeat(1_000_000)).unwrap();
    let uri = format!("file://{}/ibans.txt", std::fs::canonicalize(dir.path()).unwrap().display());
    let out = dir.path().join("out.txt");
    let command = format!(
        "{} call iban_check_batch uri={uri} -- {} --input-dir {} > {}; echo EXIT=$? >> {}",
        mcp().display(),
        common::paypedia().display(),
        dir.path().display(),
        out.display(),
        out.display()
    );
    let tmux = Tmux::new();
    tmux.run(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "20", &command]);
    tmux.wait_for("task working: checked ");
    tmux.wait_for("IBANs, 0 invalid");
    for _ in 0..1200 {
        if std::fs::read_to_string(&out).unwrap_or_default().contains("EXIT=") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let printed = std::fs::read_to_string(&out).unwrap();
    assert!(printed.contains("**1000000 IBANs checked: 1000000 valid, 0 invalid.**"), "{printed}");
    assert!(printed.contains("Valid per country: FR 1000000/1000000."), "{printed}");
    assert!(printed.contains("EXIT=0"), "{printed}");
}

#[test]
fn ctrl_c_while_waiting_for_a_task_asks_the_server_to_cancel_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let command = format!(
        "{} --trace call slow_compute seconds=300 -- {} 2> {}; echo EXIT=$? >> {}",
        mcp().display(),
        conformance_server().display(),
        out.display(),
        out.display()
    );
    let tmux = Tmux::new();
    tmux.run(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "20", &command]);
    for _ in 0..400 {
        if std::fs::read_to_string(&out).unwrap_or_default().contains("\"method\":\"tasks/get\"") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    tmux.run(&["send-keys", "-t", "t", "C-c"]);
    for _ in 0..400 {
        if std::fs::read_to_string(&out).unwrap_or_default().contains("EXIT=") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let trace = std::fs::read_to_string(&out).unwrap();
    assert!(trace.contains("\"method\":\"tasks/cancel\""), "no tasks/cancel was sent:\n{trace}");
    assert!(trace.contains("asked the server to cancel task"), "{trace}");
    assert!(trace.contains("EXIT=130"), "{trace}");
}

#[test]
fn skills_are_listed_without_reading_loaded_verified_and_written() {
    let server = conformance_server();
    let server = server.to_str().unwrap();
    let listed = json(&run(&["skills", "--json", "--", server]));
    let skill = &listed["skills"][0];
    assert_eq!(skill["name"], "pdf-processing");
    assert_eq!(skill["files"], 2);
    assert!(skill["digest"].as_str().unwrap().starts_with("sha256:"), "{skill}");
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["skills", "pdf-processing", "--out", dir.path().to_str().unwrap(), "--", server]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest = std::fs::read_to_string(dir.path().join("pdf-processing/SKILL.md")).unwrap();
    assert!(manifest.starts_with("---\nname: pdf-processing"), "{manifest}");
    assert!(dir.path().join("pdf-processing/references/FORMS.md").is_file());
    let unknown = run(&["skills", "nope", "--", server]);
    assert_eq!(unknown.status.code(), Some(2));
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(said.matches("has no skill \"nope\"").count(), 1, "said once: {said}");
    let none = stdio(&["skills"]);
    assert_eq!(none.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&none.stderr).contains("serves no skills"));
}

#[test]
fn a_skill_whose_files_do_not_match_their_entry_is_refused_and_nothing_after_is_read() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/skills/tampered.py");
    for (mode, why) in [("digest", "digest"), ("size", "bytes where the entry says"), ("frontmatter", "frontmatter")] {
        let dir = tempfile::tempdir().unwrap();
        let reads = dir.path().join("reads");
        let out = Command::new(mcp())
            .args(["skills", "pdf-processing", "--", "python3", script.to_str().unwrap()])
            .env("MODE", mode)
            .env("READS", &reads)
            .env("XDG_CACHE_HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{mode}: {stderr}");
        assert!(stderr.contains("failed verification") && stderr.contains(why), "{mode}: {stderr}");
        assert!(out.stdout.is_empty(), "{mode}: nothing unverified is shown");
        let read = std::fs::read_to_string(&reads).unwrap();
        assert_eq!(read.lines().collect::<Vec<_>>(), ["skill://pdf-processing/SKILL.md"], "{mode}");
    }
}
