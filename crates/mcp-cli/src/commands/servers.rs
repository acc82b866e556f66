//! `mcp servers`: the entries of an `mcpServers` file, with their transport.

use serde_json::{json, Value};

use crate::cli::Cli;
use crate::failure::Failure;
use crate::target;

/// `mcp --config FILE servers`.
pub(crate) fn list_servers(cli: &Cli) -> Result<Value, Failure> {
    let Some(path) = &cli.config else {
        return Err(Failure::Usage("servers lists the entries of an mcpServers file: pass --config FILE".into()));
    };
    let servers = target::list(path).map_err(Failure::Usage)?;
    Ok(json!({"servers": servers}))
}
