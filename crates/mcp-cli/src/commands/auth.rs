//! `mcp login`, `mcp logout`, `mcp auth status` and `mcp auth token`: stored OAuth
//! authorizations, none of them connecting as a client.

use serde_json::Value;

use crate::cli::{AuthAction, Cli, Command};
use crate::failure::Failure;
use crate::login;
use crate::setup::target;
use crate::target::{self, Target};

/// The server a login, logout or token command is about: its URL and its entry's settings.
fn http_target(cli: &Cli, url: Option<&String>) -> Result<(String, target::OAuthEntry), Failure> {
    if let Some(url) = url {
        return Ok((url.clone(), Default::default()));
    }
    match target(cli)? {
        Target::Http(url, _, entry) => Ok((url, entry)),
        Target::Stdio(_) => Err(Failure::Usage(
            "authorization is for HTTP servers: a stdio server takes its credentials from its environment".into(),
        )),
    }
}

/// `mcp login`, `mcp logout`, `mcp auth ...` (none of them connects as a client).
pub(crate) async fn auth_command(cli: &Cli) -> Option<Result<Value, Failure>> {
    let failed = |e: String| Failure::Connect(e);
    let result = match &cli.command {
        Command::Login { url } => match http_target(cli, url.as_ref()) {
            Ok((url, entry)) => login::login(&cli.auth, &url, &entry, &cli.cacerts).await.map_err(failed),
            Err(e) => Err(e),
        },
        Command::Logout { url, all } => {
            let url = if *all { Ok(None) } else { http_target(cli, url.as_ref()).map(|(u, _)| Some(u)) };
            url.and_then(|url| login::logout(&cli.auth, url.as_deref(), *all).map_err(Failure::Usage))
        }
        Command::Auth { action: AuthAction::Status } => login::status(&cli.auth).map_err(Failure::Usage),
        Command::Auth { action: AuthAction::Token { url } } => match http_target(cli, url.as_ref()) {
            Ok((url, entry)) => {
                login::token(&cli.auth, &url, &entry, &cli.cacerts).await.map_err(Failure::AuthRequired)
            }
            Err(e) => Err(e),
        },
        _ => return None,
    };
    Some(result)
}
