//! One MCP message as the conventions describe it: an [`Operation`] is the SERVER span of a
//! message a server handles or the CLIENT span of one a client sends (a server's request to its
//! client is a CLIENT span of the server's, and the client's handling of it a SERVER span), and
//! the duration its histogram records when it ends.
//!
//! - name `{mcp.method.name} {target}`, the target being the tool (`tools/call`) or prompt
//!   (`prompts/get`) name; the method alone otherwise (a resource URI is not in names: the
//!   conventions keep it out by default, for cardinality);
//! - `mcp.method.name`; `jsonrpc.request.id` (a request's, as a string); `gen_ai.tool.name` and
//!   `gen_ai.operation.name = execute_tool` (`tools/call`), `gen_ai.prompt.name` (`prompts/get`),
//!   `mcp.resource.uri` (`resources/read`, `resources/subscribe`, `resources/unsubscribe`,
//!   `notifications/resources/updated`); `mcp.protocol.version`;
//! - `network.transport` (`pipe` for stdio, `tcp` for HTTP), `network.protocol.name` and
//!   `.version` over HTTP; `client.address`/`client.port` on a server, `server.address`/
//!   `server.port` on a client; `mcp.session.id` on a legacy HTTP session only (as the proposed
//!   text for 2026-07-28, semantic-conventions-genai#437, says it must not be set after it), and
//!   as a digest of the id: the id itself lets whoever holds it use the session;
//! - a JSON-RPC error: `error.type` and `rpc.response.status_code`, both the code as a string,
//!   status ERROR with the error's message; a tool's `isError` result: `error.type = tool_error`,
//!   status ERROR; a request abandoned before its answer (cancelled, its connection gone):
//!   `error.type = cancelled`, which the conventions leave to instrumentations;
//! - the 2026-07-28 methods (`server/discover`, `subscriptions/listen`, `tasks/*`...) as the
//!   open proposal for them names them (semantic-conventions-genai#437, PR #480): their own names
//!   in `mcp.method.name`.
//!
//! The histograms (`mcp.{server,client}.operation.duration`) take the same attributes but the
//! high-cardinality ones (ids, addresses, URIs, sessions); a method this library does not know
//! counts as `_OTHER`, and on a server a tool or prompt it does not have is left out (one it had
//! when it first labelled an operation stays a label: the server is asked only then), as is a
//! protocol version it does not speak, so that a peer cannot grow them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use mcp_types::RequestId;
use opentelemetry::trace::{Link, SpanContext, SpanId, SpanKind, TraceContextExt as _, TraceFlags};
use opentelemetry::{Context, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{span as proto, status::StatusCode};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator, SamplingDecision, SamplingResult};

use super::labels::{Failure, Labels, Recorder, Target};
use super::metrics::{self, Side};
use super::wire::{self, cut, fixed, key, Fixed, UnixNanos, Written};

/// Tool arguments and results longer than this (opted in) are not recorded.
const MAX_CONTENT: usize = 64 * 1024;

/// One message, as its span and metric describe it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Message<'a> {
    /// The JSON-RPC method.
    pub method: &'a str,
    /// What it names: the tool of `tools/call`, the prompt of `prompts/get`, the URI of
    /// `resources/read` (and subscriptions, and `notifications/resources/updated`).
    pub target: Option<&'a str>,
    /// A request's id; `None` for a notification.
    pub request_id: Option<&'a RequestId>,
    /// The protocol version the message was sent in.
    pub protocol_version: Option<&'a str>,
    /// Whether the target may label the histogram (a tool or prompt this server has, or a name
    /// this client chose); a peer's unknown names are left out of it. (This library's own
    /// server asks its router instead, the first time a name would label an operation.)
    pub known_target: bool,
    /// The params as JSON text, when tool arguments may be recorded (the opt-in).
    pub params: Option<&'a str>,
}

/// The other end of a connection.
#[derive(Debug, Clone)]
pub enum Peer {
    /// An address (a server's client).
    Socket(SocketAddr),
    /// A host name or address and a port (a client's server, as its URL names it).
    Host(Arc<str>, u16),
}

