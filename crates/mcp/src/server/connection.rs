//! One connection: the read loop, the in-flight table and the writer.
//!
//! Invariants:
//! - every request gets exactly one response, unless it was cancelled (then none);
//! - a response (a message with `result` or `error` and no `method`) is never answered, however
//!   malformed: it resolves the request of ours it names, or it is logged and dropped;
//! - a line that is not valid JSON gets -32700 with id `null`, a valid non-message gets -32600,
//!   and the connection goes on; a notification never gets a response;
//! - at most `max_in_flight` requests run at once: past that, the reader waits (backpressure);
//! - a handler that panics answers -32603; the connection survives it.

use std::sync::Arc;
use std::time::Duration;

use mcp_types::jsonrpc::{Envelope, JsonRpcError, MessageKind};
use mcp_types::utilities::CancelledParams;
use mcp_types::version::ProtocolVersion;
use mcp_types::{ErrorObject, RequestId};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::engine::inflight::{InFlight, Ticket};
use crate::engine::lines::{Frame, LineReader};
use crate::engine::memory;
use crate::engine::outbox::{Outbox, OutboxReceiver};
use crate::engine::raw::{RawParams, Span};
use crate::engine::session::Session;
use crate::engine::splice::{self, Expanded};
use crate::server::bounded;
use crate::server::era::{self, Admitted};
use crate::server::head::ParamsHead;
use crate::server::reply::Reply;
use crate::server::{Change, Router};

/// Limits of one connection.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The longest line accepted, in bytes (default 16 MiB).
    pub max_line: usize,
    /// Requests that may run at once (default 256).
    pub max_in_flight: usize,
    /// Outgoing messages that may wait to be written (default 1024).
    pub outbox_capacity: usize,
    /// How long requests still running at end of input may take to finish (default 10 s).
    pub shutdown_grace: Duration,
    /// Who is at the other end, when a transport authenticated it (the 2024-11-05 HTTP
    /// transport behind a resource server): every request carries it.
    pub caller: Option<crate::server::identity::Identity>,
    /// How the peer is reached, as telemetry records it (`None`: stdio).
    #[cfg(feature = "otel")]
    pub transport: Option<crate::telemetry::Transport>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_line: 16 * 1024 * 1024,
            max_in_flight: 256,
            outbox_capacity: 1024,
            shutdown_grace: Duration::from_secs(10),
            caller: None,
            #[cfg(feature = "otel")]
            transport: None,
        }
    }
}

/// Serves `router` to the peer at the other end of `reader` and `writer` until end of input.
pub async fn serve_connection<R, W>(router: Router, reader: R, writer: W, options: ServeOptions) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, rx) = Outbox::channel(options.outbox_capacity);
    let writer = tokio::spawn(write_loop(writer, rx));
    let mut conn = Connection {
        router,
        outbox,
        session: None,
        inflight: InFlight::default(),
        tasks: JoinSet::new(),
        forwarder: None,
        caller: options.caller.clone(),
        #[cfg(feature = "otel")]
        transport: options.transport.clone().unwrap_or_default(),
        #[cfg(feature = "otel")]
        session_clock: None,
    };
    let mut lines = LineReader::new(reader, options.max_line);
    let result = conn.read_loop(&mut lines, options.max_in_flight).await;
    conn.shutdown(options.shutdown_grace).await;
    drop(conn);
    let written = writer.await.unwrap_or(Ok(()));
    result.and(written)
}

struct Connection {
    router: Router,
    outbox: Outbox,
    session: Option<Arc<Session>>,
    inflight: InFlight,
    tasks: JoinSet<Ticket>,
    forwarder: Option<JoinHandle<()>>,
    caller: Option<crate::server::identity::Identity>,
    /// How the peer is reached (telemetry's words).
    #[cfg(feature = "otel")]
    transport: crate::telemetry::Transport,
    /// The legacy session's lifetime, recorded when the connection ends.
    #[cfg(feature = "otel")]
    session_clock: Option<crate::telemetry::Session>,
}

impl Connection {
    async fn read_loop<R: AsyncRead + Unpin>(
        &mut self,
        lines: &mut LineReader<R>,
        max_in_flight: usize,
    ) -> std::io::Result<()> {
        loop {
            tokio::select! {
                biased;
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => self.finished(done),
                frame = lines.next(), if self.tasks.len() < max_in_flight => match frame? {
                    Some(Frame::Line(line)) => {
                        self.on_line(line).await;
                        if !lines.has_buffered_line() {
                            // Let the requests just started (and the writer) run before the
                            // next read: answers go out sooner, and reads batch more input.
                            tokio::task::yield_now().await;
                        }
                    }
                    Some(Frame::TooLong) => {
                        self.send_error(None, ErrorObject::invalid_request("message too long: the line exceeds the server's limit")).await
                    }
                    None => return Ok(()),
                },
            }
        }
    }

