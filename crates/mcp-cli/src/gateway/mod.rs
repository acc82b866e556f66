//! `mcp gateway`: one MCP server in front of every server of an `mcpServers` file, stdio
//! commands and HTTP URLs alike, in either era. Downstream it is a server of ours (both eras,
//! sessions, TLS, OAuth as a resource server, rate limits, the audit log, `/healthz`,
//! `/readyz`, `/metrics`); upstream each server is reached with our client, kept connected.
//!
//! ```text
//! mcp gateway --config servers.json --http 127.0.0.1:8080
//! ```
//!
//! It listens at once. Each upstream is listed as it becomes ready, on its own (a hung one holds
//! no other); a request that comes while upstreams are still starting (a listing, or a call of
//! a tool not listed yet) waits for them a bounded time ([`START_WAIT`]), then is answered with
//! what is ready, and `list_changed` follows.

pub mod callers;
pub mod catalog;
pub mod config;
pub mod metrics;
pub mod names;
pub mod parked;
pub mod rounds;
pub mod upstream;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp::cli::ServeArgs;
use mcp::server::middleware::{Call, Middleware, Next, Outcome};
use mcp::transport::http::{SidePage, SideRoutes};
use mcp::Router;
use tokio::sync::{mpsc, watch, Notify};

use catalog::Catalog;
use config::UpstreamConfig;
use upstream::{Connector, Event, Upstream};

/// How long, after the gateway starts, a list request waits for upstreams still starting.
pub const START_WAIT: Duration = Duration::from_secs(15);

/// `mcp gateway`'s own options (the server options are [`ServeArgs`]).
#[derive(clap::Args, Debug, Clone)]
pub struct GatewayArgs {
    /// Worker threads (default: one per two cores with --http, one on stdio)
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// How to serve: the transport, TLS, OAuth, limits and the audit log.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The worker threads a gateway or bridge runs on: `threads` if given, else with `--http` (many
/// callers) one per two cores, leaving the other half to the upstream processes that do the
/// work, and one on stdio (one host). A forwarded call hops between half a dozen tasks: on one
/// thread each hop is a switch, on several a wake-up of another core. On two cores, a second
/// thread made a bridge's calls 60 µs slower one at a time, burned a third more CPU, and served
/// 16 sessions at once no faster (`bench-gateway`).
pub fn worker_threads(threads: Option<usize>, serve: &ServeArgs) -> usize {
    match (threads, &serve.http) {
        (Some(n), _) => n.max(1),
        (None, Some(_)) => std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
        (None, None) => 1,
    }
}

/// Serves `upstreams` until the process ends. `name` is the server's name downstream (and in
/// its messages).
pub async fn serve(
    upstreams: Vec<UpstreamConfig>,
    serve: &ServeArgs,
    mut connector: Connector,
    name: &str,
) -> Result<(), String> {
    connector.one_client = serve.http.is_none();
    let router = Router::new().info(name, env!("CARGO_PKG_VERSION"));
    let (events, incoming) = mpsc::unbounded_channel();
    let upstreams: Vec<Arc<Upstream>> = upstreams
        .into_iter()
        .enumerate()
        .map(|(i, config)| Upstream::new(i, config, connector.clone(), events.clone(), router.lists()))
        .collect();
    let audit = match serve.limits.audit_log.as_deref() {
        None => None,
        Some("-") => Some(mcp::server::middleware::AuditLog::to_stderr()),
        Some(path) => {
            Some(mcp::server::middleware::AuditLog::to_file(std::path::Path::new(path)).map_err(|e| e.to_string())?)
        }
    };
    let catalog = Catalog::new(router.clone(), upstreams.clone(), audit);
    let starting = Starting::new(upstreams.len());
    // The layer needs the catalog, which needs the router: added once both exist, before serving.
    let router = router.layer(AwaitStart { starting: starting.clone(), catalog: Arc::downgrade(&catalog) });
    for upstream in &upstreams {
        tokio::spawn(upstream.clone().supervise());
    }
    tokio::spawn(keep_in_step(catalog.clone(), incoming, starting));
    let routes = side_routes(catalog);
    // When the gateway stops, its upstream processes are let go as the spec's stdio lifecycle
    // says, rather than killed with it.
    mcp::cli::at_stop(move || {
        Box::pin(async move {
            futures_util::future::join_all(upstreams.iter().map(|u| u.shut_down())).await;
        })
    });
    mcp::cli::serve_with_routes(router, serve, Some(routes)).await.map_err(|e| format!("{name}: {e}"))
}

/// While the gateway starts: the upstreams whose first connection attempt is not over
/// (connected and listed, or failed), and a count of listings, bumped after each.
#[derive(Clone)]
struct Starting {
    pending: Arc<watch::Sender<(Vec<bool>, u64)>>,
    until: tokio::time::Instant,
}

impl Starting {
    fn new(upstreams: usize) -> Starting {
        Starting {
            pending: Arc::new(watch::Sender::new((vec![true; upstreams], 0))),
            until: tokio::time::Instant::now() + START_WAIT,
        }
    }

