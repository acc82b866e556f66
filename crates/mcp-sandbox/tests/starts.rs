//! Several starts under one sandbox, as a gateway starts one process per session: each gets a
//! private temporary directory of its own, gone when its process is; and nothing of them is left
//! once the sandbox is dropped.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use mcp::client::{Confine as _, StartOptions, Stderr};
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

/// Two processes of one command at once (two sessions of a gateway): neither can read, list or
/// write the other's private temporary directory, or list the directory both lie in (the same
/// `cat` and `ls` work in its own).
#[test]
fn a_process_cannot_reach_its_neighbour_s_private_tmp() {
    use std::io::{BufRead as _, Write as _};
    // One command for both, told on stdin what to do: hold a secret, or look for the other's.
    let script = r#"read -r mode other
        if [ "$mode" = hold ]; then echo secret > "$TMPDIR/secret" && echo "$TMPDIR"; read -r _; exit; fi
        cat "$other/secret" 2>/dev/null && echo READ
        ls "$other" >/dev/null 2>&1 && echo LISTED
        ls "$(dirname "$other")" >/dev/null 2>&1 && echo LISTED_SHARED
        (echo x > "$other/planted") 2>/dev/null && echo WROTE
        echo x > "$TMPDIR/own" && cat "$TMPDIR/own" >/dev/null && ls "$TMPDIR" >/dev/null && echo OWN"#;
    let sandbox = Sandbox::new(Policy::strict()).named("neighbours");
    let start = || {
        let mut command = Command::new("/bin/sh");
        command.args(["-c", script]).stdout(Stdio::piped()).stdin(Stdio::piped());
        let kept = sandbox.prepare(&mut command).expect("the sandbox applies on this kernel");
        (command.spawn().expect("sh runs"), kept)
    };
    let (mut holder, kept_holder) = start();
    let mut holder_in = holder.stdin.take().expect("piped");
    writeln!(holder_in, "hold -").expect("sh reads");
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().expect("piped")).read_line(&mut line).expect("its TMPDIR");
    let held = PathBuf::from(line.trim());
    assert!(held.join("secret").exists(), "{line:?}");

    let (mut prober, kept_prober) = start();
    writeln!(prober.stdin.take().expect("piped"), "probe {}", held.display()).expect("sh reads");
    let out = prober.wait_with_output().expect("sh runs");
    drop(kept_prober);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.trim(), "OWN", "the second process reached the first's directory: {text:?}");
    assert!(!held.join("planted").exists());

    drop(holder_in);
    let _ = holder.wait();
    drop(kept_holder);
}

/// Reaps `pid`, a child started by `Confine::start`; its exit status.
#[allow(unsafe_code)]
fn reap(pid: u32) -> i32 {
    let mut status = 0;
    // SAFETY: waitpid on our own child with a live status word.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
    status
}