    /// End of input: let running requests finish within the grace period, then cancel the rest.
    async fn shutdown(&mut self, grace: Duration) {
        if let Some(f) = self.forwarder.take() {
            f.abort();
        }
        let deadline = tokio::time::sleep(grace);
        tokio::pin!(deadline);
        while !self.tasks.is_empty() {
            tokio::select! {
                Some(done) = self.tasks.join_next() => self.finished(done),
                _ = &mut deadline => break,
            }
        }
        self.inflight.cancel_all();
        self.tasks.shutdown().await;
        if let Some(session) = &self.session {
            session.fail_pending();
        }
    }

    fn finished(&mut self, done: Result<Ticket, tokio::task::JoinError>) {
        if let Ok(ticket) = done {
            self.inflight.finish(&ticket);
        }
    }

    async fn on_line(&mut self, line: Vec<u8>) {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        match first {
            None => {} // blank line: nothing to do
            Some(b'{') => self.on_object(line).await,
            Some(b'[') => self.on_batch(&line).await,
            Some(_) => match serde_json::from_slice::<Value>(&line) {
                Ok(_) => self.send_error(None, ErrorObject::invalid_request("a message must be a JSON object")).await,
                Err(e) => self.send_error(None, ErrorObject::parse_error(format!("Parse error: {e}"))).await,
            },
        }
    }

    /// One message. A request to run takes the line with it into its task (its params are read
    /// from there, never copied); anything else is handled here and the line dropped.
    async fn on_object(&mut self, line: Vec<u8>) {
        let Some(mut request) = self.read_object(&line).await else {
            if line.len() >= memory::LARGE {
                drop(line);
                memory::release_freed_memory();
            }
            return;
        };
        let raw = RawParams::in_line(line, std::mem::replace(&mut request.span, Span::None))
            .with_named_at(request.named.take());
        self.run(request, raw);
    }

    /// Handles a message that is not a request to run; returns the request to run otherwise.
    async fn read_object(&mut self, line: &[u8]) -> Option<Admission> {
        let envelope = match serde_json::from_slice::<Envelope>(line) {
            Ok(envelope) => envelope,
            Err(e) => {
                self.send_error(None, ErrorObject::parse_error(format!("Parse error: {e}"))).await;
                return None;
            }
        };
        match envelope.kind() {
            Ok(MessageKind::Request { id, method, params }) => self.admit_request(id, &method, params, line).await,
            Ok(MessageKind::Notification { method, params }) => {
                self.on_notification(&method, params);
                None
            }
            Ok(response) => {
                self.on_response(response);
                None
            }
            Err(invalid) => {
                self.send_error(invalid.id, ErrorObject::invalid_request(invalid.reason)).await;
                None
            }
        }
    }

    /// JSON-RPC batches exist only in 2025-03-26. Elsewhere each request of a batch is refused
    /// with its own error (one answer per request), and its responses still reach their requests.
    async fn on_batch(&mut self, line: &[u8]) {
        let items = match serde_json::from_slice::<Vec<&RawValue>>(line) {
            Ok(items) => items,
            Err(e) => return self.send_error(None, ErrorObject::parse_error(format!("Parse error: {e}"))).await,
        };
        if items.is_empty() {
            return self.send_error(None, ErrorObject::invalid_request("an empty batch")).await;
        }
        let allowed = self.session.as_ref().is_some_and(|s| s.version == ProtocolVersion::V2025_03_26);
        let mut requests = Vec::new();
        for item in items {
            let kind = match serde_json::from_str::<Envelope>(item.get()).map(Envelope::kind) {
                Ok(Ok(kind)) => kind,
                Ok(Err(invalid)) => {
                    self.send_error(invalid.id, ErrorObject::invalid_request(invalid.reason)).await;
                    continue;
                }
                Err(e) => {
                    self.send_error(None, ErrorObject::parse_error(format!("Parse error: {e}"))).await;
                    continue;
                }
            };
            match kind {
                MessageKind::Request { id, .. } if !allowed => {
                    let why = "batches are only allowed in protocol version 2025-03-26";
                    self.send_error(Some(id), ErrorObject::invalid_request(why)).await
                }
                MessageKind::Request { id, method, .. } if method == "initialize" => {
                    let why = "initialize must not be sent in a batch";
                    self.send_error(Some(id), ErrorObject::invalid_request(why)).await
                }
                MessageKind::Request { id, method, params } => match self.admit(&method, id.clone(), params) {
                    Ok(mut admitted) => {
                        self.extend(&mut admitted.cx);
                        requests.push((id, method.into_owned(), RawParams::copied(params), admitted))
                    }
                    Err(e) => self.send_error(Some(id), e).await,
                },
                MessageKind::Notification { method, params } if allowed => self.on_notification(&method, params),
                MessageKind::Notification { .. } => {}
                response => self.on_response(response),
            }
        }
        if !requests.is_empty() {
            tokio::spawn(run_batch(self.router.clone(), self.outbox.clone(), requests));
        }
    }

