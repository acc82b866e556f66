//! `mcp inspect`: a server in the browser. The inspector connects to the server as `mcp` does
//! (any era, stdio or HTTP, OAuth), then serves a page on 127.0.0.1 at a random port, behind a
//! random token in the URL it prints: the server's description, tools as forms built from their
//! schemas, resources, prompts, the questions the server asks (answered on the page), the raw
//! traffic (filterable, exportable, replayable), and `ui://` apps in a sandboxed frame.
//!
//! No proxy listens for anyone else: the page only reaches this one server, through this
//! process, and only with the token (see [`web`]).

mod session;
mod web;

use std::sync::Arc;

use mcp::client::ClientOptions;
use mcp::types::roots::Root;

use crate::target::Target;

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

/// Connects, serves the page until Ctrl-C, then stops the server.
pub async fn run(target: Target, options: ClientOptions, roots: Vec<Root>, args: &InspectArgs) -> Result<(), String> {
    let session = session::Session::new(target, options, roots);
    if let Err(e) = session.connect().await {
        // The page still opens: it shows why, and a Reconnect button.
        tracing::warn!("mcp inspect: {e}");
        eprintln!("mcp inspect: could not connect: {e}");
    }
    let mut address = web::address();
    address.set_port(args.port);
    let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let guard = Arc::new(web::Guard { token: random_hex(24), port });
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
        open_browser(&url);
    }
    let served = tokio::spawn(web::serve(listener, guard, session.clone()));
    let _ = tokio::signal::ctrl_c().await;
    served.abort();
    session.close().await;
    Ok(())
}

/// Opens the URL in the desktop's browser, if there is one (a failure is only a missed
/// convenience: the URL is printed).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = spawned {
        std::thread::spawn(move || child.wait());
    }
}

/// `n` random bytes as hex.
pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
