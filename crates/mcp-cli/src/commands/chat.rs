//! `mcp chat`: the command line's settings handed to the chat loop ([`crate::chat`]), its
//! outcome turned into a failure.

use std::time::Duration;

use serde_json::Value;

use crate::chat;
use crate::cli::Cli;
use crate::failure::Failure;
use crate::setup::roots;

/// `mcp chat`.
pub(crate) async fn chat_command(cli: &Cli, args: &chat::ChatArgs) -> Result<Value, Failure> {
    let mut offered = roots(&cli.roots)?;
    if offered.is_empty() {
        offered = roots(&[std::env::current_dir().unwrap_or_default()])?;
    }
    let common = chat::Common {
        config: cli.config.as_ref(),
        roots: offered,
        cacerts: &cli.cacerts,
        auth: &cli.auth,
        json: cli.json,
        quiet: cli.quiet,
        timeout: Duration::from_secs(cli.timeout.max(1)),
    };
    match chat::run(common, args).await {
        chat::Outcome::Done => Ok(Value::Null),
        chat::Outcome::Usage(m) => Err(Failure::Usage(m)),
        chat::Outcome::Failed(m) => Err(Failure::Chat(m)),
        chat::Outcome::Interrupted => Err(Failure::Interrupted("interrupted".into())),
    }
}
