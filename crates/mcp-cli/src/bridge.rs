//! `mcp bridge`: one server across transports. `--url URL` is a stdio server forwarding to a
//! remote Streamable HTTP (or 2024-11-05 SSE) server, for hosts that only start processes;
//! `--http ADDR -- CMD` serves a stdio server over Streamable HTTP. Both are the gateway with
//! one upstream whose names are kept.

use std::path::{Path, PathBuf};

use mcp::cli::ServeArgs;

use crate::gateway::config::UpstreamConfig;
use crate::gateway::names::Glob;
use crate::target::Target;

/// `mcp bridge`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct BridgeArgs {
    /// HTTP headers for --url, one "Name: value" per line (a secret kept out of the process
    /// list); `${VAR}` in a value, here or in --header, is read from the environment
    #[arg(long, value_name = "FILE")]
    pub header_file: Option<PathBuf>,
    /// Leave out the server's tools matching GLOB (`*` and `?`; repeatable)
    #[arg(long = "ignore-tool", value_name = "GLOB")]
    pub ignore_tools: Vec<String>,
    /// Worker threads (default: one per two cores with --http, one on stdio)
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// How to serve (stdio unless --http).
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The one upstream a bridge forwards to. Over HTTP each caller (legacy session or account)
/// gets a child of its own, as behind the gateway, so that the server's questions and roots
/// stay that caller's.
pub fn upstream(args: &BridgeArgs, target: Target) -> UpstreamConfig {
    let key = match &target {
        Target::Stdio(command) => command.program.clone(),
        Target::Http(url, ..) => url.clone(),
    };
    UpstreamConfig {
        deny: args.ignore_tools.iter().map(|g| Glob::new(g)).collect(),
        ..UpstreamConfig::plain(key, target)
    }
}

/// `Name: value` lines of a header file (blank lines and `#` comments skipped).
pub fn header_file(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--header-file {}: {e}", path.display()))?;
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| header(line).map_err(|e| format!("--header-file {}: {e}", path.display())))
        .collect()
}

/// One `Name: value`, with `${VAR}` in the value read from the environment.
pub fn header(line: &str) -> Result<(String, String), String> {
    let (name, value) = line.split_once(':').ok_or("a header is \"Name: value\"")?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
        return Err(format!("{name:?} is not a header name"));
    }
    Ok((name.to_owned(), expand(value.trim())?))
}

/// `${VAR}` replaced by the variable's value; an unset variable is an error (naming it, not
/// its value).
fn expand(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or("an unclosed ${ in a header value")?;
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| format!("the environment variable {name} is not set"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_read_the_environment() {
        std::env::set_var("MCP_BRIDGE_TEST_TOKEN", "s3cret");
        assert_eq!(
            header("Authorization: Bearer ${MCP_BRIDGE_TEST_TOKEN}").unwrap(),
            ("Authorization".into(), "Bearer s3cret".into())
        );
        assert_eq!(header("X-A: plain").unwrap().1, "plain");
        let e = header("X-A: ${MCP_BRIDGE_TEST_UNSET_VAR}").unwrap_err();
        assert!(e.contains("MCP_BRIDGE_TEST_UNSET_VAR"), "{e}");
        assert!(header("no colon").is_err() && header("Bad Name: x").is_err() && header("X: ${OPEN").is_err());
    }

    #[test]
    fn a_header_file_skips_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h");
        std::fs::write(&path, "# secrets\nAuthorization: Bearer abc\n\nX-Team: blue\n").unwrap();
        let headers = header_file(&path).unwrap();
        assert_eq!(headers, [("Authorization".into(), "Bearer abc".into()), ("X-Team".into(), "blue".into())]);
    }
}