/// How messages travel, as the conventions' "Recording MCP transport" table says.
#[derive(Debug, Clone)]
pub struct Transport {
    /// `network.transport`: `pipe` (stdio) or `tcp` (HTTP).
    pub network: &'static str,
    /// `network.protocol.version` of HTTP (`1.1`, `2`); `None`: not HTTP.
    pub http_version: Option<&'static str>,
    /// The other end.
    pub peer: Option<Peer>,
    /// A legacy HTTP session's id (recorded as a digest).
    pub session: Option<Arc<str>>,
    /// The HTTP request's own trace context (its `traceparent` header): the parent of a server
    /// span whose message carries none, else linked from it.
    pub http_context: Option<SpanContext>,
}

impl Default for Transport {
    fn default() -> Self {
        Transport::pipe()
    }
}

impl Transport {
    /// stdio.
    pub fn pipe() -> Transport {
        Transport { network: "pipe", http_version: None, peer: None, session: None, http_context: None }
    }

    /// HTTP over TCP, version `version` (`"1.1"`).
    pub fn http(version: &'static str, peer: Option<Peer>) -> Transport {
        Transport { network: "tcp", http_version: Some(version), peer, session: None, http_context: None }
    }

    /// The HTTP version of a request, as `network.protocol.version` writes it.
    pub fn http_version_of(version: http::Version) -> &'static str {
        match version {
            http::Version::HTTP_09 => "0.9",
            http::Version::HTTP_10 => "1.0",
            http::Version::HTTP_2 => "2",
            http::Version::HTTP_3 => "3",
            _ => "1.1",
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy)]
pub enum Ending<'a> {
    /// A result (or, for a notification, sent or handled).
    Ok,
    /// A `tools/call` result with `isError: true`.
    ToolError,
    /// A JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message (the span status's description).
        message: &'a str,
    },
    /// No answer: cancelled, or its connection ended first.
    Cancelled,
}

/// A message's span (when spans are made) and its duration, from start to [`Operation::end`]; one
/// dropped before that ends as [`Ending::Cancelled`].
///
/// The span is recorded here rather than through the SDK's span: the sampler and the ids are the
/// SDK's, and the context the message is handled in carries the span's context as any span's
/// would; the span is written as it is recorded, as the protobuf message it is exported as (see
/// the `wire` module), and goes to the export queue as it ends. What the SDK's span adds (a span
/// builder, a locked span others may change, a copy at the end, an attribute list grown one at
/// a time, then its conversion to protobuf) was most of what a span cost a request, and nothing
/// here changes a span once begun but this operation. So the span of the context a handler runs
/// in is not a recording one: attributes or events set on it are not kept (nothing in this
/// library sets any).
///
/// The sampler is asked with the span's name, kind, parent and link, not its attributes. The
/// sampler is the one `OTEL_TRACES_SAMPLER` names (there is no other way to give one), and those
/// it can name (`always_on`, `always_off`, `traceidratio` and the `parentbased_` ones; the SDK
/// reads any other as `parentbased_always_on`) decide on the trace id and the parent alone; so
/// the attributes are written only for a span that is recorded.
#[must_use = "an operation is recorded when it ends"]
pub struct Operation {
    cx: Context,
    /// The span being recorded (sampled); `None` when none is. Boxed: an operation is moved
    /// several times as a request's handling is set up, and most of it would be this.
    span: Option<Box<Recorded>>,
    /// When it began: `None` when neither a span nor the histogram needs it.
    started: Option<Instant>,
    /// Where the duration is recorded: the histogram point of the operation's labels, found as
    /// it starts; `None` when nothing reads the histograms ([`metrics::recorded`]).
    recorder: Option<Recorder>,
    content: bool,
    ended: bool,
}

/// A sampled span being recorded: its name and attributes already written.
struct Recorded {
    context: SpanContext,
    parent: SpanId,
    parent_is_remote: bool,
    /// The name, kind, start time and attributes.
    written: Written,
    /// The HTTP request's own trace context, when the message carried another.
    link: Option<proto::Link>,
}

/// What a message's target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TargetKind {
    Tool,
    Prompt,
    Resource,
}

fn target_kind(method: &str) -> Option<TargetKind> {
    match method {
        "tools/call" => Some(TargetKind::Tool),
        "prompts/get" => Some(TargetKind::Prompt),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" | "notifications/resources/updated" => {
            Some(TargetKind::Resource)
        }
        _ => None,
    }
}

