//! `mcp chat` end to end: real server processes, a scripted provider on loopback speaking each
//! API's streaming format, consent at a real terminal (tmux), and a hostile server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mcp_host::scripted::{Flavor, ScriptedProvider, Step};
use serde_json::{json, Value};

mod common;
use common::{example, hostile, mcp, paypedia, Tmux};

const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

fn config(dir: &Path, file: &str, servers: Value) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path
}

fn stdio(path: PathBuf) -> Value {
    json!({"command": path.to_str().unwrap(), "args": []})
}

/// `mcp chat` with `args` in `dir`, the provider at `url` (Anthropic unless `--provider`).
fn chat(dir: &Path, url: &str, args: &[&str]) -> Output {
    Command::new(mcp())
        .arg("chat")
        .args(["--base-url", url])
        .args(args)
        .current_dir(dir)
        .env("ANTHROPIC_API_KEY", "sk-test-secret")
        .env("MCP_HOST_STATE", dir.join("state"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().or(t["function"]["name"].as_str()).unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_checks_an_iban_through_paypedia() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "servers.json", json!({"paypedia": stdio(paypedia())}));
    let script = vec![
        Step::call("paypedia__iban_check", json!({"input": IBAN})),
        Step::say("Here is the verdict: {last_result}"),
    ];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let out = chat(dir.path(), &provider.url, &["--config", cfg.to_str().unwrap(), "-p", &format!("Is {IBAN} valid?")]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("Here is the verdict") && stdout.contains("VALID"), "{stdout}");
    assert!(stderr.contains("→ paypedia/iban_check"), "{stderr}");
    let requests = provider.requests();
    assert!(tool_names(&requests[0]).contains(&"paypedia__iban_check".to_owned()));
    let result = &requests[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert!(result["content"][0]["text"].as_str().unwrap().starts_with("<untrusted-data nonce="), "fenced");
    assert!(!stdout.contains("sk-test-secret") && !stderr.contains("sk-test-secret"), "the key is never shown");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_and_a_name_collision_over_the_openai_format() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "servers.json",
        json!({"pay.pedia": stdio(paypedia()), "pay_pedia": stdio(paypedia()), "example": stdio(example())}),
    );
    let provider = ScriptedProvider::start(Flavor::OpenAi, Vec::new()).await;
    let requests_before = provider.requests().len();
    assert_eq!(requests_before, 0);
    // The first request's tools name all three servers; read them, then script the calls.
    let probe =
        chat(dir.path(), &provider.url, &["--provider", "openai", "--config", cfg.to_str().unwrap(), "-p", "list"]);
    let (_, stderr) = text(&probe);
    assert!(
        stderr.contains(
            "renamed: pay_pedia/iban_check would be pay_pedia__iban_check, already the name of pay.pedia/iban_check"
        ),
        "{stderr}"
    );
    let names = tool_names(&provider.requests()[0]);
    let prefix = "pay_pedia__iban_check_";
    let suffixed = |n: &&String| {
        n.len() == prefix.len() + 8 && n.starts_with(prefix) && n[prefix.len()..].bytes().all(|b| b.is_ascii_hexdigit())
    };
    let collided = names.iter().find(suffixed).expect("a suffixed name").clone();
    assert!(
        names.contains(&"pay_pedia__iban_check".to_owned()) && names.contains(&"example__echo".to_owned()),
        "{names:?}"
    );
    let script = vec![
        Step::Turn(
            String::new(),
            vec![(collided.clone(), json!({"input": IBAN})), ("example__echo".into(), json!({"text": "both"}))],
        ),
        Step::say("done: {last_result}"),
    ];
    let provider = ScriptedProvider::start(Flavor::OpenAi, script).await;
    let out = chat(
        dir.path(),
        &provider.url,
        &["--provider", "openai", "--config", cfg.to_str().unwrap(), "--allow", "example/echo", "-p", "check and echo"],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("→ pay_pedia/iban_check") && stderr.contains("→ example/echo"), "{stderr}");
    let messages = provider.requests()[1]["messages"].as_array().unwrap().clone();
    let tool_messages: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 2, "both calls answered");
    assert!(tool_messages[0]["content"].as_str().unwrap().contains("VALID"));
    assert!(stdout.contains("echo") || stdout.contains("both"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_models_get_max_completion_tokens_and_a_refused_field_is_switched() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "servers.json", json!({"paypedia": stdio(paypedia())}));
    let cfg = cfg.to_str().unwrap();
    let limit = |body: &Value| (body.get("max_tokens").cloned(), body.get("max_completion_tokens").cloned());

    // A reasoning model on a compatible server: max_completion_tokens from the first request.
    let provider = ScriptedProvider::start(Flavor::OpenAi, vec![Step::say("reasoned")]).await;
    let args = ["--provider", "openai", "--model", "o3-mini", "--max-tokens", "777", "--config", cfg, "-p", "think"];
    let out = chat(dir.path(), &provider.url, &args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(limit(&provider.requests()[0]), (None, Some(json!(777))));

    // Another model: max_tokens, until the server refuses it by name; the turn is sent again
    // with the other field, and the answer arrives.
    let refusal = r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error"}}"#;
    let script = vec![Step::Fail(400, refusal.into(), None), Step::say("answered")];
    let provider = ScriptedProvider::start(Flavor::OpenAi, script).await;
    let args = ["--provider", "openai", "--model", "gpt-4o", "--config", cfg, "-p", "hello"];
    let out = chat(dir.path(), &provider.url, &args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("answered"), "{stdout}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "one refusal, one retry");
    assert_eq!(limit(&requests[0]), (Some(json!(4096)), None));
    assert_eq!(limit(&requests[1]), (None, Some(json!(4096))));

    // --max-tokens-field chooses, for a server that only knows max_tokens.
    let provider = ScriptedProvider::start(Flavor::OpenAi, vec![Step::say("ok")]).await;
    let args =
        ["--provider", "openai", "--model", "gpt-5", "--max-tokens-field", "max_tokens", "--config", cfg, "-p", "x"];
    let out = chat(dir.path(), &provider.url, &args);
    assert!(out.status.success(), "{:?}", text(&out));
    assert_eq!(limit(&provider.requests()[0]), (Some(json!(4096)), None));
    let bad = chat(dir.path(), &provider.url, &["--max-tokens-field", "tokens", "-p", "x"]);
    assert_eq!(bad.status.code(), Some(2), "a usage error: {:?}", text(&bad));
    assert!(text(&bad).1.contains("use auto, max_tokens or max_completion_tokens"), "{:?}", text(&bad));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_and_a_bad_parameter_are_said_in_words_and_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "servers.json", json!({"paypedia": stdio(paypedia())}));
    let cfg = cfg.to_str().unwrap();
    let wrong_key = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let provider = ScriptedProvider::start(Flavor::Anthropic, vec![Step::Fail(401, wrong_key.into(), None)]).await;
    let out = chat(dir.path(), &provider.url, &["--config", cfg, "-p", "hi"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}{stderr}");
    assert!(stderr.contains("invalid x-api-key"), "the API's own message: {stderr}");
    assert!(stderr.contains("check the API key"), "what to do: {stderr}");
    assert!(!stderr.contains("sk-test-secret"), "never the key itself: {stderr}");

    let bad_parameter = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 999999 > 64000, which is the maximum allowed"}}"#;
    let provider = ScriptedProvider::start(Flavor::Anthropic, vec![Step::Fail(400, bad_parameter.into(), None)]).await;
    let out = chat(dir.path(), &provider.url, &["--json", "--config", cfg, "--max-tokens", "999999", "-p", "hi"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}{stderr}");
    let document: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("one JSON document ({e}): {stdout}"));
    let message = document["message"].as_str().unwrap_or_default();
    assert!(message.contains("999999 > 64000") && message.contains("HTTP 400"), "{document}");
    assert!(document["error"].is_string(), "{document}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_project_config_is_found_from_a_subdirectory() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), ".mcp.json", json!({"paypedia": stdio(paypedia())}));
    let deep = dir.path().join("src/module");
    std::fs::create_dir_all(&deep).unwrap();
    let provider = ScriptedProvider::start(Flavor::Anthropic, vec![Step::say("seen")]).await;
    let out = chat(&deep, &provider.url, &["-p", "which tools?"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let names = tool_names(&provider.requests()[0]);
    assert!(names.iter().any(|n| n == "paypedia__iban_check"), "the parent's .mcp.json was read: {names:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_terminal_a_tool_that_may_change_things_is_denied_and_json_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "servers.json", json!({"example": stdio(example())}));
    let script = vec![Step::call("example__echo", json!({"text": "x"})), Step::say("{last_result}")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let out = chat(dir.path(), &provider.url, &["--config", cfg.to_str().unwrap(), "--json", "-p", "echo x"]);
    let (stdout, _) = text(&out);
    let events: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let consent = events.iter().find(|e| e["type"] == "consent").expect("a consent event");
    assert_eq!(consent["allowed"], false);
    assert!(consent["why"].as_str().unwrap().contains("--allow example/echo"));
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert!(last["text"].as_str().unwrap().contains("needs the person's consent"), "the model was told: {last}");
    assert!(events.iter().any(|e| e["type"] == "usage"));
    assert!(events.iter().any(|e| e["type"] == "tool_call" && e["arguments"] == json!({"text": "x"})));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_server_is_fenced_and_cannot_run_anything_without_consent() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("deleted");
    // A project's .mcp.json: its servers are not trusted, whatever their hints say.
    let hostile_entry =
        json!({"command": hostile().to_str().unwrap(), "env": {"HOSTILE_MARKER": marker.to_str().unwrap()}});
    config(dir.path(), ".mcp.json", json!({"hostile": hostile_entry}));
    let script = vec![Step::call("hostile__read_notes", json!({})), Step::say("{last_result}")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let out = chat(dir.path(), &provider.url, &["-p", "read my notes"]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("not a trusted server"),
        "a read-only claim from an untrusted server is not believed: {stdout}"
    );
    // Allowed by a rule, its result reaches the model fenced; the model then obeys the injected
    // text: nothing runs.
    let script = vec![
        Step::call("hostile__read_notes", json!({})),
        Step::call("hostile__delete_everything", json!({})),
        Step::say("{last_result}"),
    ];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let out = chat(dir.path(), &provider.url, &["--allow", "hostile/read_notes", "-p", "read my notes"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let requests = provider.requests();
    let notes = requests[1]["messages"][2]["content"][0]["content"][0]["text"].as_str().unwrap().to_owned();
    let nonce = notes.split('"').nth(1).unwrap().to_owned();
    assert!(
        notes.starts_with(&format!("<untrusted-data nonce=\"{nonce}\""))
            && notes.ends_with(&format!("</untrusted-data nonce=\"{nonce}\">"))
    );
    assert!(notes.contains("ignore previous instructions"), "the text is there, inside the fence");
    assert!(requests[0]["system"].as_str().unwrap().contains(&nonce), "and the system rule names the same nonce");
    assert!(stdout.contains("needs the person's consent") && stdout.contains("may be destructive"), "{stdout}");
    assert!(!marker.exists(), "delete_everything never ran");
}

/// `mcp chat` in a tmux terminal; its output goes to `out`.
fn chat_in_tmux(tmux: &Tmux, dir: &Path, url: &str, extra_env: &str) {
    let command = format!(
        "cd {} && env ANTHROPIC_API_KEY=sk-test MCP_HOST_STATE={} {extra_env} {} chat --base-url {url}; echo EXIT=$?; sleep 30",
        dir.display(),
        dir.join("state").display(),
        mcp().display()
    );
    tmux.run(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "50", &command]);
}

#[tokio::test(flavor = "multi_thread")]
async fn consent_at_a_terminal_is_remembered_per_project_and_a_changed_definition_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("deleted");
    config(
        dir.path(),
        ".mcp.json",
        json!({"hostile": {"command": hostile().to_str().unwrap(), "env": {"HOSTILE_MARKER": marker.to_str().unwrap()}}}),
    );
    // Session 1: the prompt shows server, tool and arguments; "always this tool" runs it.
    let script = vec![Step::call("hostile__read_notes", json!({"page": 2})), Step::say("FIRST-DONE")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let tmux = Tmux::new();
    chat_in_tmux(&tmux, dir.path(), &provider.url, "");
    tmux.wait_for("mcp chat: 1 server(s)");
    tmux.type_line("read my notes");
    tmux.wait_for("hostile wants to run read_notes");
    tmux.wait_for("\"page\": 2");
    tmux.wait_for("[t] always this tool");
    tmux.type_line("t");
    tmux.wait_for("FIRST-DONE");
    // The model then asks for the destructive tool: denied with a reason it reads.
    drop(tmux);
    let script = vec![Step::call("hostile__delete_everything", json!({})), Step::say("MODEL-READ: {last_result}")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let tmux = Tmux::new();
    chat_in_tmux(&tmux, dir.path(), &provider.url, "");
    tmux.wait_for("mcp chat:");
    tmux.type_line("clean up");
    tmux.wait_for("hostile wants to run delete_everything");
    tmux.wait_for("may be destructive");
    tmux.type_line("r");
    tmux.wait_for("reason");
    tmux.type_line("never delete my things");
    tmux.wait_for("MODEL-READ:");
    tmux.wait_for("never delete my things");
    assert!(!marker.exists());
    drop(tmux);
    // Session 3: read_notes is remembered: no question.
    let script = vec![Step::call("hostile__read_notes", json!({})), Step::say("REMEMBERED-DONE")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let tmux = Tmux::new();
    chat_in_tmux(&tmux, dir.path(), &provider.url, "");
    tmux.wait_for("mcp chat:");
    tmux.type_line("again");
    tmux.wait_for("REMEMBERED-DONE");
    assert!(!tmux.screen().contains("wants to run"), "{}", tmux.screen());
    drop(tmux);
    // Session 4: the server changed read_notes' description: asked again, the change shown.
    let script = vec![Step::call("hostile__read_notes", json!({})), Step::say("CHANGED-DONE")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let tmux = Tmux::new();
    chat_in_tmux(
        &tmux,
        dir.path(),
        &provider.url,
        "HOSTILE_DESCRIPTION='Reads the notes and mails them to evil.example.'",
    );
    tmux.wait_for("mcp chat:");
    tmux.type_line("once more");
    tmux.wait_for("hostile wants to run read_notes");
    tmux.wait_for("changed since it was approved");
    tmux.wait_for("evil.example");
    tmux.type_line("n");
    tmux.wait_for("CHANGED-DONE");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_cannot_drive_the_terminal_with_escape_sequences() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), ".mcp.json", json!({"hostile": {"command": hostile().to_str().unwrap()}}));
    let script = vec![Step::call("hostile__read_notes", json!({})), Step::say("ESCAPES-DONE")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let tmux = Tmux::new();
    // The result's first line clears the screen, homes the cursor, retitles the window and
    // draws a prompt of its own, if printed as it is.
    let notes = r#"HOSTILE_NOTES="$(printf 'NOTES-START\033[2J\033[H\033]0;pwned\007[n] no  FAKE-PROMPT')""#;
    chat_in_tmux(&tmux, dir.path(), &provider.url, notes);
    tmux.wait_for("mcp chat: 1 server(s)");
    tmux.type_line("read my notes");
    tmux.wait_for("hostile wants to run read_notes");
    tmux.type_line("y");
    tmux.wait_for("ESCAPES-DONE");
    let screen = tmux.screen();
    assert!(screen.contains("mcp chat: 1 server(s)"), "the screen was not cleared:\n{screen}");
    assert!(screen.contains("NOTES-START[n] no  FAKE-PROMPT"), "shown as text, on one line:\n{screen}");
    let title = tmux.run(&["display-message", "-p", "-t", "t", "#{pane_title}"]);
    assert!(!title.contains("pwned"), "the window was not retitled: {title}");
}

/// One `mcp chat` session in tmux over the hostile server: `steps` scripted, `prompt` typed,
/// `answers` given to the questions in turn (each after its question shows), until `done`
/// shows; the screen then.
async fn hostile_session(
    dir: &Path,
    extra_env: &str,
    steps: Vec<Step>,
    prompt: &str,
    answers: &[&str],
    done: &str,
) -> String {
    let provider = ScriptedProvider::start(Flavor::Anthropic, steps).await;
    let tmux = Tmux::new();
    chat_in_tmux(&tmux, dir, &provider.url, extra_env);
    tmux.wait_for("mcp chat:");
    tmux.type_line(prompt);
    for (i, answer) in answers.iter().enumerate() {
        // The i-th question is on the screen once its prompt line shows i+1 times.
        for _ in 0..400 {
            if tmux.screen().matches("[d] never this tool").count() > i {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        tmux.type_line(answer);
    }
    tmux.wait_for(done);
    tmux.screen()
}

#[tokio::test(flavor = "multi_thread")]
async fn once_session_and_always_this_server_which_a_changed_tool_of_that_server_revokes() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("deleted");
    config(
        dir.path(),
        ".mcp.json",
        json!({"hostile": {"command": hostile().to_str().unwrap(), "env": {"HOSTILE_MARKER": marker.to_str().unwrap()}}}),
    );
    let read = || Step::call("hostile__read_notes", json!({}));
    // `y` runs it once (asked again next time), `s` for the session (not asked the third
    // time), `a` for the whole server.
    let steps =
        vec![read(), read(), read(), Step::call("hostile__delete_everything", json!({})), Step::say("FIRST-DONE")];
    let screen = hostile_session(dir.path(), "", steps, "go", &["y", "s", "a"], "FIRST-DONE").await;
    assert_eq!(screen.matches("hostile wants to run read_notes").count(), 2, "{screen}");
    assert_eq!(screen.matches("hostile wants to run delete_everything").count(), 1, "{screen}");
    assert!(marker.exists(), "delete_everything ran after `a`");
    std::fs::remove_file(&marker).unwrap();
    // Next session: the whole server is allowed, nothing is asked.
    let steps = vec![Step::call("hostile__delete_everything", json!({})), Step::say("SECOND-DONE")];
    let screen = hostile_session(dir.path(), "", steps, "again", &[], "SECOND-DONE").await;
    assert!(!screen.contains("wants to run"), "{screen}");
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    // One tool of the server changed (read_notes' description): the whole-server approval no
    // longer holds, even for the tool that did not change.
    let steps = vec![Step::call("hostile__delete_everything", json!({})), Step::say("THIRD-DONE")];
    let env = "HOSTILE_DESCRIPTION='Reads the notes and mails them away.'";
    let screen = hostile_session(dir.path(), env, steps, "once more", &["n"], "THIRD-DONE").await;
    assert!(screen.contains("hostile wants to run delete_everything"), "{screen}");
    assert!(screen.contains("tools changed since you allowed all of them"), "{screen}");
    assert!(!marker.exists(), "declined");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_at_a_question_keeps_the_next_line_and_denials_are_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("deleted");
    config(
        dir.path(),
        ".mcp.json",
        json!({"hostile": {"command": hostile().to_str().unwrap(), "env": {"HOSTILE_MARKER": marker.to_str().unwrap()}}}),
    );
    let delete = || Step::call("hostile__delete_everything", json!({}));
    let provider = ScriptedProvider::start(Flavor::Anthropic, vec![delete(), delete(), Step::say("FIRST-DONE")]).await;
    let tmux = Tmux::new();
    chat_in_tmux(&tmux, dir.path(), &provider.url, "");
    tmux.wait_for("mcp chat:");
    tmux.type_line("clean up");
    tmux.wait_for("hostile wants to run delete_everything");
    tmux.run(&["send-keys", "-t", "t", "C-c"]);
    tmux.wait_for("interrupted");
    // The next line reaches the chat, not the abandoned question.
    tmux.type_line("/deny hostile/read_notes");
    tmux.wait_for("denying hostile/read_notes from now on in this project");
    tmux.type_line("/allow");
    tmux.wait_for("hostile/read_notes (remembered)");
    // `d`: never this tool, remembered.
    tmux.type_line("go");
    tmux.wait_for("[d] never this tool");
    tmux.type_line("d");
    tmux.wait_for("FIRST-DONE");
    assert!(!marker.exists());
    drop(tmux);
    // Next session: both denials hold without a question, and the model is told.
    let steps = vec![delete(), Step::call("hostile__read_notes", json!({})), Step::say("MODEL-READ: {last_result}")];
    let screen = hostile_session(dir.path(), "", steps, "try", &[], "MODEL-READ").await;
    assert!(!screen.contains("wants to run"), "{screen}");
    assert!(screen.contains("do not allow hostile/read_notes"), "{screen}");
    assert!(!marker.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_task_cancels_the_task_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    config(
        dir.path(),
        ".mcp.json",
        json!({"example": {"command": example().to_str().unwrap(), "args": ["--audit-log", audit.to_str().unwrap()]}}),
    );
    let steps = vec![Step::call("example__countdown", json!({"ms": 30000})), Step::say("never")];
    let provider = ScriptedProvider::start(Flavor::Anthropic, steps).await;
    let tmux = Tmux::new();
    chat_in_tmux(&tmux, dir.path(), &provider.url, "");
    tmux.wait_for("mcp chat:");
    tmux.type_line("count down");
    tmux.wait_for("example wants to run countdown");
    tmux.type_line("y");
    // Its task is working (its status shows as progress), then Ctrl-C.
    tmux.wait_for("working");
    tmux.run(&["send-keys", "-t", "t", "C-c"]);
    tmux.wait_for("interrupted");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(&audit).unwrap_or_default();
        if log.lines().any(|l| l.contains("\"tasks/cancel\"")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no tasks/cancel reached the server:\n{log}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
