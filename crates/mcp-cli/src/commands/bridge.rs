//! `mcp bridge`: one server served across transports (an HTTP server on stdio, or a stdio server
//! over HTTP).

use serde_json::Value;

use crate::cli::Cli;
use crate::failure::Failure;
use crate::setup::{connector, target};
use crate::target::Target;
use crate::{bridge, gateway};

/// `mcp bridge`.
pub(crate) async fn bridge_command(cli: &Cli, args: &bridge::BridgeArgs) -> Result<Value, Failure> {
    let target = match target(cli)? {
        Target::Http(url, mut headers, oauth) => {
            if let Some(path) = &args.header_file {
                headers.extend(bridge::header_file(path).map_err(Failure::Usage)?);
            }
            if args.serve.http.is_some() {
                return Err(Failure::Usage("mcp bridge --url serves stdio; --http is for `-- COMMAND`".into()));
            }
            Target::Http(url, headers, oauth)
        }
        Target::Stdio(command) if args.serve.http.is_none() => {
            return Err(Failure::Usage(format!(
                "mcp bridge -- {}: add --http ADDR to serve it over HTTP (it already speaks stdio)",
                command.program
            )))
        }
        stdio => stdio,
    };
    let upstream = bridge::upstream(args, target);
    let connector = connector(cli, true, "mcp-bridge")?;
    gateway::serve(vec![upstream], &args.serve, connector, "mcp-bridge").await.map_err(Failure::Usage)?;
    Ok(Value::Null)
}
