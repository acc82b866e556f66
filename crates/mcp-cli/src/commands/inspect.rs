//! `mcp inspect`: the server opened in the browser, with what the page needs to connect, ask
//! and authorize.

use std::sync::Arc;

use mcp::client::Stderr;
use serde_json::Value;

use crate::cli::Cli;
use crate::failure::Failure;
use crate::inspect;
use crate::setup::{options, roots, target};
use crate::target::Target;

/// `mcp inspect`: the page's questions replace the terminal's, every root is chosen on the
/// page (starting from --root), and an HTTP server's authorization may open a browser.
pub(crate) async fn inspect_command(cli: &Cli, args: &inspect::InspectArgs) -> Result<Value, Failure> {
    let target = match target(cli)? {
        Target::Stdio(mut command) => {
            command.stderr = Stderr::Capture; // shown on the page
            Target::Stdio(command)
        }
        http => http,
    };
    let mut options = options(cli)?;
    options.client_info = mcp::types::lifecycle::Implementation::new("mcp-inspect", env!("CARGO_PKG_VERSION"));
    options.tracer = None;
    options.log_level = Some(mcp::types::logging::LoggingLevel::Debug);
    let sink = inspect::UrlSink::default();
    let mut auth = None;
    if let Target::Http(url, _, entry) = &target {
        let shown = sink.clone();
        let oauth =
            cli.auth.authorizer_showing(entry, &cli.cacerts, move |url| shown.show(url)).map_err(Failure::Usage)?;
        let oauth = Arc::new(oauth);
        options.auth = Some(oauth.clone());
        let config = cli.auth.config(entry, &cli.cacerts, true).map_err(Failure::Usage)?;
        auth = Some(inspect::Authorization {
            url: url.clone(),
            fetcher: mcp::fetch::Fetcher::new(&cli.cacerts).map_err(|e| Failure::Usage(format!("--cacert: {e}")))?,
            registration: inspect::Registration {
                client_id: config.client_id,
                metadata_url: config.client_metadata_url,
            },
            oauth,
        });
    }
    let setup = inspect::Setup { target, options, roots: roots(&cli.roots)?, auth, sink };
    inspect::run(setup, args).await.map_err(Failure::Connect)?;
    Ok(Value::Null)
}