    /// Gives a request's context what the connection knows: its caller (whose account it
    /// counts against) and, for telemetry, its transport.
    fn extend(&self, cx: &mut super::RequestContext) {
        #[cfg(feature = "otel")]
        if self.transport.network != "pipe" {
            cx.set_transport(self.transport.clone());
        }
        if let Some(caller) = &self.caller {
            cx.insert_extension(caller.clone()); // its account is the caller's
        }
    }

    fn admit(&self, method: &str, id: RequestId, params: Option<&RawValue>) -> Result<Admitted, ErrorObject> {
        era::admit(method, id, params, self.session.as_ref(), self.outbox.clone(), CancellationToken::new())
    }

    /// Decides whether a request may run (`initialize` is answered here).
    async fn admit_request(
        &mut self,
        id: RequestId,
        method: &str,
        params: Option<&RawValue>,
        line: &[u8],
    ) -> Option<Admission> {
        // The era is what `_meta` says, as the one reader of the params' head reads it.
        let head = match ParamsHead::read(params) {
            Ok(head) => head,
            Err(e) => {
                self.send_error(Some(id), e).await;
                return None;
            }
        };
        if method == "initialize" && !head.is_modern() {
            self.on_initialize(id, params).await;
            return None;
        }
        if self.inflight.contains(&id) {
            let e = ErrorObject::invalid_request(format!("request id {id} is already in use by a request in progress"));
            self.send_error(Some(id), e).await;
            return None;
        }
        let named = match head.named(method) {
            Some(std::borrow::Cow::Borrowed(name)) => RawParams::named_span(line, name),
            _ => None,
        };
        let token = CancellationToken::new();
        let session = self.session.as_ref();
        match era::admit_read(method, id.clone(), head.meta, session, self.outbox.clone(), token.clone()) {
            Ok(admitted) => {
                let span = RawParams::span(line, params);
                // The item's place is in the line: it holds only where the params stay there.
                let named = named.filter(|_| matches!(span, Span::At(_)));
                Some(Admission { id, method: method.to_owned(), span, named, admitted, token })
            }
            Err(e) => {
                self.send_error(Some(id), e).await;
                None
            }
        }
    }

    /// Runs an admitted request in its own task.
    fn run(&mut self, request: Admission, raw: RawParams) {
        let Admission { id, method, admitted: Admitted { mut cx, modern }, token, .. } = request;
        self.extend(&mut cx);
        let router = self.router.clone();
        let outbox = self.outbox.clone();
        let ticket = self.inflight.insert(id.clone(), token.clone());
        let mut work = Box::pin(async move {
            let outcome = tokio::select! {
                outcome = router.serve_request(&method, raw, &cx, modern) => Some(outcome),
                _ = token.cancelled() => None,
            };
            if let Some(result) = outcome {
                if !token.is_cancelled() {
                    send_response(&outbox, &id, result).await;
                }
            }
            ticket
        });
        // Most requests are answered at their first poll, here, without a task of their own; one
        // that waits moves to a task (polled again there with a real waker) and runs beside the
        // next requests.
        match crate::util::poll_once(&mut work) {
            Ok(Some(ticket)) => self.inflight.finish(&ticket),
            Ok(None) => {
                self.tasks.spawn(work);
            }
            // As a panicking task was: the request goes unanswered and the connection lives on
            // (a handler's own panic is already an error response; this is the library's).
            Err(_) => tracing::error!("a request's processing panicked"),
        }
    }

