//! The metrics' push over OTLP/HTTP (`opentelemetry-otlp`'s exporter, through our client):
//! every `OTEL_METRIC_EXPORT_INTERVAL`, and when a flush asks, what the one reader gathered (the
//! reader the `/metrics` page reads too). The first failure in a row is said on stderr.
//!
//! The push runs on the export thread (see `export`), or on a server's own runtime: when the
//! command line serves a server that exports no span and pushes its metrics over plain HTTP to
//! an IP address (the collector's, or its proxy's). Such a process needs no second thread for a
//! task that wakes once a minute, and a second thread would cost each of its requests more than
//! that: once a process has two threads, glibc takes its allocator's locks and makes each system
//! call a cancellation point (about 3% of an `echo` call over HTTP, an idle thread added to a
//! server in `bench-otel`). A host name would bring a thread back (a resolver's lookups block,
//! and run on one), and so would certificates read from disk, hence the two conditions.
//!
//! A push on a server's runtime lives as long as that runtime: a server that serves again, on
//! another runtime, starts it again there; a flush from outside it pushes from a runtime of its
//! own, for the moment.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use hyper_util::client::proxy::matcher::Matcher;
use opentelemetry_otlp::{MetricExporter, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::ManualReader;
use tokio::sync::mpsc;

use super::export::{ask_flush, flush_batcher, runtime, Command, Sender};

/// What is pushed, how often, and from where.
struct Pusher {
    reader: Arc<ManualReader>,
    interval: Duration,
    /// On the runtime of the server that started it (else on the export thread).
    on_server: bool,
}

static PUSHER: OnceLock<Pusher> = OnceLock::new();

/// The running push task's requests, and the runtime it runs on.
static TASK: Mutex<Option<Task>> = Mutex::new(None);

struct Task {
    commands: mpsc::Sender<Command>,
    /// The server's runtime it runs on; `None`: the export thread's.
    runtime: Option<tokio::runtime::Id>,
}

/// Starts pushing what `reader` gathers every `interval`: on the runtime this is called from
/// when `serving` (the command line is about to serve on it, and no span is exported) and the
/// collector is reached at an IP address over plain HTTP, else on the export thread. Metrics
/// count as pushed only once the push started.
pub(crate) fn start(reader: Arc<ManualReader>, interval: Duration, serving: bool) -> Result<(), String> {
    if PUSHER.get().is_some() {
        return Ok(());
    }
    // The connector follows the environment's proxies only when built with `tls`.
    let proxies = if cfg!(feature = "tls") { Matcher::from_env() } else { Matcher::builder().build() };
    let on_server = serving
        && tokio::runtime::Handle::try_current().is_ok()
        && reached_at_an_address(|name| std::env::var(name).ok(), &proxies);
    let pusher = Pusher { reader, interval, on_server };
    start_task(&pusher)?;
    let _ = PUSHER.set(pusher);
    Ok(())
}

/// Whether metrics are pushed.
pub(crate) fn pushes() -> bool {
    PUSHER.get().is_some()
}

/// Called as the command line starts serving on the runtime this is called from: when the push
/// ran on a server's runtime, and runs on no other since, it starts again on this one (the
/// other may have ended, or no longer be driven).
pub(crate) fn resume_here() {
    let Some(pusher) = PUSHER.get().filter(|p| p.on_server) else { return };
    if tokio::runtime::Handle::try_current().is_err() || running_here().is_some() {
        return;
    }
    if let Err(e) = start_task(pusher) {
        eprintln!("OpenTelemetry: the metric push cannot start again ({e}); metrics stay on /metrics only");
    }
}

/// The running task's requests, when it runs on the runtime this is called from (or on the
/// export thread's, which is always driven).
fn running_here() -> Option<mpsc::Sender<Command>> {
    let task = TASK.lock().unwrap_or_else(|e| e.into_inner());
    let task = task.as_ref().filter(|task| !task.commands.is_closed())?;
    let here = tokio::runtime::Handle::try_current().map(|h| h.id()).ok();
    (task.runtime.is_none() || task.runtime == here).then(|| task.commands.clone())
}

fn start_task(pusher: &Pusher) -> Result<(), String> {
    let (commands, requests) = mpsc::channel(4);
    let task = push_loop(exporter(pusher.on_server)?, pusher.reader.clone(), pusher.interval, requests);
    let runtime = if pusher.on_server {
        let here = tokio::runtime::Handle::current();
        here.spawn(task);
        Some(here.id())
    } else {
        runtime().spawn(task);
        None
    };
    *TASK.lock().unwrap_or_else(|e| e.into_inner()) = Some(Task { commands, runtime });
    Ok(())
}

/// The OTLP/HTTP metric exporter, its requests sent from the task that pushes when `here`.
fn exporter(here: bool) -> Result<MetricExporter, String> {
    let client = if here { Sender::here() } else { Sender::new() }.map_err(|e| e.to_string())?;
    MetricExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .build()
        .map_err(|e| e.to_string())
}

/// Pushes every `interval`, and when a flush asks, until the requests' sender is gone.
async fn push_loop(
    exporter: MetricExporter,
    reader: Arc<ManualReader>,
    interval: Duration,
    mut requests: mpsc::Receiver<Command>,
) {
    let mut failing = false;
    loop {
        let flush = tokio::select! {
            () = tokio::time::sleep(interval) => None,
            request = requests.recv() => match request {
                Some(Command::Flush(done)) => Some(done),
                None => return,
            },
        };
        push_once(&exporter, &reader, &mut failing).await;
        if let Some(done) = flush {
            let _ = done.send(());
        }
    }
}

/// Pushes what `reader` gathered; says the first failure in a row (`failing`).
async fn push_once(exporter: &MetricExporter, reader: &ManualReader, failing: &mut bool) {
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
    use opentelemetry_sdk::metrics::reader::MetricReader as _;
    let mut collected = opentelemetry_sdk::metrics::data::ResourceMetrics::default();
    if reader.collect(&mut collected).is_err() {
        return;
    }
    let pushed = match tokio::time::timeout(Duration::from_secs(30), exporter.export(&collected)).await {
        Ok(pushed) => pushed.map_err(|e| e.to_string()),
        Err(_) => Err("no answer within 30 s".to_owned()),
    };
    match pushed {
        Err(e) if !*failing => {
            *failing = true;
            tracing::warn!("OpenTelemetry: metrics could not be exported ({e}); later failures are not said");
        }
        Ok(()) => *failing = false,
        Err(_) => {}
    }
}

/// Pushes the metrics now, when they are pushed at all, waiting at most `timeout`. A push that
/// runs on a server's runtime is not waited for (that runtime may be this thread's, or no longer
/// run): the metrics are pushed from a thread and a runtime of the moment.
pub(crate) fn flush(timeout: Duration) -> OTelSdkResult {
    let Some(pusher) = PUSHER.get() else { return Ok(()) };
    if !pusher.on_server {
        return match running_here() {
            Some(commands) => flush_batcher(&commands, timeout),
            None => Err(OTelSdkError::InternalFailure("the push task is gone".into())),
        };
    }
    let pushed = std::thread::scope(|scope| {
        let pushing = std::thread::Builder::new().name("mcp-telemetry-flush".into()).spawn_scoped(scope, || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            runtime.map_err(|e| e.to_string())?.block_on(push_now(pusher, timeout))
        });
        pushing.map_err(|e| e.to_string())?.join().unwrap_or_else(|_| Err("the push panicked".into()))
    });
    pushed.map_err(OTelSdkError::InternalFailure)
}