/// A method [`known_method`] knows: its name, and its `mcp.method.name` attribute written when
/// the program was built.
#[derive(Clone, Copy)]
pub(crate) struct KnownMethod {
    name: &'static str,
    attribute: Fixed,
}

/// The methods the conventions list, and those of the 2026-07-28 revision and its extensions
/// (named as the proposal for it names them): their names label histograms; any other is
/// `_OTHER` there.
pub(crate) fn known_method(method: &str) -> Option<KnownMethod> {
    // A `match` rather than a search of a list: the compiler compares lengths first.
    macro_rules! known {
        ($($name:literal,)*) => {
            match method {
                $($name => Some(KnownMethod { name: $name, attribute: fixed!(("mcp.method.name", $name)) }),)*
                _ => None,
            }
        };
    }
    known!(
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "resources/directory/read",
        "completion/complete",
        "logging/setLevel",
        "roots/list",
        "sampling/createMessage",
        "elicitation/create",
        "server/discover",
        "subscriptions/listen",
        "tasks/get",
        "tasks/list",
        "tasks/cancel",
        "tasks/result",
        "tasks/update",
        "skills/list",
        "skills/get",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/roots/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/subscriptions/acknowledged",
        "notifications/tasks/status",
        "notifications/tasks",
        "notifications/elicitation/complete",
    )
}

/// Whether a message's target may label its operation's histogram.
#[derive(Clone, Copy)]
pub(crate) enum Known<'a> {
    /// As [`Message::known_target`] says.
    AsTold,
    /// As this says of the target (a server's registry, asked whether it has the tool or
    /// prompt), asked only when the operation's label set with that target is not bound yet: a
    /// target that labelled an operation was known then, and stays a label (what was bound never
    /// grows). A target too long for a label is asked every time (its cut label may be another
    /// name's).
    Ask(&'a dyn Fn(&str) -> bool),
}

/// Where an operation records its duration: the histogram point of its labels (its method as
/// [`known_method`] says it, the tool or prompt it names when that may label the histogram, its
/// protocol version when this library knows it, and how it travels).
fn recorder(
    side: Side,
    message: &Message<'_>,
    method: Option<KnownMethod>,
    kind: Option<TargetKind>,
    transport: &Transport,
    known: Known<'_>,
) -> Recorder {
    let named = match (kind, message.target) {
        (Some(kind @ (TargetKind::Tool | TargetKind::Prompt)), Some(name)) => Some((kind, name, cut(name))),
        _ => None,
    };
    let mut labels = Labels {
        method: method.map_or("_OTHER", |m| m.name),
        target: None,
        // Only a version this library speaks: a refused `initialize` carries whatever its peer
        // asked for.
        protocol_version: message.protocol_version.filter(|v| mcp_types::ProtocolVersion::ALL.contains(v)),
        network: transport.network,
        http_version: transport.http_version,
        server: match (&transport.peer, side) {
            (Some(Peer::Host(host, port)), Side::Client) => Some((&**host, *port)),
            _ => None,
        },
    };
    if let Some((kind, name, label)) = &named {
        labels.target = Some(if *kind == TargetKind::Tool { Target::Tool(label) } else { Target::Prompt(label) });
        let labelled = match known {
            Known::AsTold => message.known_target.then(|| metrics::operation(side, &labels)),
            Known::Ask(has) => match label {
                std::borrow::Cow::Borrowed(_) => metrics::operation_if(side, &labels, || has(name)),
                std::borrow::Cow::Owned(_) => has(name).then(|| metrics::operation(side, &labels)),
            },
        };
        if let Some(recorder) = labelled {
            return recorder;
        }
        labels.target = None;
    }
    metrics::operation(side, &labels)
}

/// A span begun at `start`, its name written: `{method} {target}` for a tool or prompt, else the
/// method (`known` its [`known_method`]).
fn begin_span(
    method: &str,
    known: Option<KnownMethod>,
    kind: Option<TargetKind>,
    target: Option<&str>,
    span_kind: proto::SpanKind,
    start: UnixNanos,
) -> Written {
    match (kind, target) {
        (Some(TargetKind::Tool | TargetKind::Prompt), Some(target)) => {
            Written::new(method, Some(target), span_kind, start)
        }
        _ => Written::new(known.map_or(method, |m| m.name), None, span_kind, start),
    }
}