    async fn on_initialize(&mut self, id: RequestId, params: Option<&RawValue>) {
        if self.session.is_some() {
            return self.send_error(Some(id), ErrorObject::invalid_request("the session is already initialized")).await;
        }
        let caller = self.caller.clone();
        #[cfg(feature = "otel")]
        let transport = self.transport.clone();
        let extend = |cx: &mut crate::server::RequestContext| {
            if let Some(caller) = caller {
                cx.insert_extension(caller); // its account is the caller's
            }
            #[cfg(feature = "otel")]
            cx.set_transport(transport);
        };
        let opened = era::open_session(&self.router, id.clone(), params, self.outbox.clone(), extend).await;
        let era::Opened { session, result } = match opened {
            Ok(opened) => opened,
            Err(e) => return self.send_error(Some(id), e).await,
        };
        self.forwarder = Some(tokio::spawn(forward_changes(self.router.clone(), session.clone())));
        #[cfg(feature = "otel")]
        {
            self.session_clock = Some(crate::telemetry::Session::server(&session.version, &self.transport));
        }
        self.session = Some(session);
        send_response(&self.outbox, &id, Ok(result.into())).await;
    }

    fn on_notification(&mut self, method: &str, params: Option<&RawValue>) {
        #[cfg(feature = "otel")]
        {
            let version = self.session.as_ref().map(|s| &*s.version);
            super::traced::notification(method, params.map(RawValue::get), version, &self.transport);
        }
        if method == "notifications/roots/list_changed" {
            if let Some(session) = &self.session {
                session.roots_changed();
            }
            return;
        }
        if method != "notifications/cancelled" {
            return; // initialized, unknown: nothing to answer
        }
        let Some(Ok(params)) = params.map(|p| serde_json::from_str::<CancelledParams>(p.get())) else {
            return;
        };
        if let Some(id) = params.request_id {
            self.inflight.cancel(&id);
        }
    }

    /// A response from the client: it resolves the request of ours it names, or it is logged
    /// and dropped. It is never answered, however malformed.
    fn on_response(&mut self, response: MessageKind<'_>) {
        let (id, answer) = match response {
            MessageKind::Result { id, result } => {
                let budget = self.router.inner.config.value_budget;
                let answer = bounded::parse(result.get(), budget)
                    .map_err(|e| ErrorObject::invalid_request(format!("the client's response is {e}")));
                (id, answer)
            }
            MessageKind::Error { id: Some(id), error } => (id, Err(error)),
            MessageKind::Error { id: None, error } => {
                return tracing::warn!("dropped an error response without an id from the client: {error}");
            }
            MessageKind::InvalidResponse { id, reason } => {
                let error = ErrorObject::invalid_request(format!("the client's response is malformed: {reason}"));
                let resolved = id.is_some_and(|id| self.session.as_ref().is_some_and(|s| s.resolve(&id, Err(error))));
                let what = if resolved { "failed the request it answers" } else { "dropped it" };
                return tracing::warn!("the client sent a malformed response ({reason}): {what}");
            }
            MessageKind::Request { .. } | MessageKind::Notification { .. } => return,
        };
        let resolved = self.session.as_ref().is_some_and(|s| s.resolve(&id, answer));
        if !resolved {
            tracing::warn!("dropped a response for {id}, which matches no request of this server");
        }
    }

    async fn send_error(&self, id: Option<RequestId>, error: ErrorObject) {
        self.outbox.send(&JsonRpcError::new(id, error)).await;
    }
}

/// A request admitted to run, before its line moves into its task.
struct Admission {
    id: RequestId,
    method: String,
    span: Span,
    /// Where the item the request names (a tool, a prompt, a URI) is in the line, as the params'
    /// head read it, when the params stay in the line: the middleware and the telemetry ask for
    /// it without a second parse.
    named: Option<std::ops::Range<usize>>,
    admitted: Admitted,
    token: CancellationToken,
}

#[derive(Serialize)]
struct ResultResponse<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a Reply,
}

/// Writes the response to `id`.
pub(crate) async fn send_response(outbox: &Outbox, id: &RequestId, result: Result<Reply, ErrorObject>) {
    outbox.send_raw(response_bytes(id, result)).await;
}

/// The serialized response to `id`, written into a buffer sized for it up front (growing a
/// buffer for an 8 MiB answer by doubling would briefly hold two).
pub(crate) fn response_bytes(id: &RequestId, result: Result<Reply, ErrorObject>) -> Vec<u8> {
    let written = match result {
        Ok(result) => {
            let mut out = Vec::with_capacity(64 + result.estimated_len());
            serde_json::to_writer(&mut out, &ResultResponse { jsonrpc: "2.0", id, result: &result }).map(|()| out)
        }
        Err(error) => serde_json::to_vec(&JsonRpcError::new(Some(id.clone()), error)),
    };
    written.unwrap_or_default()
}

