//! `mcp gateway` as a test runs it: a config file of `mcpServers`, a real process on a loopback
//! port, its stderr echoed, killed by pid when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use super::mcp;
use super::oidc::http;

/// A gateway serving `servers` (an `mcpServers` object) on a free port, killed when dropped.
pub struct Gateway {
    /// The gateway process.
    pub child: Child,
    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Gateway {
    /// A gateway serving `servers`, once `/readyz` says every upstream is connected and listed.
    pub fn start(servers: Value) -> Gateway {
        let gateway = Gateway::try_start(servers).unwrap_or_else(|e| panic!("the gateway did not start: {e}"));
        gateway.wait_ready();
        gateway
    }

    /// Waits (up to 30 s) for `/readyz` to answer 200.
    pub fn wait_ready(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while self.page("/readyz").0 != 200 {
            assert!(std::time::Instant::now() < deadline, "not ready: {}", self.page("/readyz").1);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub fn try_start(servers: Value) -> Result<Gateway, String> {
        Gateway::try_start_with(servers, &[])
    }

    pub fn try_start_with(servers: Value, args: &[&str]) -> Result<Gateway, String> {
        Gateway::launch(servers, "127.0.0.1:0", args, &[])
    }

    /// Serves `servers` on `addr` with `args` and the environment variables `env`.
    pub fn launch(servers: Value, addr: &str, args: &[&str], env: &[(&str, &str)]) -> Result<Gateway, String> {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("servers.json");
        std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();
        let child = Command::new(mcp())
            .arg("--config")
            .arg(&config)
            .args(["gateway", "--http", addr])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Gateway::serving(child, dir)
    }

    /// Waits for "serving MCP on URL" on the child's stderr.
    pub fn serving(mut child: Child, dir: tempfile::TempDir) -> Result<Gateway, String> {
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        for line in lines.by_ref().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("serving MCP on ") {
                let url = url.trim().to_owned();
                std::thread::spawn(move || {
                    for line in lines.map_while(Result::ok) {
                        eprintln!("gateway: {line}");
                    }
                });
                return Ok(Gateway { child, url, _dir: dir });
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let status = child.wait().unwrap();
        Err(format!("{status}: {seen}"))
    }

    pub fn page(&self, path: &str) -> (u16, String) {
        http("GET", &self.url.replace("/mcp", path), &[], "")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
