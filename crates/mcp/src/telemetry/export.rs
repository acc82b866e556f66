//! OTLP over HTTP with protobuf, sent through our hyper client (the environment's proxies, and
//! TLS when built with `tls`), off the request path: spans as the `wire` and `otlp` modules
//! write them, metrics through the `opentelemetry-otlp` exporter.
//!
//! An ended span that is sampled goes into a bounded queue (`Queue`, `OTEL_BSP_MAX_QUEUE_SIZE`)
//! with a non-blocking send, its slot taken before the span is finished (a full queue costs
//! nothing more), from this library's operations and from the SDK's tracer (the `Batcher`
//! processor, for the other spans). One task drains it in batches
//! (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, or whatever came within `OTEL_BSP_SCHEDULE_DELAY`), woken
//! once per batch rather than per span, and exports one batch at a time, each export bounded by
//! `OTEL_BSP_EXPORT_TIMEOUT`. That task, and every export request, runs on a runtime of its own,
//! on a thread of its own: a server's threads never wait for a collector. (The metrics' push runs
//! there too, or on a server's own runtime: see `push`.) When the collector is
//! slow or gone, the queue fills and the spans that do not fit are dropped, and counted
//! (`otel.sdk.processor.span.processed` with `error.type = queue_full`); a batch the collector
//! did not take is counted as failed (`otel.sdk.exporter.span.exported` with the failure's
//! `error.type`). The first failure in a row is said on stderr, and the recovery.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use opentelemetry::KeyValue;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanProcessor};
use tokio::sync::{mpsc, oneshot};

use super::config::{Batch, Config};
use super::otlp::{Encoder, Target};
use super::wire::Queued;

/// The largest response body read from a collector.
const MAX_RESPONSE: usize = 4 * 1024 * 1024;

/// The runtime exports run on: one thread, started on first use, living as long as the process.
pub(super) fn runtime() -> &'static tokio::runtime::Handle {
    static HANDLE: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a telemetry runtime");
        let handle = runtime.handle().clone();
        let started = std::thread::Builder::new()
            .name("mcp-telemetry".into())
            .spawn(move || runtime.block_on(std::future::pending::<()>()));
        if let Err(e) = started {
            eprintln!("OpenTelemetry: the export thread cannot start ({e}); nothing will be exported");
        }
        handle
    })
}

/// How an export request reaches the collector: our hyper client, each request spawned on the
/// export runtime (so the SDK's own threads may await it too), or sent from the task that asks
/// ([`Sender::here`]), within the exporter's timeout.
#[derive(Clone)]
pub(super) struct Sender {
    #[cfg(feature = "tls")]
    client: hyper_util::client::legacy::Client<crate::net::connect::Connector, http_body_util::Full<Bytes>>,
    #[cfg(not(feature = "tls"))]
    client: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        http_body_util::Full<Bytes>,
    >,
    timeout: Duration,
    /// Sent from the task that asks, on its runtime, rather than spawned on the export runtime.
    here: bool,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("mcp telemetry HTTP client")
    }
}

impl Sender {
    /// A client whose requests run on the export runtime.
    pub(super) fn new() -> std::io::Result<Sender> {
        let _inside = runtime().enter(); // the connector's resolver belongs to that runtime
        Sender::build(false)
    }

    /// A client whose requests run where they are awaited, a task of the runtime this is called
    /// from (the export runtime is not started).
    pub(super) fn here() -> std::io::Result<Sender> {
        Sender::build(true)
    }

    fn build(here: bool) -> std::io::Result<Sender> {
        #[cfg(feature = "tls")]
        let connector = crate::net::connect::Connector::new(&[])?;
        #[cfg(not(feature = "tls"))]
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
        let timeout = std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(10));
        Ok(Sender { client, timeout, here })
    }
}