/// The wall-clock time of `at` (a moment of the monotonic clock): the wall clock read at an
/// anchor this thread took less than a second before, plus the monotonic time since. So a span's
/// start costs one wall-clock reading a second rather than one a span (the same thread's spans
/// then keep the monotonic clock's order and intervals), as OpenTelemetry Java's anchored clock
/// does; a step of the wall clock shows within a second. (On Linux NTP slews the monotonic clock
/// with the wall clock, so between two readings they keep together; where the monotonic clock is
/// a raw one, they drift apart by at most the rate NTP slews the wall clock, 0.5 ms a second.)
fn wall_time(at: Instant) -> UnixNanos {
    use std::cell::Cell;
    use std::time::{Duration, SystemTime};
    thread_local! {
        static ANCHOR: Cell<Option<(Instant, UnixNanos)>> = const { Cell::new(None) };
    }
    let anchored = |anchor: &Cell<Option<(Instant, UnixNanos)>>| {
        if let Some((instant, wall)) = anchor.get() {
            let since = at.checked_duration_since(instant).filter(|since| *since < Duration::from_secs(1));
            if let Some(since) = since {
                return wall.after(since);
            }
        }
        let wall = UnixNanos::from(SystemTime::now());
        anchor.set(Some((at, wall)));
        wall
    };
    ANCHOR.try_with(anchored).unwrap_or_else(|_| SystemTime::now().into())
}

/// The `mcp.session.id` of a legacy session: the first 16 bytes of the SHA-256 of its id, in hex.
fn session_digest(id: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(id.as_bytes())[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The `arguments` of a `tools/call`'s params, as JSON text.
fn tool_arguments(params: &str) -> Option<&str> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a serde_json::value::RawValue>,
    }
    let arguments = serde_json::from_str::<Params<'_>>(params).ok()?.arguments?.get();
    (arguments.len() <= MAX_CONTENT).then_some(arguments)
}

impl Operation {
    /// The SERVER span of a message the server received, its parent the trace context the
    /// message carried (else the HTTP request's own, which is otherwise linked).
    pub fn server(message: &Message<'_>, carrier: Option<&super::Carrier>, transport: &Transport) -> Operation {
        Operation::server_knowing(message, carrier, transport, Known::AsTold)
    }

    /// [`Operation::server`], its target's known-ness as `known` says.
    pub(crate) fn server_knowing(
        message: &Message<'_>,
        carrier: Option<&super::Carrier>,
        transport: &Transport,
        known: Known<'_>,
    ) -> Operation {
        let remote = carrier.map(|c| c.context());
        let remote = remote.filter(|cx| cx.span().span_context().is_valid());
        let (parent, link) = match (remote, &transport.http_context) {
            (Some(remote), link) => {
                let own = remote.span().span_context().clone();
                (remote, link.clone().filter(|l| l.span_id() != own.span_id()))
            }
            (None, Some(http)) => (Context::new().with_remote_span_context(http.clone()), None),
            (None, None) => (Context::new(), None),
        };
        Operation::start(Side::Server, message, transport, parent, link, known)
    }

    /// The CLIENT span of a message this process sends, a child of the span it runs in.
    pub fn client(message: &Message<'_>, transport: &Transport) -> Operation {
        Operation::start(Side::Client, message, transport, Context::current(), None, Known::AsTold)
    }