    /// Upstream `index` was listed, or its first attempt is over.
    fn settle(&self, index: usize) {
        self.pending.send_modify(|(pending, listings)| {
            pending[index] = false;
            *listings += 1;
        });
    }

    /// Returns when `ready` holds, every upstream's first attempt is over, or the start is; `ready`
    /// is asked again after each listing.
    async fn wait(&self, ready: impl Fn() -> bool) {
        let mut pending = self.pending.subscribe();
        let settled = pending.wait_for(|(p, _)| ready() || !p.contains(&true));
        let _ = tokio::time::timeout_at(self.until, settled).await;
    }
}

/// Makes requests wait for the upstreams still starting, so that a client's first listing is
/// not an empty catalog presented as complete, nor its first call refused for a tool about to
/// be listed. A call of what is served already goes on at once.
struct AwaitStart {
    starting: Starting,
    catalog: std::sync::Weak<Catalog>,
}

impl Middleware for AwaitStart {
    fn handle<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let method = call.method();
            if !mcp::server::middleware::is_upkeep(method) && tokio::time::Instant::now() < self.starting.until {
                let name = call.name().map(str::to_owned);
                let served = || match (&name, self.catalog.upgrade()) {
                    (Some(name), Some(catalog)) => catalog.serves(method, name),
                    _ => false,
                };
                self.starting.wait(served).await;
            }
            next.run(call).await
        })
    }
}

/// Lists each upstream whenever it connects or says its lists changed: each on its own, one
/// listing at a time per upstream (events that come meanwhile make one more).
async fn keep_in_step(catalog: Arc<Catalog>, mut incoming: mpsc::UnboundedReceiver<Event>, starting: Starting) {
    let wanted: Vec<Arc<Notify>> = catalog.upstreams().iter().map(|_| Arc::new(Notify::new())).collect();
    for (index, wanted) in wanted.iter().enumerate() {
        tokio::spawn(refresher(catalog.clone(), index, wanted.clone(), starting.clone()));
    }
    while let Some(event) = incoming.recv().await {
        match event {
            Event::Connected(i) => {
                catalog.unlisted(i);
                wanted[i].notify_one();
            }
            Event::Changed(i) => wanted[i].notify_one(),
            Event::Failed(i) => starting.settle(i),
        }
    }
}

/// Lists upstream `index` each time it is wanted.
async fn refresher(catalog: Arc<Catalog>, index: usize, wanted: Arc<Notify>, starting: Starting) {
    loop {
        wanted.notified().await;
        // A server may say its list changed before its handshake is over: its listing waits
        // for its connection.
        if let Err(why) = catalog.refresh(index).await {
            tracing::warn!("{why}");
        }
        starting.settle(index);
    }
}

/// `/healthz` (the process answers), `/readyz` (every upstream connected and listed, no name
/// clashing) and `/metrics`.
fn side_routes(catalog: Arc<Catalog>) -> SideRoutes {
    SideRoutes(Arc::new(move |path: &str| -> Option<SidePage> {
        match path {
            "/healthz" => Some((200, "text/plain; charset=utf-8", "ok\n".into())),
            "/readyz" => {
                let problems = catalog.not_ready();
                Some(match problems.is_empty() {
                    true => (200, "text/plain; charset=utf-8", "ready\n".into()),
                    false => (503, "text/plain; charset=utf-8", format!("not ready:\n{}\n", problems.join("\n"))),
                })
            }
            "/metrics" => {
                let mut page = metrics::render(catalog.upstreams().iter().map(|u| (u.key(), &*u.metrics)));
                page.push_str(&mcp::server::counters::prometheus());
                #[cfg(feature = "otel")]
                page.push_str(&mcp::telemetry::metrics::prometheus());
                Some((200, "text/plain; version=0.0.4; charset=utf-8", page))
            }
            _ => None,
        }
    }))
}
