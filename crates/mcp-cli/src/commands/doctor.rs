//! `mcp doctor`: the server examined, the report printed on stdout.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::cli::Cli;
use crate::doctor;
use crate::failure::Failure;
use crate::setup::{options, target};
use crate::target::Target;

/// `mcp doctor`: the report on stdout, exit code 1 when it holds an error.
pub(crate) async fn doctor_command(cli: &Cli, args: &doctor::DoctorArgs) -> Result<Value, Failure> {
    let target = match target(cli)? {
        Target::Stdio(mut command) => {
            command.own_process_group = true;
            Target::Stdio(command)
        }
        http => http,
    };
    let mut options = options(cli)?;
    options.client_info = mcp::types::lifecycle::Implementation::new("mcp-doctor", env!("CARGO_PKG_VERSION"));
    options.handlers = Default::default();
    if let Target::Http(_, headers, entry) = &target {
        options.headers = headers.clone();
        // Stored tokens and client credentials only: a doctor in CI opens no browser.
        let config = cli.auth.config(entry, &cli.cacerts, true).map_err(Failure::Usage)?;
        let oauth = mcp::client::auth::OAuth::new(config, None).map_err(|e| Failure::Usage(e.to_string()))?;
        options.auth = Some(Arc::new(oauth));
    }
    let timeout = Duration::from_secs(cli.timeout.clamp(1, 30));
    let format = if cli.json { doctor::Format::Json } else { args.format };
    let report = doctor::examine(doctor::Patient { target, options, timeout }, args).await;
    let _ = write!(std::io::stdout(), "{}", doctor::render(&report, format));
    if report.failed() {
        Err(Failure::Findings)
    } else {
        Ok(Value::Null)
    }
}
