//! Several starts under one sandbox, as a gateway starts one process per session: each gets a
//! private temporary directory of its own, gone when its process is; and nothing of them is left
//! once the sandbox is dropped.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use mcp::client::Confine as _;
use mcp_sandbox::{Policy, Sandbox};

/// Starts `sh` inside `sandbox`; returns the TMPDIR it was given and whether that directory
/// existed, empty and writable, while it ran.
fn start(sandbox: &Sandbox) -> (PathBuf, bool) {
    let mut command = Command::new("/bin/sh");
    command.args([
        "-c",
        r#"echo "$TMPDIR"; [ -d "$TMPDIR" ] && [ -z "$(ls -A "$TMPDIR")" ] && touch "$TMPDIR/x" && echo usable"#,
    ]);
    command.stdout(Stdio::piped()).stdin(Stdio::null());
    let kept = sandbox.prepare(&mut command).expect("the sandbox applies on this kernel");
    let out = command.output().expect("sh runs");
    drop(kept);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let tmp = PathBuf::from(lines.next().unwrap_or_default());
    (tmp, lines.next() == Some("usable"))
}

#[test]
fn each_start_gets_a_fresh_private_tmp_and_nothing_is_left_behind() {
    let sandbox = Sandbox::new(Policy::strict()).named("starts");
    let mut seen = Vec::new();
    for _ in 0..4 {
        let (tmp, usable) = start(&sandbox);
        assert!(usable, "{} was not an empty, writable directory of its own", tmp.display());
        assert!(!tmp.exists(), "{} outlived its process", tmp.display());
        assert!(!seen.contains(&tmp), "{} was given twice", tmp.display());
        seen.push(tmp);
    }
    let shared = seen[0].parent().expect("under the sandbox's shared directory").to_owned();
    assert!(seen.iter().all(|t| t.parent() == Some(shared.as_path())));
    assert!(shared.exists(), "the shared directory lives as long as the sandbox");
    drop(sandbox);
    assert!(!shared.exists(), "{} outlived the sandbox", shared.display());
}

/// Root too: the program holds no capability (its own sets and the ambient one are empty; the
/// bounding set is left, `no_new_privs` keeps `execve` from granting any).
#[test]
fn a_sandboxed_program_holds_no_capability() {
    let sandbox = Sandbox::new(Policy::strict()).named("capabilities");
    let mut command = Command::new("/bin/sh");
    command.args(["-c", r#"while read -r key value; do case $key in Cap*|NoNewPrivs*) echo "$key $value";; esac; done < /proc/self/status"#]);
    command.stdout(Stdio::piped()).stdin(Stdio::null());
    let kept = sandbox.prepare(&mut command).expect("the sandbox applies on this kernel");
    let out = command.output().expect("sh runs");
    drop(kept);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for key in ["CapInh:", "CapPrm:", "CapEff:", "CapAmb:"] {
        let line = text.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("no {key} in {text:?}"));
        assert!(line.ends_with(" 0000000000000000"), "{line} (whole status: {text})");
    }
    assert!(text.lines().any(|l| l == "NoNewPrivs: 1"), "{text}");
}
