//! `mcp inspect`: a server in the browser. The inspector connects to the server as `mcp` does
//! (any era, stdio or HTTP, OAuth), then serves a page on 127.0.0.1 at a random port, behind a
//! random token in the URL it prints: the server's description, tools as forms built from their
//! schemas, resources, prompts, the questions the server asks (answered on the page), the raw
//! traffic (filterable, exportable, replayable), and `ui://` apps in a sandboxed frame.
//!
//! No proxy listens for anyone else: the page only reaches this one server, through this
//! process, and only with the token (see [`web`]).

mod auth;
mod session;
mod web;

use std::sync::Arc;

use mcp::client::ClientOptions;
use mcp::types::roots::Root;

use crate::target::Target;

pub use auth::{Authorization, Registration};

/// Where the authorization URLs a person must open go: the page, once it is serving (the
/// authorizer is made before the session it reports to).
#[derive(Clone, Default)]
pub struct UrlSink(Arc<std::sync::OnceLock<std::sync::Weak<session::Session>>>);

impl UrlSink {
    /// Puts `url` on the page.
    pub fn show(&self, url: &str) {
        if let Some(session) = self.0.get().and_then(std::sync::Weak::upgrade) {
            session.record("authorize", serde_json::json!({"url": url}));
        }
    }
}

/// Options of `mcp inspect`.
#[derive(clap::Args, Debug, Clone)]
pub struct InspectArgs {
    /// Print the URL without opening a browser.
    #[arg(long)]
    pub no_open: bool,
    /// Listen on this loopback port (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

/// What `mcp inspect` is started with.
pub struct Setup {
    /// The server.
    pub target: Target,
    /// The client's options (handlers are the session's).
    pub options: ClientOptions,
    /// The roots offered at first.
    pub roots: Vec<Root>,
    /// An HTTP server's authorization.
    pub auth: Option<Authorization>,
    /// Where authorization URLs go.
    pub sink: UrlSink,
}

/// Serves the page, connects, and serves until Ctrl-C, then stops the server.
pub async fn run(setup: Setup, args: &InspectArgs) -> Result<(), String> {
    let session = session::Session::new(setup.target, setup.options, setup.roots, setup.auth);
    let _ = setup.sink.0.set(Arc::downgrade(&session));
    let mut address = web::address();
    address.set_port(args.port);
    let listener =
        tokio::net::TcpListener::bind(address).await.map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let guard = Arc::new(web::Guard { token: random_hex(24).map_err(|e| e.to_string())?, port });
    let url = format!("http://127.0.0.1:{port}/?token={}", guard.token);
    // The URL goes to stdout (a script reads it); a person reads the same line on a terminal.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{url}");
        let _ = out.flush();
    }
    eprintln!("mcp inspect: open {url} (Ctrl-C stops the inspector and the server)");
    if !args.no_open {
        mcp::client::auth::open_browser(&url);
    }
    let served = tokio::spawn(web::serve(listener, guard, session.clone()));
    // Connecting comes after the page is up: an authorization in a browser may take a while,
    // and the page shows its steps and its URL meanwhile.
    let connecting = session.clone();
    tokio::spawn(async move {
        if let Err(e) = connecting.connect().await {
            eprintln!("mcp inspect: could not connect: {e} (the page shows it, with a Reconnect button)");
        }
    });
    let _ = tokio::signal::ctrl_c().await;
    served.abort();
    session.close().await;
    Ok(())
}

/// `n` random bytes as hex (never a guessable value: `Err` without a random source).
pub(crate) fn random_hex(n: usize) -> Result<String, mcp::util::random::Unavailable> {
    mcp::util::random::hex(n)
}
