//! `mcp gateway`: every server of `--config` served behind one endpoint.

use serde_json::Value;

use crate::cli::Cli;
use crate::failure::Failure;
use crate::gateway;
use crate::setup::connector;

/// `mcp gateway`.
pub(crate) async fn gateway_command(cli: &Cli, args: &gateway::GatewayArgs) -> Result<Value, Failure> {
    let path = cli.config.as_ref().ok_or_else(|| Failure::Usage("mcp gateway needs --config FILE".into()))?;
    let upstreams = gateway::config::load(path).map_err(Failure::Usage)?;
    let connector = connector(cli, false, "mcp-gateway")?;
    gateway::serve(upstreams, &args.serve, connector, "mcp-gateway").await.map_err(Failure::Usage)?;
    Ok(Value::Null)
}
