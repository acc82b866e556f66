//! Local servers in the kernel sandbox, end to end: a hostile server (tests/fixtures/
//! sandbox_hostile.py) refused every attempt and still answering; the network list through the
//! filtering proxy (an allowed HTTPS name reached, another refused, a direct connection refused);
//! `mcp doctor` telling what ran sandboxed and what was refused; and real servers unchanged inside
//! the default policy through `mcp call`, `mcp gateway` and `mcp chat`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

mod common;
use common::gateway::Gateway;
use common::{mcp, paypedia};

fn hostile_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sandbox_hostile.py")
}

/// A home directory holding what a hostile server goes for: an SSH key, `mcp`'s token store and
/// a `.bashrc`.
fn bait_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::create_dir_all(home.path().join(".config/mcp")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n").unwrap();
    std::fs::write(home.path().join(".config/mcp/oauth.json"), r#"{"tokens": "secret"}"#).unwrap();
    std::fs::write(home.path().join(".bashrc"), "# original\n").unwrap();
    home
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    let mut command = Command::new(mcp());
    command.args(args).env("XDG_CACHE_HOME", cache.path()).stdin(Stdio::null());
    for var in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY"] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

fn text_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The attempts of an `attack` result: each line must say it was refused.
fn assert_all_refused(result: &str, expected: usize) {
    let lines: Vec<&str> = result.lines().filter(|l| l.contains(": refused: ") || l.contains(": ALLOWED: ")).collect();
    assert_eq!(lines.len(), expected, "{result}");
    for line in &lines {
        assert!(line.contains(": refused: "), "the sandbox let this through: {line}\n{result}");
    }
}

fn config(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("servers.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path
}

#[test]
fn a_hostile_server_is_refused_every_attempt_under_mcp_sandbox_flag() {
    let home = bait_home();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let script = hostile_script();
    let home_var = home.path().to_str().unwrap();
    let out = run(
        &["--sandbox", "call", "attack", &format!("port={port}"), "--", "python3", script.to_str().unwrap()],
        &[("HOME", home_var)],
    );
    let result = text_of(&out);
    assert_all_refused(&result, 8);
    for attempt in
        ["~/.ssh/id_ed25519", "token store", "/etc/shadow", "~/.bashrc", "loopback", "fork", "ptrace", "signal"]
    {
        assert!(result.contains(attempt), "{attempt} missing: {result}");
        assert!(stderr(&out).contains(attempt), "the server's stderr shows each refusal: {}", stderr(&out));
    }
    assert_eq!(std::fs::read_to_string(home.path().join(".bashrc")).unwrap(), "# original\n");
    // The same server unsandboxed reads the key: the refusals above are the sandbox's.
    let out = run(
        &["call", "read", "path=~/.ssh/id_ed25519", "--", "python3", script.to_str().unwrap()],
        &[("HOME", home_var)],
    );
    assert!(text_of(&out).contains("read ~/.ssh/id_ed25519: ALLOWED"), "{}", text_of(&out));
}

#[test]
fn a_hostile_server_behind_the_gateway_is_refused_and_still_answers() {
    let home = bait_home();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = hostile_script();
    let servers = json!({"hostile": {"command": "python3", "args": [script], "sandbox": {"network": ["allowed.test"]},
        "env": {"HOME": home.path()}}});
    let gateway = Gateway::start(servers);
    let attack = json!({"port": port, "url": "http://evil.test/", "direct": format!("127.0.0.1:{port}")}).to_string();
    let out = run(&["--url", &gateway.url, "call", "hostile__attack", "--args", &attack], &[]);
    assert_all_refused(&text_of(&out), 10);
    assert!(text_of(&out).contains("403"), "the proxy refused evil.test with 403: {}", text_of(&out));
    let out = run(&["--url", &gateway.url, "call", "hostile__echo", "text=still here"], &[]);
    assert_eq!(text_of(&out), "still here\n", "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(home.path().join(".bashrc")).unwrap(), "# original\n");
}

/// A CA, and a certificate it signed for `names`, as PEM files in `dir`.
fn make_ca(dir: &Path, names: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "mcp-stack sandbox test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = params.signed_by(&key, &rcgen::Issuer::new(ca_params, ca_key)).unwrap();
    let (ca_path, cert_path, key_path) = (dir.join("ca.pem"), dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&ca_path, ca.pem()).unwrap();
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (ca_path, cert_path, key_path)
}

#[test]
fn the_network_list_reaches_an_allowed_https_name_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_ca(dir.path(), &["allowed.test", "evil.test"]);
    let server = mcp::testing::HttpServer::start(
        common::example(),
        &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()],
    )
    .unwrap();
    let port = server.url().rsplit(':').next().unwrap().split('/').next().unwrap().to_owned();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 allowed.test evil.test\n").unwrap();
    let path = config(
        dir.path(),
        json!({"hostile": {"command": "python3", "args": [hostile_script()], "env": {"SSL_CERT_FILE": ca},
            "sandbox": {"network": ["allowed.test"], "read": [ca]}}}),
    );
    let env = [("MCP_SANDBOX_HOSTS", hosts.to_str().unwrap())];
    let fetch = |url: String| run(&["--config", path.to_str().unwrap(), "call", "fetch", &format!("url={url}")], &env);
    let allowed = fetch(format!("https://allowed.test:{port}/mcp"));
    assert!(text_of(&allowed).contains("ALLOWED: HTTP"), "{}{}", text_of(&allowed), stderr(&allowed));
    let evil = fetch(format!("https://evil.test:{port}/mcp"));
    assert!(text_of(&evil).contains("refused") && text_of(&evil).contains("403"), "{}", text_of(&evil));
    assert!(
        stderr(&evil).contains(&format!("refused a connection to evil.test:{port} (not in its \"network\" list)")),
        "the refusal is logged with the host asked for: {}",
        stderr(&evil)
    );
    // Around the proxy: the address itself, from inside the server's own network namespace.
    let direct = run(
        &[
            "--config",
            path.to_str().unwrap(),
            "call",
            "attack",
            "--args",
            &json!({"port": port.parse::<u16>().unwrap(),
            "direct": format!("127.0.0.1:{port}")})
            .to_string(),
        ],
        &env,
    );
    assert!(
        text_of(&direct).contains(&format!("connect directly to 127.0.0.1:{port}: refused")),
        "{}",
        text_of(&direct)
    );
}

#[test]
fn mcp_sandbox_runs_any_command_and_refuses_what_is_not_granted() {
    let home = bait_home();
    let home_var = home.path().to_str().unwrap();
    let out = run(&["sandbox", "--", "/bin/sh", "-c", "cat $HOME/.ssh/id_ed25519"], &[("HOME", home_var)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("Permission denied"), "{}", stderr(&out));
    let out = run(
        &["sandbox", "--read", &format!("{home_var}/.ssh"), "--", "/bin/sh", "-c", "cat $HOME/.ssh/id_ed25519"],
        &[("HOME", home_var)],
    );
    assert!(text_of(&out).contains("secret"), "--read grants it: {}", stderr(&out));
    // The environment is scrubbed: our tokens do not pass unless named.
    let out = run(
        &["sandbox", "--", "/bin/sh", "-c", "echo token=$GITHUB_TOKEN home=$HOME"],
        &[("GITHUB_TOKEN", "ghp_secret"), ("HOME", home_var)],
    );
    assert_eq!(text_of(&out), format!("token= home={home_var}\n"));
    let out = run(
        &["sandbox", "--pass-env", "GITHUB_TOKEN", "--", "/bin/sh", "-c", "echo token=$GITHUB_TOKEN"],
        &[("GITHUB_TOKEN", "ghp_secret")],
    );
    assert_eq!(text_of(&out), "token=ghp_secret\n");
    // The exit code is the command's; a command that cannot start is 3, with the reason.
    assert_eq!(run(&["sandbox", "--", "/bin/sh", "-c", "exit 7"], &[]).status.code(), Some(7));
    let out = run(&["sandbox", "--", "/nonexistent/server"], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("/nonexistent/server"), "{}", stderr(&out));
}

#[test]
fn a_bad_sandbox_key_is_refused_naming_the_server_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), json!({"srv": {"command": "true", "sandbox": {"reads": ["/x"]}}}));
    let out = run(&["--config", path.to_str().unwrap(), "tools"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("server \"srv\": sandbox: unknown key \"reads\""), "{}", stderr(&out));
}

#[test]
fn the_doctor_says_whether_a_server_is_sandboxed_and_what_was_refused() {
    let dir = tempfile::tempdir().unwrap();
    let script = hostile_script();
    let path = config(
        dir.path(),
        json!({"open": {"command": "python3", "args": [script]},
            "boxed": {"command": "python3", "args": [script], "sandbox": {"network": ["allowed.test"]}}}),
    );
    let doctor = |server: &str| {
        run(
            &["--config", path.to_str().unwrap(), "--server", server, "doctor", "--call-read-only", "--format", "json"],
            &[],
        )
    };
    let open: Value = serde_json::from_slice(&doctor("open").stdout).unwrap();
    assert!(open["passed"].to_string().contains("not sandboxed: it runs with your user's permissions"), "{open}");
    let boxed: Value = serde_json::from_slice(&doctor("boxed").stdout).unwrap();
    let passed = boxed["passed"].to_string();
    assert!(passed.contains("sandboxed: network only to allowed.test"), "{boxed}");
    let refused: Vec<String> = boxed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "sandbox-refused")
        .map(|f| f["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(refused.iter().any(|m| m.contains("connect evil.test:80")), "{boxed}");
}

#[test]
fn paypedia_answers_inside_the_default_sandbox() {
    let out = run(
        &[
            "--sandbox",
            "call",
            "iban_check",
            "input=FR76 3000 6000 0112 3456 7890 189",
            "--",
            paypedia().to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text_of(&out).contains("**VALID**"), "{}", text_of(&out));
}

/// The reference filesystem server from npm (tests/fixtures/files-reference, installed by
/// scripts/test.sh).
fn reference_filesystem() -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/files-reference");
    let entry = fixture.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(entry.exists(), "npm ci --prefix {} (scripts/test.sh does it)", fixture.display());
    entry
}

#[test]
fn the_npm_filesystem_server_behind_the_gateway_writes_only_where_its_sandbox_says() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("docs");
    std::fs::create_dir_all(root.join("work")).unwrap();
    std::fs::write(root.join("notes.txt"), "the notes").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "one level up").unwrap();
    // Its argument is readable only; its own "work" directory writable.
    let servers = json!({"files": {"command": "node", "args": [reference_filesystem(), &root],
        "sandbox": {"argumentsWritable": false, "write": [root.join("work")]}}});
    let gateway = Gateway::start(servers);
    let call = |tool: &str, args: Value| run(&["--url", &gateway.url, "call", tool, "--args", &args.to_string()], &[]);
    let read = call("files__read_text_file", json!({"path": root.join("notes.txt")}));
    assert_eq!(text_of(&read).trim(), "the notes", "{}", stderr(&read));
    let written = call("files__write_file", json!({"path": root.join("work/new.txt"), "content": "made here"}));
    assert!(written.status.success(), "{}{}", text_of(&written), stderr(&written));
    assert_eq!(std::fs::read_to_string(root.join("work/new.txt")).unwrap(), "made here");
    // The server would write here (its argument), the kernel does not let it.
    let refused = call("files__write_file", json!({"path": root.join("top.txt"), "content": "no"}));
    assert_eq!(refused.status.code(), Some(5), "{}", text_of(&refused));
    assert!(
        text_of(&refused).contains("EACCES") || text_of(&refused).contains("ermission denied"),
        "{}",
        text_of(&refused)
    );
    assert!(!root.join("top.txt").exists());
    let up = call("files__read_text_file", json!({"path": dir.path().join("outside.txt")}));
    assert_eq!(up.status.code(), Some(5), "one level up is refused: {}", text_of(&up));
}