/// Started by the sandbox itself (no fork: as the client starts a sandboxed server), a process
/// is confined the same, its pipes and environment are what they should be, and a start that
/// cannot happen says why.
#[test]
fn a_process_started_without_fork_is_confined_the_same_and_its_failures_are_named() {
    use std::io::{Read as _, Write as _};
    let sandbox = Sandbox::new(Policy::strict()).named("started");
    let options = StartOptions { stderr: Stderr::Capture, own_process_group: false, die_with_parent: false };
    let mut command = Command::new("/bin/sh");
    command.args([
        "-c",
        r#"read -r line; echo "got $line"; echo "tmp $TMPDIR"
        while read -r key value; do case $key in CapEff:|NoNewPrivs:) echo "$key $value";; esac; done < /proc/self/status
        (read -r first < /etc/shadow) 2>/dev/null || echo "shadow refused"
        echo "to stderr" >&2"#,
    ]);
    let (started, kept) = sandbox.start(&command, options).expect("Linux").expect("the sandbox applies on this kernel");
    let mut stdin = std::fs::File::from(started.stdin);
    writeln!(stdin, "hello").expect("it reads");
    drop(stdin);
    let (mut out, mut err) = (String::new(), String::new());
    std::fs::File::from(started.stdout).read_to_string(&mut out).expect("its stdout");
    std::fs::File::from(started.stderr.expect("captured")).read_to_string(&mut err).expect("its stderr");
    assert_eq!(reap(started.pid), 0, "{out}{err}");
    drop(kept);
    assert!(out.contains("got hello\n"), "{out}");
    let tmp = out.lines().find_map(|l| l.strip_prefix("tmp ")).unwrap_or_default();
    assert!(tmp.contains("/mcp-sandbox-"), "TMPDIR is its private directory: {out}");
    assert!(out.contains("CapEff: 0000000000000000") && out.contains("NoNewPrivs: 1"), "{out}");
    assert!(out.contains("shadow refused"), "{out}");
    assert_eq!(err, "to stderr\n");

    // A relative working directory and a program named from it resolve as Command resolves
    // them; a script without `#!` runs through /bin/sh, as execvp runs it.
    let here = tempfile::Builder::new().prefix("started-").tempdir_in(".").expect("a directory here");
    let script = here.path().join("run");
    std::fs::write(&script, "echo \"ran in $(pwd)\"\n").expect("the script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("runnable");
    let mut relative = Command::new("./run");
    relative.current_dir(here.path().file_name().expect("a name"));
    let (started, kept) = sandbox.start(&relative, options).expect("Linux").expect("./run starts");
    let mut out = String::new();
    std::fs::File::from(started.stdout).read_to_string(&mut out).expect("its stdout");
    assert_eq!(reap(started.pid), 0, "{out}");
    drop(kept);
    let expected = format!("ran in {}\n", here.path().canonicalize().unwrap().display());
    assert_eq!(out, expected);

    let missing = Command::new("/nonexistent/program");
    let error = sandbox.start(&missing, options).expect("Linux").expect_err("no such program");
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{error}");
    let mut elsewhere = Command::new("/bin/sh");
    elsewhere.arg("-c").arg("true").current_dir("/nonexistent-directory");
    let error = sandbox.start(&elsewhere, options).expect("Linux").expect_err("no such directory");
    assert_eq!(error.raw_os_error(), Some(libc::ENOENT), "{error}");
}

/// Many sessions starting at once (a gateway's): eight threads start twenty-five processes each
/// through one sandbox, without fork; every process gets a fresh, empty private directory that
/// no other got, and nothing is left of any once it has ended.
#[test]
fn eight_threads_starting_at_once_each_get_a_fresh_directory_of_their_own() {
    use std::io::Read as _;
    let sandbox = std::sync::Arc::new(Sandbox::new(Policy::strict()).named("at-once"));
    let options = StartOptions { stderr: Stderr::Discard, own_process_group: false, die_with_parent: true };
    let threads: Vec<_> = (0..8)
        .map(|thread| {
            let sandbox = sandbox.clone();
            std::thread::spawn(move || {
                let mut given = Vec::new();
                for start in 0..25 {
                    let mut command = Command::new("/bin/sh");
                    command.args(["-c", r#"echo "$TMPDIR"; touch "$TMPDIR/mine"; ls -A "$TMPDIR""#]);
                    let (started, kept) = sandbox
                        .start(&command, options)
                        .expect("Linux")
                        .unwrap_or_else(|e| panic!("thread {thread}, start {start}: {e}"));
                    drop(started.stdin);
                    let mut out = String::new();
                    std::fs::File::from(started.stdout).read_to_string(&mut out).expect("its stdout");
                    assert_eq!(reap(started.pid), 0, "{out}");
                    drop(kept);
                    let mut lines = out.lines();
                    let dir = PathBuf::from(lines.next().unwrap_or_default());
                    assert_eq!(lines.collect::<Vec<_>>(), ["mine"], "not empty at the start: {out}");
                    assert!(!dir.exists(), "{} outlived its process", dir.display());
                    given.push(dir);
                }
                given
            })
        })
        .collect();
    let mut given: Vec<PathBuf> = threads.into_iter().flat_map(|t| t.join().expect("no thread panics")).collect();
    let starts = given.len();
    given.sort();
    given.dedup();
    assert_eq!(given.len(), starts, "a directory was given twice");
}