    fn start(
        side: Side,
        message: &Message<'_>,
        transport: &Transport,
        parent: Context,
        link: Option<SpanContext>,
        known_target: Known<'_>,
    ) -> Operation {
        let kind = target_kind(message.method);
        let known = known_method(message.method);
        let tracing = super::tracing(&parent);
        let recorder = metrics::recorded().then(|| recorder(side, message, known, kind, transport, known_target));
        // A span and the histogram's duration begin together: a span's start is the wall-clock
        // time of the same moment, and its end is that start plus the duration.
        let started = (tracing.is_some() || recorder.is_some()).then(Instant::now);
        let wall_start = tracing.zip(started).map(|(_, started)| wall_time(started));
        let mut op = Operation { cx: parent, span: None, started, recorder, content: false, ended: false };
        let (Some(tracing), Some(wall_start)) = (tracing, wall_start) else {
            // No span: the parent context is passed on, unsampled when the sampler dropped it.
            if let Some(dropped) = super::dropped_context(&op.cx) {
                op.cx = dropped;
            }
            return op;
        };
        let span_kind = if side == Side::Server { SpanKind::Server } else { SpanKind::Client };
        let written = begin_span(message.method, known, kind, message.target, span_kind.clone().into(), wall_start);
        let ids = RandomIdGenerator::default();
        let (trace_id, parent_id, parent_is_remote, parent_flags) = {
            let parent_span = op.cx.span();
            let parent = parent_span.span_context();
            match parent.is_valid() {
                true => (parent.trace_id(), parent.span_id(), parent.is_remote(), parent.trace_flags()),
                false => (ids.new_trace_id(), SpanId::INVALID, false, TraceFlags::default()),
            }
        };
        let links: Vec<Link> = link.into_iter().map(Link::with_context).collect();
        let sampled = match tracing.roots.decide(&op.cx) {
            // The sampler's decision, as the SDK's samplers make it (their result holds the
            // parent's `tracestate` and no attribute).
            Some(keep) => SamplingResult {
                decision: if keep { SamplingDecision::RecordAndSample } else { SamplingDecision::Drop },
                attributes: Vec::new(),
                trace_state: op.cx.span().span_context().trace_state().clone(),
            },
            None => tracing.sampler.should_sample(Some(&op.cx), trace_id, written.name(), &span_kind, &[], &links),
        };
        // As the SDK's tracer: the parent's flags, sampled or not by the decision (`RecordOnly`
        // is not sampled, and only sampled spans are exported).
        let flags = parent_flags.with_sampled(matches!(sampled.decision, SamplingDecision::RecordAndSample));
        let context = SpanContext::new(trace_id, ids.new_span_id(), flags, false, sampled.trace_state);
        op.cx = op.cx.with_remote_span_context(context.clone());
        if flags.is_sampled() {
            let mut written = written;
            write_attributes(&mut written, side, message, known, kind, transport);
            for attribute in &sampled.attributes {
                written.attribute(attribute);
            }
            op.content = kind == Some(TargetKind::Tool) && super::config::capture_content();
            if op.content {
                if let Some(arguments) = message.params.and_then(tool_arguments) {
                    written.content(key!("gen_ai.tool.call.arguments"), arguments);
                }
            }
            op.span = Some(Box::new(Recorded {
                context,
                parent: parent_id,
                parent_is_remote,
                written,
                link: links.into_iter().next().map(proto::Link::from),
            }));
        }
        op
    }

    /// The context the message's handling (or sending) runs in: its span, and the baggage it
    /// carried. A client sending from inside it makes its own span a child of this one.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Writes the operation's trace context into the `_meta` of the message it sends.
    pub fn inject(&self, meta: &mut serde_json::Map<String, serde_json::Value>) {
        super::carrier::inject(&self.cx, meta);
    }

    /// Whether the tool's result should be given to [`Operation::record_result`] (the opt-in
    /// is on, and the span records).
    pub fn wants_result(&self) -> bool {
        self.content
    }

    /// Records a tool call's result (JSON text), when [`Operation::wants_result`].
    pub fn record_result(&mut self, result: &str) {
        if let (true, true, Some(span)) = (self.content, result.len() <= MAX_CONTENT, &mut self.span) {
            span.written.content(key!("gen_ai.tool.call.result"), result);
        }
    }

    /// Ends the span and records the duration.
    pub fn end(mut self, ending: Ending<'_>) {
        self.finish(ending);
    }

    fn finish(&mut self, ending: Ending<'_>) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        // No start taken: neither a span nor the histogram is recorded.
        let Some(started) = self.started else { return };
        let elapsed = started.elapsed();
        if let Some(span) = self.span.take() {
            super::export::enqueue(|| span.end(&ending, elapsed));
        }
        if let Some(recorder) = &self.recorder {
            recorder.record(elapsed.as_secs_f64(), failure(&ending));
        }
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        self.finish(Ending::Cancelled);
    }
}

