//! `mcp gateway`: one MCP server in front of every server of an `mcpServers` file, stdio
//! commands and HTTP URLs alike, in either era. Downstream it is a server of ours (both eras,
//! sessions, TLS, OAuth as a resource server, rate limits, the audit log, `/healthz`,
//! `/readyz`, `/metrics`); upstream each server is reached with our client, kept connected.
//!
//! ```text
//! mcp gateway --config servers.json --http 127.0.0.1:8080
//! ```

pub mod catalog;
pub mod config;
pub mod metrics;
pub mod names;
pub mod parked;
pub mod rounds;
pub mod upstream;

use std::sync::Arc;
use std::time::Duration;

use mcp::cli::ServeArgs;
use mcp::transport::http::{SidePage, SideRoutes};
use mcp::Router;
use tokio::sync::mpsc;

use catalog::{Catalog, Refresh};
use config::UpstreamConfig;
use upstream::{Connector, Event, Upstream};

/// How long the gateway waits for its upstreams to connect before it serves anyway (the late
/// ones join when they connect; `/readyz` says which are missing).
const START_WAIT: Duration = Duration::from_secs(20);

/// `mcp gateway`'s own options (the server options are [`ServeArgs`]).
#[derive(clap::Args, Debug, Clone)]
pub struct GatewayArgs {
    /// How to serve: the transport, TLS, OAuth, limits and the audit log.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Serves `upstreams` until the process ends. `name` is the server's name downstream.
pub async fn serve(
    upstreams: Vec<UpstreamConfig>,
    serve: &ServeArgs,
    connector: Connector,
    name: &str,
) -> Result<(), String> {
    let router = Router::new().info(name, env!("CARGO_PKG_VERSION"));
    let (events, mut incoming) = mpsc::unbounded_channel();
    let upstreams: Vec<Arc<Upstream>> = upstreams
        .into_iter()
        .enumerate()
        .map(|(i, config)| Upstream::new(i, config, connector.clone(), events.clone(), router.clone()))
        .collect();
    let audit = match serve.limits.audit_log.as_deref() {
        None => None,
        Some("-") => Some(mcp::server::middleware::AuditLog::to_stderr()),
        Some(path) => {
            Some(mcp::server::middleware::AuditLog::to_file(std::path::Path::new(path)).map_err(|e| e.to_string())?)
        }
    };
    let catalog = Catalog::new(router.clone(), upstreams.clone(), audit);
    for upstream in &upstreams {
        tokio::spawn(upstream.clone().supervise());
    }
    start(&catalog, &mut incoming).await?;
    tokio::spawn(keep_in_step(catalog.clone(), incoming));
    let routes = side_routes(catalog);
    mcp::cli::serve_with_routes(router, serve, Some(routes)).await.map_err(|e| e.to_string())
}

/// Waits for every upstream's first connection (up to [`START_WAIT`]) and lists each: a name
/// two upstreams would both serve stops the start.
async fn start(catalog: &Arc<Catalog>, incoming: &mut mpsc::UnboundedReceiver<Event>) -> Result<(), String> {
    let mut pending: Vec<usize> = (0..catalog.upstreams().len()).collect();
    let deadline = tokio::time::Instant::now() + START_WAIT;
    while !pending.is_empty() {
        let event = match tokio::time::timeout_at(deadline, incoming.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(_) => {
                for &i in &pending {
                    let upstream = &catalog.upstreams()[i];
                    let why = upstream.client().err().unwrap_or_default();
                    eprintln!("mcp gateway: serving without {:?} for now: {why}", upstream.key());
                }
                break;
            }
        };
        let (Event::Connected(i) | Event::Changed(i)) = event;
        // A server may say its list changed before its handshake is over: its listing waits
        // for its connection. Only a clash stops the start.
        match catalog.refresh(i, true).await {
            Ok(()) => pending.retain(|p| *p != i),
            Err(Refresh::Unlisted(why)) => tracing::debug!("{why}"),
            Err(clash) => return Err(clash.to_string()),
        }
    }
    Ok(())
}

/// Lists an upstream again whenever it connects or says its lists changed.
async fn keep_in_step(catalog: Arc<Catalog>, mut incoming: mpsc::UnboundedReceiver<Event>) {
    while let Some(event) = incoming.recv().await {
        let (Event::Connected(i) | Event::Changed(i)) = event;
        if let Err(e) = catalog.refresh(i, false).await {
            tracing::warn!("{e}");
        }
    }
}

/// `/healthz` (the process answers), `/readyz` (every upstream is connected) and `/metrics`.
fn side_routes(catalog: Arc<Catalog>) -> SideRoutes {
    SideRoutes(Arc::new(move |path: &str| -> Option<SidePage> {
        match path {
            "/healthz" => Some((200, "text/plain; charset=utf-8", "ok\n".into())),
            "/readyz" => {
                let down: Vec<&str> = catalog.upstreams().iter().filter(|u| !u.is_up()).map(|u| u.key()).collect();
                Some(match down.is_empty() {
                    true => (200, "text/plain; charset=utf-8", "ready\n".into()),
                    false => (503, "text/plain; charset=utf-8", format!("not connected: {}\n", down.join(", "))),
                })
            }
            "/metrics" => {
                let page = metrics::render(catalog.upstreams().iter().map(|u| (u.key(), &*u.metrics)));
                Some((200, "text/plain; version=0.0.4; charset=utf-8", page))
            }
            _ => None,
        }
    }))
}