/// Why an export failed: the `error.type` it is counted under, and what to say.
type Failure = (&'static str, String);

impl Sender {
    /// Posts an encoded trace request to `target`, on the export runtime, trying again (twice at
    /// most, after 100 ms then 400 ms, or what `Retry-After` asks up to 5 s) when the collector
    /// is busy (429, 502, 503, 504) or the connection failed, as the OTLP specification says a
    /// client may; each attempt bounded by the target's timeout, and one that times out not
    /// tried again.
    async fn post(&self, target: &Target, body: Bytes) -> Result<(), Failure> {
        let mut pause = Duration::from_millis(100);
        for attempt in 0..3 {
            let (failure, retry_after) = match self.post_once(target, body.clone()).await {
                Ok(()) => return Ok(()),
                Err(failure) => failure,
            };
            let Some(asked) = retry_after.filter(|_| attempt < 2) else { return Err(failure) };
            tokio::time::sleep(asked.unwrap_or(pause).min(Duration::from_secs(5))).await;
            pause *= 4;
        }
        unreachable!("the third attempt returns")
    }

    /// One attempt: the failure, and whether to try again (`Some`, with the pause `Retry-After`
    /// asks for, if any).
    #[allow(clippy::type_complexity)] // named in the doc above
    async fn post_once(&self, target: &Target, body: Bytes) -> Result<(), (Failure, Option<Option<Duration>>)> {
        let mut request = http::Request::post(target.uri.clone())
            .body(http_body_util::Full::new(body))
            .map_err(|e| (("export_failed", e.to_string()), None))?;
        request.headers_mut().extend(target.headers.clone());
        request
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/x-protobuf"));
        // The answer's body is read only so that the connection can be used again.
        let response = match self.exchange(request, target.timeout).await {
            Ok((response, _body)) => response,
            Err(Unanswered::Failed(e)) => return Err((("export_failed", e), Some(None))),
            // Not tried again: a collector that hangs has had its time.
            Err(Unanswered::TimedOut) => {
                return Err((("timeout", format!("no answer within {:?}", target.timeout)), None));
            }
        };
        if response.status.is_success() {
            return Ok(());
        }
        let retry_after = response
            .headers
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()?.trim().parse().ok())
            .map(Duration::from_secs);
        let busy = matches!(response.status.as_u16(), 429 | 502 | 503 | 504);
        let failure = ("export_failed", format!("the collector answered {}", response.status));
        Err((failure, busy.then_some(retry_after)))
    }

    /// Sends `request` and reads (a bounded part of) its answer, within `timeout`: the answer's
    /// head, and its body or why it could not be read.
    async fn exchange(
        &self,
        request: http::Request<http_body_util::Full<Bytes>>,
        timeout: Duration,
    ) -> Result<(http::response::Parts, Result<Bytes, String>), Unanswered> {
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| Unanswered::Failed(e.to_string()))?;
            let (parts, body) = response.into_parts();
            let body = http_body_util::Limited::new(body, MAX_RESPONSE).collect().await;
            Ok((parts, body.map(|b| b.to_bytes()).map_err(|e| e.to_string())))
        };
        tokio::time::timeout(timeout, exchange).await.unwrap_or(Err(Unanswered::TimedOut))
    }
}

/// Why a request to the collector got no answer.
enum Unanswered {
    /// The request failed (no connection, a broken one).
    Failed(String),
    /// No answer within the time allowed.
    TimedOut,
}

#[async_trait::async_trait]
impl HttpClient for Sender {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, http_body_util::Full::new(body));
        if self.here {
            return self.answer(request).await.map_err(HttpError::from);
        }
        let sender = self.clone();
        let sent = runtime().spawn(async move { sender.answer(request).await });
        match sent.await {
            Ok(result) => result.map_err(HttpError::from),
            Err(e) => Err(HttpError::from(format!("the export was abandoned: {e}"))),
        }
    }
}

impl Sender {
    /// The collector's answer to `request` within the timeout, or why there is none.
    async fn answer(&self, request: http::Request<http_body_util::Full<Bytes>>) -> Result<Response<Bytes>, String> {
        match self.exchange(request, self.timeout).await {
            Ok((parts, body)) => body.map(|bytes| Response::from_parts(parts, bytes)),
            Err(Unanswered::Failed(e)) => Err(e),
            Err(Unanswered::TimedOut) => Err(format!("no answer within {:?}", self.timeout)),
        }
    }
}