impl Recorded {
    /// The span ended so, `elapsed` after it began, as it waits for export.
    fn end(mut self, ending: &Ending<'_>, elapsed: std::time::Duration) -> wire::Queued {
        let written = &mut self.written;
        match ending {
            Ending::Ok => {}
            Ending::ToolError => written.fixed(fixed!(("error.type", "tool_error"))),
            Ending::Cancelled => written.fixed(fixed!(("error.type", "cancelled"))),
            Ending::Error { code, .. } => wire::int_text(*code, |code| {
                written.ascii(key!("error.type"), code);
                written.ascii(key!("rpc.response.status_code"), code);
            }),
        }
        let (status, message) = match ending {
            Ending::Error { message, .. } => (StatusCode::Error, cut(message)),
            Ending::ToolError | Ending::Cancelled => (StatusCode::Error, "".into()),
            Ending::Ok => (StatusCode::Unset, "".into()),
        };
        let frame = wire::Frame {
            context: &self.context,
            parent: self.parent,
            parent_is_remote: self.parent_is_remote,
            end: self.written.start().after(elapsed),
            link: self.link.as_ref(),
            status,
            status_message: &message,
        };
        wire::finish(self.written, &frame)
    }
}

/// How an ending labels the histogram.
fn failure(ending: &Ending<'_>) -> Option<Failure> {
    match ending {
        Ending::Ok => None,
        Ending::ToolError => Some(Failure::ToolError),
        Ending::Cancelled => Some(Failure::Cancelled),
        Ending::Error { code, .. } => Some(Failure::Code(*code)),
    }
}

/// Writes a span's attributes (those known when it starts).
fn write_attributes(
    written: &mut Written,
    side: Side,
    message: &Message<'_>,
    known: Option<KnownMethod>,
    kind: Option<TargetKind>,
    transport: &Transport,
) {
    match known {
        Some(known) => written.fixed(known.attribute),
        None => written.text(key!("mcp.method.name"), message.method),
    }
    match message.request_id {
        Some(RequestId::String(id)) => written.text(key!("jsonrpc.request.id"), id),
        Some(RequestId::Number(id)) => wire::int_text(*id, |id| written.ascii(key!("jsonrpc.request.id"), id)),
        None => {}
    }
    match (kind, message.target) {
        (Some(TargetKind::Tool), Some(name)) => {
            written.text(key!("gen_ai.tool.name"), name);
            written.fixed(EXECUTE_TOOL);
        }
        (Some(TargetKind::Tool), None) => written.fixed(EXECUTE_TOOL),
        (Some(TargetKind::Prompt), Some(name)) => written.text(key!("gen_ai.prompt.name"), name),
        (Some(TargetKind::Resource), Some(uri)) => written.text(key!("mcp.resource.uri"), uri),
        _ => {}
    }
    if let Some(version) = message.protocol_version {
        match protocol_version_attribute(version) {
            Some(attribute) => written.fixed(attribute),
            None => written.text(key!("mcp.protocol.version"), version),
        }
    }
    match network_attributes(transport) {
        Some(attributes) => written.fixed(attributes),
        None => {
            written.text(key!("network.transport"), transport.network);
            if let Some(version) = transport.http_version {
                written.text(key!("network.protocol.name"), "http");
                written.text(key!("network.protocol.version"), version);
            }
        }
    }
    let (address, port) = match side {
        Side::Server => (key!("client.address"), key!("client.port")),
        Side::Client => (key!("server.address"), key!("server.port")),
    };
    match &transport.peer {
        Some(Peer::Socket(socket)) => {
            wire::ip_text(socket.ip(), |ip| written.ascii(address, ip));
            written.int(port, i64::from(socket.port()));
        }
        Some(Peer::Host(host, number)) => {
            written.text(address, host);
            written.int(port, i64::from(*number));
        }
        None => {}
    }
    let legacy = message.protocol_version.is_none_or(|v| v < "2026-07-28");
    if let (Some(session), true) = (&transport.session, legacy) {
        written.text(key!("mcp.session.id"), &session_digest(session));
    }
}

/// `gen_ai.operation.name` of a `tools/call`.
const EXECUTE_TOOL: Fixed = fixed!(("gen_ai.operation.name", "execute_tool"));