/// [`flush`] from a task, the push going on beside the wait: how a server that serves on the
/// runtime the push runs on flushes.
pub(crate) async fn flush_async(timeout: Duration) -> OTelSdkResult {
    let Some(pusher) = PUSHER.get() else { return Ok(()) };
    let Some(commands) = running_here() else {
        return push_now(pusher, timeout).await.map_err(OTelSdkError::InternalFailure);
    };
    match tokio::time::timeout(timeout, ask_flush(&commands)?).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(OTelSdkError::InternalFailure("the push task is gone".into())),
        Err(_) => Err(OTelSdkError::Timeout(timeout)),
    }
}

/// One push from the task this runs in, with an exporter of its own, within `timeout`.
async fn push_now(pusher: &Pusher, timeout: Duration) -> Result<(), String> {
    let exporter = exporter(true)?;
    let mut failing = false;
    tokio::time::timeout(timeout, push_once(&exporter, &pusher.reader, &mut failing))
        .await
        .map_err(|_| format!("no answer within {timeout:?}"))?;
    if failing {
        return Err("the collector did not take them".into());
    }
    Ok(())
}

/// Whether the push connects to an IP address over plain HTTP (the endpoint's, or that of the
/// proxy the environment names for it): no name to resolve, no certificate to read.
fn reached_at_an_address(var: impl Fn(&str) -> Option<String>, proxies: &Matcher) -> bool {
    let var = |name: &str| var(name).filter(|v| !v.is_empty()); // as the exporter reads them
    let url = match (var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
        (Some(url), _) => url,
        (None, Some(base)) => format!("{}/v1/metrics", base.trim_end_matches('/')),
        (None, None) => return false, // the exporter's default, a host name (localhost)
    };
    let Ok(endpoint) = url.parse::<http::Uri>() else { return false };
    let proxy = proxies.intercept(&endpoint);
    let reached = proxy.as_ref().map_or(&endpoint, |p| p.uri());
    let address = reached.host().map(|h| h.trim_start_matches('[').trim_end_matches(']'));
    reached.scheme_str() == Some("http") && address.is_some_and(|a| a.parse::<std::net::IpAddr>().is_ok())
}

#[cfg(test)]
mod tests {
    use hyper_util::client::proxy::matcher::Matcher;

    #[test]
    fn only_an_ip_address_over_plain_http_is_reached_without_a_thread() {
        let direct = Matcher::builder().build();
        let reached = |endpoint: &str, proxies: &Matcher| {
            super::reached_at_an_address(
                |name| (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| endpoint.to_owned()),
                proxies,
            )
        };
        let cases = [
            ("http://127.0.0.1:4318", true),
            ("http://[::1]:4318/", true),
            ("http://localhost:4318", false),
            ("https://127.0.0.1:4318", false),
            ("http://collector:4318", false),
            ("not a url", false),
            ("", false), // unset: the exporter's default, localhost
        ];
        for (endpoint, expected) in cases {
            assert_eq!(reached(endpoint, &direct), expected, "{endpoint:?}");
        }
        let by_name = Matcher::builder().http("http://proxy.example:3128").build();
        assert!(!reached("http://127.0.0.1:4318", &by_name), "a proxy named by a host name");
        let by_address = Matcher::builder().http("http://10.0.0.1:3128").build();
        assert!(reached("http://127.0.0.1:4318", &by_address), "a proxy at an address");
        let signal = |name: &str| {
            (name == "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").then(|| "http://10.1.2.3:4318/v1/metrics".to_owned())
        };
        assert!(super::reached_at_an_address(signal, &direct), "the signal's own endpoint");
    }
}