/// What the span pipeline has done (the SDK metrics' numbers).
#[derive(Default)]
struct Stats {
    /// Spans queued for export.
    queued: AtomicU64,
    /// Spans dropped because the queue was full.
    dropped: AtomicU64,
    /// Spans in the queue now.
    waiting: AtomicU64,
    /// The queue's capacity.
    capacity: AtomicU64,
    /// Spans the collector took.
    exported: AtomicU64,
    /// Spans in batches the collector did not take, by reason.
    failed: Mutex<Vec<(String, u64)>>,
    /// Whether the last export failed (failures are said once in a row).
    failing: AtomicBool,
}

static STATS: OnceLock<Stats> = OnceLock::new();

fn stats() -> &'static Stats {
    STATS.get_or_init(Stats::default)
}

/// Spans dropped so far because the export queue was full.
pub fn dropped_spans() -> u64 {
    stats().dropped.load(Ordering::Relaxed)
}

/// Spans the collector took so far.
pub fn exported_spans() -> u64 {
    stats().exported.load(Ordering::Relaxed)
}

/// Registers the span pipeline's counters on `meter` (observed when read; none while no span
/// is exported).
pub(crate) fn register_counters(meter: &opentelemetry::metrics::Meter) {
    let processor = || {
        [
            KeyValue::new("otel.component.type", "batching_span_processor"),
            KeyValue::new("otel.component.name", "batching_span_processor/0"),
        ]
    };
    let exporter = || {
        [
            KeyValue::new("otel.component.type", "otlp_http_span_exporter"),
            KeyValue::new("otel.component.name", "otlp_http_span_exporter/0"),
        ]
    };
    let _ = meter
        .u64_observable_counter("otel.sdk.processor.span.processed")
        .with_unit("{span}")
        .with_description("The number of spans for which the processing has finished, either successful or failed.")
        .with_callback(move |observer| {
            if !super::is_tracing() {
                return;
            }
            let stats = stats();
            observer.observe(stats.queued.load(Ordering::Relaxed), &processor());
            let mut dropped = processor().to_vec();
            dropped.push(KeyValue::new("error.type", "queue_full"));
            observer.observe(stats.dropped.load(Ordering::Relaxed), &dropped);
        })
        .build();
    let _ = meter
        .i64_observable_up_down_counter("otel.sdk.processor.span.queue.size")
        .with_unit("{span}")
        .with_description("The number of spans in the queue of a given instance of an SDK span processor.")
        .with_callback(move |observer| {
            if super::is_tracing() {
                observer.observe(stats().waiting.load(Ordering::Relaxed) as i64, &processor());
            }
        })
        .build();
    let _ = meter
        .i64_observable_up_down_counter("otel.sdk.processor.span.queue.capacity")
        .with_unit("{span}")
        .with_description(
            "The maximum number of spans the queue of a given instance of an SDK span processor can hold.",
        )
        .with_callback(move |observer| {
            if super::is_tracing() {
                observer.observe(stats().capacity.load(Ordering::Relaxed) as i64, &processor());
            }
        })
        .build();
    let _ = meter
        .u64_observable_counter("otel.sdk.exporter.span.exported")
        .with_unit("{span}")
        .with_description("The number of spans for which the export has finished, either successful or failed.")
        .with_callback(move |observer| {
            if !super::is_tracing() {
                return;
            }
            let stats = stats();
            observer.observe(stats.exported.load(Ordering::Relaxed), &exporter());
            for (reason, count) in stats.failed.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                let mut attributes = exporter().to_vec();
                attributes.push(KeyValue::new("error.type", reason.clone()));
                observer.observe(*count, &attributes);
            }
        })
        .build();
}