type BatchItem = (RequestId, String, RawParams, Admitted);

async fn run_batch(router: Router, outbox: Outbox, requests: Vec<BatchItem>) {
    let work = requests.into_iter().map(|(id, method, params, admitted)| {
        let router = router.clone();
        async move {
            // As any request: the scopes, the middleware layers (audit, rate limit...), its span.
            let result = router.serve_request(&method, params, &admitted.cx, admitted.modern).await;
            match result {
                Ok(result) => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(error) => serde_json::to_value(JsonRpcError::new(Some(id), error)).unwrap_or_default(),
            }
        }
    });
    let responses = futures_util::future::join_all(work).await;
    outbox.send(&responses).await;
}

/// Legacy sessions hear about list changes, and about updates of the resources they subscribed to.
pub(crate) async fn forward_changes(router: Router, session: Arc<Session>) {
    forward_changes_from(router.lists().changes(), None, session).await
}

/// [`forward_changes`] from this process's changes and, in a cluster, the other nodes' too.
pub(crate) async fn forward_changes_from(
    mut changes: tokio::sync::broadcast::Receiver<Change>,
    mut remote: Option<tokio::sync::broadcast::Receiver<Change>>,
    session: Arc<Session>,
) {
    loop {
        let from_remote = async {
            match remote.as_mut() {
                Some(remote) => remote.recv().await,
                None => std::future::pending().await,
            }
        };
        let change = tokio::select! {
            change = changes.recv() => change,
            change = from_remote => change,
            _ = session.outbox.closed() => return,
        };
        let change = match change {
            Ok(change) => change,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Change::Tools,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        if let Change::ResourceUpdated(uri) = &change {
            if !session.is_subscribed(uri) {
                continue;
            }
        }
        let message = serde_json::json!({"jsonrpc": "2.0", "method": change.method(), "params": change.params(None)});
        if !session.outbox.send(&message).await {
            return;
        }
    }
}

/// Drains the outbox into the writer, coalescing whatever is queued into one write. A message
/// whose text is streamed ([`splice`]) goes out piece by piece, after what was queued before it.
async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, mut rx: OutboxReceiver) -> std::io::Result<()> {
    const COALESCE_LIMIT: usize = 256 * 1024;
    let mut buffer = Vec::with_capacity(16 * 1024);
    while let Some(message) = rx.recv().await {
        let message = match splice::expand(message) {
            Expanded::Whole(message) => message,
            Expanded::Streamed(pieces) => {
                write_pieces(&mut writer, pieces).await?;
                continue;
            }
        };
        if message.len() >= COALESCE_LIMIT {
            // A huge message goes out from its own buffer, not copied into this one.
            writer.write_all(&message).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await?;
            let large = message.len() >= memory::LARGE;
            drop(message);
            if large {
                memory::release_freed_memory();
            }
            continue;
        }
        if !message.is_empty() {
            buffer.extend_from_slice(&message);
            buffer.push(b'\n');
        }
        let mut streamed = None;
        while buffer.len() < COALESCE_LIMIT {
            match rx.try_recv() {
                Ok(message) if message.is_empty() => {} // an HTTP-only "close the stream" marker
                Ok(message) => match splice::expand(message) {
                    Expanded::Whole(message) => {
                        buffer.extend_from_slice(&message);
                        buffer.push(b'\n');
                    }
                    Expanded::Streamed(pieces) => {
                        streamed = Some(pieces);
                        break;
                    }
                },
                Err(_) => break,
            }
        }
        if !buffer.is_empty() {
            writer.write_all(&buffer).await?;
            writer.flush().await?;
            buffer.clear();
        }
        if let Some(pieces) = streamed {
            write_pieces(&mut writer, pieces).await?;
        }
        if buffer.capacity() > COALESCE_LIMIT * 4 {
            buffer.shrink_to(16 * 1024);
        }
    }
    writer.shutdown().await.ok();
    Ok(())
}

/// Writes one streamed message, then its line's end.
async fn write_pieces<W: AsyncWrite + Unpin>(
    writer: &mut W,
    mut pieces: futures_util::stream::BoxStream<'static, bytes::Bytes>,
) -> std::io::Result<()> {
    use futures_util::StreamExt;
    while let Some(piece) = pieces.next().await {
        writer.write_all(&piece).await?;
    }
    writer.write_all(b"\n").await?;
    writer.flush().await
}
