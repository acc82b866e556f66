//! Starting the stdio server before the command line is parsed.
//!
//! Most of a short `mcp` run is waiting for the server process to start. When the command line
//! plainly ends in `-- PROGRAM ARGS...`, the server is started first, so its start-up overlaps
//! the parsing of the command line and the building of the runtime. Once the command line is parsed,
//! the early process is used only if it is exactly the server the command line names; otherwise
//! (a usage error, `--help`, a different target) it is killed and reaped.

use std::ffi::OsString;

use mcp::client::{ServerProcess, Stderr, StdioCommand};

/// Options that change which server runs or whether one runs at all: with any of them before
/// `--`, nothing is started early.
const DECISIVE: [&str; 7] = ["--env", "--config", "--server", "--url", "--help", "--version", "--sandbox"];

/// Commands that start the server their own way (`mcp sandbox` inside its sandbox; the bridge
/// and the gateway as upstreams, per caller where they isolate them): a server started early
/// would be a second one.
const OWN_START: [&str; 5] = ["doctor", "inspect", "sandbox", "bridge", "gateway"];

/// Starts the server named after `--` in `args` (the whole command line, program name first).
pub fn start(args: &[OsString]) -> Option<ServerProcess> {
    command(args)?.spawn().ok()
}

/// The server named after `--`, when nothing before it changes which server runs.
fn command(args: &[OsString]) -> Option<StdioCommand> {
    let split = args.iter().position(|a| a == "--")?;
    let options = args.get(1..split)?;
    if options.iter().any(|a| is_decisive(&a.to_string_lossy())) {
        return None;
    }
    // The doctor and the inspector start the server themselves (and time its start); the
    // bridge and the gateway start their upstreams themselves.
    if options.iter().any(|a| OWN_START.contains(&a.to_string_lossy().as_ref())) {
        return None;
    }
    let command = args[split + 1..].iter().map(|a| a.to_str()).collect::<Option<Vec<&str>>>()?;
    let (program, rest) = command.split_first()?;
    let stderr = if options.iter().any(|a| a == "--quiet") { Stderr::Discard } else { Stderr::Inherit };
    let mut command = StdioCommand::new(*program).args(rest.iter().copied()).stderr(stderr);
    command.own_process_group = true;
    Some(command)
}

fn is_decisive(arg: &str) -> bool {
    let short = arg.starts_with('-') && !arg.starts_with("--"); // -h, -V and their bundles
    short || DECISIVE.iter().any(|d| arg == *d || arg.strip_prefix(d).is_some_and(|r| r.starts_with('=')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn only_a_plain_command_after_the_separator_starts_early() {
        assert!(command(&args("mcp tools")).is_none());
        assert!(command(&args("mcp tools --")).is_none());
        for line in [
            "mcp --env A=1 tools -- true",
            "mcp --env=A=1 tools -- true",
            "mcp -h tools -- true",
            "mcp --url http://x tools -- true",
            "mcp --config f --server s tools -- true",
            "mcp tools --help -- true",
            "mcp doctor -- true",
            "mcp --sandbox tools -- true",
            "mcp sandbox -- true",
            "mcp bridge --http 127.0.0.1:0 -- true",
            "mcp --quiet gateway -- true",
        ] {
            assert!(command(&args(line)).is_none(), "{line}");
        }
        let early = start(&args("mcp --json --quiet call echo text=-- -- true a b")).expect("started");
        let mut expected = StdioCommand::new("true").args(["a", "b"]).stderr(Stderr::Discard);
        expected.own_process_group = true;
        assert_eq!(early.command(), &expected);
    }

    #[test]
    fn a_program_that_cannot_start_is_left_to_the_normal_path() {
        assert!(start(&args("mcp tools -- /nonexistent/server")).is_none());
    }
}