/// A message to the export task.
pub(super) enum Command {
    /// Export what is queued now, then answer.
    Flush(oneshot::Sender<()>),
}

/// The export task's commands (one task per process).
static COMMANDS: OnceLock<mpsc::Sender<Command>> = OnceLock::new();

/// The export queue in front of the export task, bounded by the count of spans in it (taken
/// before a span goes in, given back as the task takes it out): a channel that bounds itself
/// took a lock per span to give its slot back.
#[derive(Debug)]
struct Queue {
    spans: mpsc::UnboundedSender<Queued>,
    /// Told when a full batch is waiting (the export task is not woken for each span).
    full: std::sync::Arc<tokio::sync::Notify>,
    max_batch: u64,
    max_queue: u64,
}

impl Queue {
    /// Queues the span `span` makes for export; counts it dropped when the queue is full.
    fn push(&self, span: impl FnOnce() -> Queued) {
        let stats = stats();
        // The place is taken before the span is made: a full queue (a collector down) costs
        // neither the span nor its copy.
        let waiting = stats.waiting.fetch_add(1, Ordering::Relaxed);
        if waiting >= self.max_queue || self.spans.send(span()).is_err() {
            stats.waiting.fetch_sub(1, Ordering::Relaxed);
            stats.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        stats.queued.fetch_add(1, Ordering::Relaxed);
        if waiting + 1 == self.max_batch {
            self.full.notify_one();
        }
    }
}

/// The export queue, once spans are exported.
static QUEUE: OnceLock<std::sync::Arc<Queue>> = OnceLock::new();

/// Queues the span `span` writes for export (this library's operations end their spans so),
/// unless the queue is full.
pub(crate) fn enqueue(span: impl FnOnce() -> Queued) {
    if let Some(queue) = QUEUE.get() {
        queue.push(span);
    }
}

/// The SDK's batch span processor: the export queue, for the spans the SDK's tracer makes.
#[derive(Debug)]
struct Batcher {
    queue: std::sync::Arc<Queue>,
    commands: mpsc::Sender<Command>,
    export_timeout: Duration,
}

impl SpanProcessor for Batcher {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        if span.span_context.is_sampled() {
            self.queue.push(|| Queued::Full(Box::new(span)));
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        flush_batcher(&self.commands, self.export_timeout)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        flush_batcher(&self.commands, timeout)
    }
}

/// Asks an export task (spans or metrics) to export what it holds, and waits at most `timeout`
/// (from any thread but the export thread's).
pub(super) fn flush_batcher(commands: &mpsc::Sender<Command>, timeout: Duration) -> OTelSdkResult {
    let exported = ask_flush(commands)?;
    let (tx, rx) = std::sync::mpsc::channel();
    runtime().spawn(async move {
        let _ = tx.send(exported.await.is_ok());
    });
    match rx.recv_timeout(timeout) {
        Ok(true) => Ok(()),
        Ok(false) => Err(OTelSdkError::InternalFailure("the export task is gone".into())),
        Err(_) => Err(OTelSdkError::Timeout(timeout)),
    }
}

/// Asks an export task to export what it holds: the answer comes once it did.
pub(super) fn ask_flush(commands: &mpsc::Sender<Command>) -> Result<oneshot::Receiver<()>, OTelSdkError> {
    let (done, exported) = oneshot::channel();
    match commands.try_send(Command::Flush(done)) {
        Ok(()) => Ok(exported),
        Err(_) => Err(OTelSdkError::InternalFailure("the export task is busy or gone".into())),
    }
}

/// The export task: it sleeps until a batch is full, the delay has passed or a flush is asked
/// for, then exports what is queued, a batch at a time. Spans are taken from the queue without
/// waiting on it, so that ending a span never wakes this thread: under load it wakes once per
/// batch, not once per span.
async fn export_loop(
    mut exporter: Exporter,
    mut spans: mpsc::UnboundedReceiver<Queued>,
    mut commands: mpsc::Receiver<Command>,
    full: std::sync::Arc<tokio::sync::Notify>,
    batch: Batch,
) {
    loop {
        let flush = tokio::select! {
            biased;
            command = commands.recv() => match command {
                Some(Command::Flush(done)) => Some(done),
                None => return,
            },
            () = full.notified() => None,
            () = tokio::time::sleep(batch.delay) => None,
        };
        // Everything queued so far goes out (before a flush is answered), a batch at a time.
        loop {
            match spans.try_recv() {
                Ok(span) => {
                    stats().waiting.fetch_sub(1, Ordering::Relaxed);
                    exporter.encoder.add(span);
                    if exporter.encoder.len() >= batch.max_batch {
                        exporter.export(&batch).await;
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    exporter.export(&batch).await;
                    return;
                }
            }
        }
        exporter.export(&batch).await;
        if let Some(done) = flush {
            let _ = done.send(());
        }
    }
}

/// What sends spans: the encoder (which holds the batch being made), the client and where it
/// posts.
struct Exporter {
    encoder: Encoder,
    sender: Sender,
    target: Target,
}

impl Exporter {
    /// Exports the batch (which begins again empty), counting how it went.
    async fn export(&mut self, batch: &Batch) {
        if self.encoder.len() == 0 {
            return;
        }
        let count = self.encoder.len() as u64;
        let body = self.encoder.encode();
        let outcome = match tokio::time::timeout(batch.export_timeout, self.sender.post(&self.target, body)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(("timeout", format!("no answer within {:?}", batch.export_timeout))),
        };
        let stats = stats();
        match outcome {
            Ok(()) => {
                stats.exported.fetch_add(count, Ordering::Relaxed);
                if stats.failing.swap(false, Ordering::Relaxed) {
                    tracing::warn!("OpenTelemetry: spans are exported again");
                }
            }
            Err((reason, message)) => {
                let mut failed = stats.failed.lock().unwrap_or_else(|e| e.into_inner());
                match failed.iter_mut().find(|(r, _)| r == reason) {
                    Some((_, n)) => *n += count,
                    None => failed.push((reason.to_owned(), count)),
                }
                if !stats.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!("OpenTelemetry: {count} spans could not be exported ({message}); later failures are counted, not said");
                }
            }
        }
    }
}

/// The tracer provider: the bounded batch processor in front of the OTLP/HTTP export task,
/// `sampler`, the resource of `config`.
pub(crate) fn tracer_provider(
    config: &Config,
    batch: &Batch,
    sampler: Box<dyn opentelemetry_sdk::trace::ShouldSample>,
) -> Result<SdkTracerProvider, String> {
    let exporter = Exporter {
        encoder: Encoder::new(&config.resource, &super::scope(), batch.max_batch),
        sender: Sender::new().map_err(|e| e.to_string())?,
        target: Target::from_env()?,
    };
    let (spans, spans_rx) = mpsc::unbounded_channel();
    let (commands, commands_rx) = mpsc::channel(16);
    stats().capacity.store(batch.max_queue as u64, Ordering::Relaxed);
    let full = std::sync::Arc::new(tokio::sync::Notify::new());
    runtime().spawn(export_loop(exporter, spans_rx, commands_rx, full.clone(), batch.clone()));
    let _ = COMMANDS.set(commands.clone());
    let queue = std::sync::Arc::new(Queue {
        spans,
        full,
        max_batch: batch.max_batch as u64,
        max_queue: batch.max_queue as u64,
    });
    let _ = QUEUE.set(queue.clone());
    let batcher = Batcher { queue, commands, export_timeout: batch.export_timeout };
    Ok(SdkTracerProvider::builder()
        .with_resource(config.resource.clone())
        .with_sampler(sampler)
        .with_span_processor(batcher)
        .build())
}

/// Exports what is queued, waiting at most `timeout`.
pub(crate) fn flush(timeout: Duration) -> OTelSdkResult {
    match COMMANDS.get() {
        Some(commands) => flush_batcher(commands, timeout),
        None => Ok(()),
    }
}