/// `mcp.protocol.version` of a version this library speaks.
fn protocol_version_attribute(version: &str) -> Option<Fixed> {
    use mcp_types::ProtocolVersion as V;
    macro_rules! versions {
        ($($version:path,)*) => {
            match version {
                $($version => Some(fixed!(("mcp.protocol.version", $version))),)*
                _ => None,
            }
        };
    }
    versions!(V::V2024_11_05, V::V2025_03_26, V::V2025_06_18, V::V2025_11_25, V::V2026_07_28,)
}

/// The `network.*` attributes of the transports this library's servers and clients mostly make
/// (stdio, HTTP/1.1, 2 and 1.0); `None` for another, written as text.
fn network_attributes(transport: &Transport) -> Option<Fixed> {
    const TRANSPORT: &str = "network.transport";
    const PROTOCOL: &str = "network.protocol.name";
    const VERSION: &str = "network.protocol.version";
    Some(match (transport.network, transport.http_version) {
        ("pipe", None) => fixed!((TRANSPORT, "pipe")),
        ("tcp", Some("1.1")) => fixed!((TRANSPORT, "tcp"), (PROTOCOL, "http"), (VERSION, "1.1")),
        ("tcp", Some("2")) => fixed!((TRANSPORT, "tcp"), (PROTOCOL, "http"), (VERSION, "2")),
        ("tcp", Some("1.0")) => fixed!((TRANSPORT, "tcp"), (PROTOCOL, "http"), (VERSION, "1.0")),
        _ => return None,
    })
}

/// A legacy session's (or a client connection's) lifetime, recorded as
/// `mcp.{server,client}.session.duration` when dropped.
pub struct Session {
    side: Side,
    started: Instant,
    attributes: Vec<KeyValue>,
}

impl Session {
    /// A server's session, opened now in `protocol_version` over `transport`.
    pub fn server(protocol_version: &str, transport: &Transport) -> Session {
        Session::start(Side::Server, protocol_version, transport)
    }

    /// A client's connection, opened now.
    pub fn client(protocol_version: &str, transport: &Transport) -> Session {
        Session::start(Side::Client, protocol_version, transport)
    }

