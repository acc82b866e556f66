//! The server named after `--` is started early (while the command line is parsed) only for
//! commands that use it as the client's server: `mcp bridge` starts its server itself, once.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::gateway::Gateway;
use common::{example, mcp};

#[test]
fn mcp_bridge_starts_its_server_once() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let script = format!("echo started >> '{}'; exec '{}'", starts.display(), example().display());
    let child = Command::new(mcp())
        .args(["bridge", "--http", "127.0.0.1:0", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bridge = Gateway::serving(child, tempfile::tempdir().unwrap()).unwrap();
    let (status, _) = bridge.page("/healthz");
    assert_eq!(status, 200);
    std::thread::sleep(Duration::from_millis(500)); // a second start would have happened by now
    let count = std::fs::read_to_string(&starts).unwrap_or_default().lines().count();
    assert_eq!(count, 1, "the server was started {count} times");
}