/// `mcp-server-time` from PyPI (on the official Python SDK) in a virtual environment of the
/// test cache, installed on first use.
fn python_time_server() -> PathBuf {
    let cache = std::env::var("INTEROP_CACHE").unwrap_or_else(|_| "/tmp/mcp-interop-cache".into());
    let venv = Path::new(&cache).join("py-mcp-server-time");
    let program = venv.join("bin/mcp-server-time");
    if !program.exists() {
        std::fs::create_dir_all(&cache).unwrap();
        let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().unwrap();
        assert!(made.success(), "python3 -m venv");
        let pip = Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "--disable-pip-version-check", "mcp-server-time==2026.10.19"])
            .status()
            .unwrap();
        assert!(pip.success(), "pip install mcp-server-time");
    }
    program
}

#[test]
fn a_python_sdk_server_from_pypi_answers_inside_the_default_sandbox() {
    let home = bait_home();
    let server = python_time_server();
    let out = run(
        &["--sandbox", "call", "get_current_time", "timezone=Europe/Paris", "--", server.to_str().unwrap()],
        &[("HOME", home.path().to_str().unwrap())],
    );
    assert!(out.status.success(), "{}{}", text_of(&out), stderr(&out));
    assert!(text_of(&out).contains("Europe/Paris"), "{}", text_of(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_chat_starts_its_servers_in_their_sandboxes() {
    use mcp_host::scripted::{Flavor, ScriptedProvider, Step};
    let dir = tempfile::tempdir().unwrap();
    let home = bait_home();
    let cfg = config(
        dir.path(),
        json!({"paypedia": {"command": paypedia(), "sandbox": true},
            "hostile": {"command": "python3", "args": [hostile_script()], "env": {"HOME": home.path()}, "sandbox": true}}),
    );
    let script = vec![
        Step::call("paypedia__iban_check", json!({"input": "FR76 3000 6000 0112 3456 7890 189"})),
        Step::call("hostile__read", json!({"path": "~/.ssh/id_ed25519"})),
        Step::say("last: {last_result}"),
    ];
    let provider = ScriptedProvider::start(Flavor::Anthropic, script).await;
    let out = Command::new(mcp())
        .args(["chat", "--base-url", &provider.url, "--config", cfg.to_str().unwrap(), "--yes", "-p", "go"])
        .current_dir(dir.path())
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("MCP_HOST_STATE", dir.path().join("state"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", text_of(&out), stderr(&out));
    assert!(text_of(&out).contains("read ~/.ssh/id_ed25519: refused"), "{}", text_of(&out));
    let requests = provider.requests().iter().map(|r| r.to_string()).collect::<String>();
    assert!(requests.contains("VALID"), "paypedia answered inside its sandbox: {requests}");
}

#[test]
fn learn_prints_a_starting_policy_of_what_the_command_used() {
    let home = bait_home();
    std::fs::create_dir_all(home.path().join("out")).unwrap();
    let home_var = home.path().to_str().unwrap();
    let out = run(
        &["sandbox", "--learn", "--", "/bin/sh", "-c", "cat $HOME/.ssh/id_ed25519 >/dev/null && echo x > $HOME/out/f"],
        &[("HOME", home_var)],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let json_start = err.find('{').expect("a policy");
    let policy: Value = serde_json::from_str(&err[json_start..err.rfind('}').unwrap() + 1]).unwrap();
    let canonical = |p: &str| std::fs::canonicalize(home.path().join(p)).unwrap().display().to_string();
    assert_eq!(policy["sandbox"]["read"], json!([canonical(".ssh")]), "{err}");
    assert_eq!(policy["sandbox"]["write"], json!([canonical("out")]), "{err}");
    assert_eq!(std::fs::read_to_string(home.path().join("out/f")).unwrap(), "x\n", "never applied: it ran open");
}

/// A binary of this workspace that `cargo test --workspace` builds beside `mcp` (crm-mcp,
/// files-mcp); built here when this test runs alone.
fn workspace_binary(package: &str) -> PathBuf {
    let path = mcp().with_file_name(package);
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let built = Command::new(cargo).args(["build", "-q", "-p", package]).status().unwrap();
        assert!(built.success(), "cargo build -p {package}");
    }
    path
}

#[test]
fn crm_mcp_reads_its_sqlite_file_inside_the_default_sandbox_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let crm = workspace_binary("crm-mcp");
    let db = dir.path().join("crm.sqlite");
    let made = Command::new(&crm).args(["init", "--db", &format!("sqlite:{}", db.display())]).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    std::fs::write(dir.path().join("beside.txt"), "not granted").unwrap();
    let before = std::fs::read(&db).unwrap();
    // The file is named, read-only: not the directory it is in.
    let servers = json!({"crm": {"command": crm, "args": ["--db", format!("sqlite:{}", db.display())],
        "sandbox": {"read": [&db]}}});
    let file = config(dir.path(), servers);
    let out =
        run(&["--config", file.to_str().unwrap(), "--server", "crm", "call", "search_customer", "query=山田"], &[]);
    assert!(out.status.success(), "{}{}", text_of(&out), stderr(&out));
    assert!(text_of(&out).contains("山田"), "{}", text_of(&out));
    assert_eq!(std::fs::read(&db).unwrap(), before, "the database file is unchanged");
    let made_beside: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("crm.sqlite-"))
        .collect();
    assert!(made_beside.is_empty(), "no journal or WAL beside it: {made_beside:?}");
}

#[test]
fn files_mcp_inside_the_default_sandbox_works_in_its_directory_and_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "the notes").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "one level up").unwrap();
    let files = workspace_binary("files-mcp");
    let call = |tool: &str, args: Value| {
        run(
            &[
                "--sandbox",
                "call",
                tool,
                "--args",
                &args.to_string(),
                "--",
                files.to_str().unwrap(),
                root.to_str().unwrap(),
            ],
            &[],
        )
    };
    let read = call("read_text_file", json!({"path": root.join("notes.txt")}));
    assert_eq!(text_of(&read).trim(), "the notes", "{}", stderr(&read));
    let written = call("write_file", json!({"path": root.join("new.txt"), "content": "made here"}));
    assert!(written.status.success(), "{}{}", text_of(&written), stderr(&written));
    assert_eq!(std::fs::read_to_string(root.join("new.txt")).unwrap(), "made here");
    // files-mcp refuses a path outside its root itself; a symbolic link inside the root that
    // points out is followed by nobody: the kernel refuses what files-mcp's own check might miss.
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), root.join("link.txt")).unwrap();
    for path in [dir.path().join("outside.txt"), root.join("link.txt")] {
        let out = call("read_text_file", json!({"path": path}));
        assert!(!text_of(&out).contains("one level up"), "{} was read: {}", path.display(), text_of(&out));
    }
}