    fn start(side: Side, protocol_version: &str, transport: &Transport) -> Session {
        let mut attributes = vec![
            KeyValue::new("mcp.protocol.version", cut(protocol_version).into_owned()),
            KeyValue::new("network.transport", transport.network),
        ];
        if let Some(version) = transport.http_version {
            attributes.push(KeyValue::new("network.protocol.name", "http"));
            attributes.push(KeyValue::new("network.protocol.version", version));
        }
        if let (Side::Client, Some(Peer::Host(host, port))) = (side, &transport.peer) {
            attributes.push(KeyValue::new("server.address", host.to_string()));
            attributes.push(KeyValue::new("server.port", i64::from(*port)));
        }
        Session { side, started: Instant::now(), attributes }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        metrics::session(self.side, self.started.elapsed().as_secs_f64(), &self.attributes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spans_wall_clock_start_is_an_anchors_plus_the_monotonic_time_since() {
        use std::time::{Duration, SystemTime};
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap();
        let (now, before) = (Instant::now(), UnixNanos::from(SystemTime::now()));
        let first = wall_time(now);
        assert!(first.0.abs_diff(before.0) < nanos(Duration::from_millis(100)), "the anchor is a wall-clock reading");
        let later = wall_time(now + Duration::from_millis(300));
        assert_eq!(later.0 - first.0, nanos(Duration::from_millis(300)), "the same anchor");
        // Two seconds on, a new anchor: the wall clock read again (it has not moved two seconds).
        let far = wall_time(now + Duration::from_secs(2));
        assert!(far < first.after(Duration::from_secs(1)), "read again: {far:?} against {first:?}");
        let after = wall_time(now + Duration::from_secs(2) + Duration::from_millis(10));
        assert_eq!(after.0 - far.0, nanos(Duration::from_millis(10)), "the new anchor");
    }

    #[test]
    fn names_and_metric_labels_follow_the_conventions() {
        let name = |method, target| {
            let kind = proto::SpanKind::Server;
            let start = std::time::SystemTime::now().into();
            begin_span(method, known_method(method), target_kind(method), target, kind, start).name().to_owned()
        };
        assert_eq!(name("tools/call", Some("echo")), "tools/call echo");
        assert_eq!(name("prompts/get", Some("greet")), "prompts/get greet");
        assert_eq!(name("resources/read", Some("file:///a")), "resources/read");
        assert_eq!(name("server/discover", None), "server/discover");
        assert!(known_method("x/unheard-of").is_none());
        assert_eq!(name("x/unheard-of", None), "x/unheard-of");
        assert_eq!(session_digest("abc").len(), 32);
        let long = "é".repeat(200);
        assert!(cut(&long).len() <= wire::MAX_TEXT + '…'.len_utf8());
    }

    #[test]
    fn attributes_written_when_the_program_is_built_are_those_written_as_text() {
        let start = UnixNanos::from(std::time::SystemTime::now());
        let written = |write: &dyn Fn(&mut Written)| {
            let mut written = Written::new("n", None, proto::SpanKind::Server, start);
            write(&mut written);
            written.bytes().to_vec()
        };
        for method in ["tools/call", "initialize", "notifications/subscriptions/acknowledged"] {
            let known = known_method(method).unwrap();
            assert_eq!(known.name, method);
            let fixed = written(&|w| w.fixed(known.attribute));
            assert_eq!(fixed, written(&|w| w.text(key!("mcp.method.name"), method)));
        }
        for version in mcp_types::ProtocolVersion::ALL {
            let fixed = written(&|w| w.fixed(protocol_version_attribute(version).unwrap()));
            assert_eq!(fixed, written(&|w| w.text(key!("mcp.protocol.version"), version)));
        }
        let transports = ["1.1", "2", "1.0"].map(|version| Transport::http(version, None));
        for transport in transports.iter().chain([&Transport::pipe()]) {
            let fixed = written(&|w| w.fixed(network_attributes(transport).unwrap()));
            let text = written(&|w| {
                w.text(key!("network.transport"), transport.network);
                if let Some(version) = transport.http_version {
                    w.text(key!("network.protocol.name"), "http");
                    w.text(key!("network.protocol.version"), version);
                }
            });
            assert_eq!(fixed, text);
        }
        assert!(network_attributes(&Transport { network: "udp", ..Transport::pipe() }).is_none());
    }

    #[test]
    fn a_server_asks_whether_it_has_a_tool_only_until_the_tool_labels_an_operation() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let asked = AtomicUsize::new(0);
        let has = |name: &str| {
            asked.fetch_add(1, Ordering::Relaxed);
            name.starts_with("known-")
        };
        let bound = |labels: &Labels<'_>| metrics::operation_if(Side::Server, labels, || false).is_some();
        let labels = |tool| Labels {
            method: "tools/call",
            target: Some(Target::Tool(tool)),
            protocol_version: None,
            network: "pipe",
            http_version: None,
            server: None,
        };
        let call = |tool, known| {
            let message = Message { method: "tools/call", target: Some(tool), ..Message::default() };
            let kind = target_kind(message.method);
            drop(recorder(Side::Server, &message, known_method("tools/call"), kind, &Transport::pipe(), known));
        };
        for _ in 0..3 {
            call("known-spans-test", Known::Ask(&has));
        }
        assert_eq!(asked.load(Ordering::Relaxed), 1, "asked once, then found bound");
        assert!(bound(&labels("known-spans-test")));
        for _ in 0..3 {
            call("unknown-spans-test", Known::Ask(&has));
        }
        assert_eq!(asked.load(Ordering::Relaxed), 4, "a name the server lacks is asked about every time");
        assert!(!bound(&labels("unknown-spans-test")), "and never labels");
        let long = format!("known-{}", "x".repeat(wire::MAX_TEXT));
        call(&long, Known::Ask(&has));
        call(&long, Known::Ask(&has));
        assert_eq!(asked.load(Ordering::Relaxed), 6, "a name too long for a label is asked about every time");
        call("known-told-not", Known::AsTold);
        assert!(!bound(&labels("known-told-not")), "known_target: false never labels");
        assert_eq!(asked.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn only_the_arguments_are_taken_from_the_params() {
        assert_eq!(tool_arguments(r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{}}"#), Some(r#"{"text":"hi"}"#));
        assert_eq!(tool_arguments(r#"{"name":"echo"}"#), None);
    }
}
