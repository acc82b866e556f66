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

use super::inflight::{InFlight, Ticket};
use super::lines::{Frame, LineReader};
use super::outbox::{Outbox, OutboxReceiver};
use super::session::Session;
use crate::server::era::{self, Admitted};
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
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_line: 16 * 1024 * 1024,
            max_in_flight: 256,
            outbox_capacity: 1024,
            shutdown_grace: Duration::from_secs(10),
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
    let mut conn =
        Connection { router, outbox, session: None, inflight: InFlight::default(), tasks: JoinSet::new(), forwarder: None };
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
                        self.on_line(&line).await;
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

    async fn on_line(&mut self, line: &[u8]) {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        match first {
            None => {} // blank line: nothing to do
            Some(b'{') => self.on_object(line).await,
            Some(b'[') => self.on_batch(line).await,
            Some(_) => match serde_json::from_slice::<Value>(line) {
                Ok(_) => self.send_error(None, ErrorObject::invalid_request("a message must be a JSON object")).await,
                Err(e) => self.send_error(None, ErrorObject::parse_error(format!("Parse error: {e}"))).await,
            },
        }
    }

    async fn on_object(&mut self, line: &[u8]) {
        let envelope = match serde_json::from_slice::<Envelope>(line) {
            Ok(envelope) => envelope,
            Err(e) => return self.send_error(None, ErrorObject::parse_error(format!("Parse error: {e}"))).await,
        };
        match envelope.kind() {
            Ok(MessageKind::Request { id, method, params }) => self.on_request(id, &method, params).await,
            Ok(MessageKind::Notification { method, params }) => self.on_notification(&method, params),
            Ok(response) => self.on_response(response),
            Err(invalid) => self.send_error(invalid.id, ErrorObject::invalid_request(invalid.reason)).await,
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
                    Ok(admitted) => requests.push((id, method.into_owned(), params.map(ToOwned::to_owned), admitted)),
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

    fn admit(&self, method: &str, id: RequestId, params: Option<&RawValue>) -> Result<Admitted, ErrorObject> {
        era::admit(method, id, params, self.session.as_ref(), self.outbox.clone(), CancellationToken::new())
    }

    async fn on_request(&mut self, id: RequestId, method: &str, params: Option<&RawValue>) {
        if method == "initialize" && params.is_none_or(|p| !p.get().contains("io.modelcontextprotocol/protocolVersion"))
        {
            return self.on_initialize(id, params).await;
        }
        if self.inflight.contains(&id) {
            let e = ErrorObject::invalid_request(format!("request id {id} is already in use by a request in progress"));
            return self.send_error(Some(id), e).await;
        }
        let token = CancellationToken::new();
        let session = self.session.as_ref();
        let admitted = era::admit(method, id.clone(), params, session, self.outbox.clone(), token.clone());
        let Admitted { cx, modern } = match admitted {
            Ok(admitted) => admitted,
            Err(e) => return self.send_error(Some(id), e).await,
        };
        let router = self.router.clone();
        let outbox = self.outbox.clone();
        let method = method.to_owned();
        let params: Option<Box<RawValue>> = params.map(ToOwned::to_owned);
        let ticket = self.inflight.insert(id.clone(), token.clone());
        self.tasks.spawn(async move {
            let outcome = tokio::select! {
                outcome = router.handle_guarded(&method, params.as_deref(), &cx, modern) => Some(outcome),
                _ = token.cancelled() => None,
            };
            if let Some(result) = outcome {
                if !token.is_cancelled() {
                    send_response(&outbox, &id, result).await;
                }
            }
            ticket
        });
    }

    async fn on_initialize(&mut self, id: RequestId, params: Option<&RawValue>) {
        if self.session.is_some() {
            return self.send_error(Some(id), ErrorObject::invalid_request("the session is already initialized")).await;
        }
        let (params, result) = match era::initialize(&self.router, params) {
            Ok(ok) => ok,
            Err(e) => return self.send_error(Some(id), e).await,
        };
        let session = Arc::new(Session::new(
            result.protocol_version.clone(),
            params.capabilities,
            params.client_info,
            self.outbox.clone(),
        ));
        self.forwarder = Some(tokio::spawn(forward_changes(self.router.clone(), session.clone())));
        self.session = Some(session);
        send_response(
            &self.outbox,
            &id,
            serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string())),
        )
        .await;
    }

    fn on_notification(&mut self, method: &str, params: Option<&RawValue>) {
        if method != "notifications/cancelled" {
            return; // initialized, roots/list_changed, unknown: nothing to answer
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
            MessageKind::Result { id, result } => (id, Ok(parse_value(result))),
            MessageKind::Error { id: Some(id), error } => (id, Err(error)),
            MessageKind::Error { id: None, error } => {
                return tracing::warn!("dropped an error response without an id from the client: {error}");
            }
            MessageKind::InvalidResponse { id, reason } => {
                tracing::warn!("dropped a malformed response from the client ({reason})");
                let Some(id) = id else { return };
                (id, Err(ErrorObject::invalid_request(format!("the client's response is malformed: {reason}"))))
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

fn parse_value(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

#[derive(Serialize)]
struct ResultResponse<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a Value,
}

/// Writes the response to `id`.
pub(crate) async fn send_response(outbox: &Outbox, id: &RequestId, result: Result<Value, ErrorObject>) {
    outbox.send_raw(response_bytes(id, result)).await;
}

/// The serialized response to `id`.
pub(crate) fn response_bytes(id: &RequestId, result: Result<Value, ErrorObject>) -> Vec<u8> {
    let bytes = match result {
        Ok(result) => serde_json::to_vec(&ResultResponse { jsonrpc: "2.0", id, result: &result }),
        Err(error) => serde_json::to_vec(&JsonRpcError::new(Some(id.clone()), error)),
    };
    bytes.unwrap_or_default()
}

type BatchItem = (RequestId, String, Option<Box<RawValue>>, Admitted);

async fn run_batch(router: Router, outbox: Outbox, requests: Vec<BatchItem>) {
    let work = requests.into_iter().map(|(id, method, params, admitted)| {
        let router = router.clone();
        async move {
            let result = router.handle(&method, params.as_deref(), &admitted.cx, admitted.modern).await;
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
    let mut changes = router.changes();
    loop {
        let change = tokio::select! {
            change = changes.recv() => change,
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

/// Drains the outbox into the writer, coalescing whatever is queued into one write.
async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, mut rx: OutboxReceiver) -> std::io::Result<()> {
    const COALESCE_LIMIT: usize = 256 * 1024;
    let mut buffer = Vec::with_capacity(16 * 1024);
    while let Some(message) = rx.recv().await {
        if !message.is_empty() {
            buffer.extend_from_slice(&message);
            buffer.push(b'\n');
        }
        while buffer.len() < COALESCE_LIMIT {
            match rx.try_recv() {
                Ok(message) if message.is_empty() => {} // an HTTP-only "close the stream" marker
                Ok(message) => {
                    buffer.extend_from_slice(&message);
                    buffer.push(b'\n');
                }
                Err(_) => break,
            }
        }
        if buffer.is_empty() {
            continue;
        }
        writer.write_all(&buffer).await?;
        writer.flush().await?;
        buffer.clear();
        if buffer.capacity() > COALESCE_LIMIT * 4 {
            buffer.shrink_to(16 * 1024);
        }
    }
    writer.shutdown().await.ok();
    Ok(())
}
