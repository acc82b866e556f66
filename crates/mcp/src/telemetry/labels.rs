//! The labels of an operation's duration (`mcp.{server,client}.operation.duration`) and the
//! histogram points already bound to each set of them.
//!
//! Recording through the SDK's plain `Histogram::record` sorts the attributes, hashes them with
//! SipHash and looks them up under a lock on every message: with sampling off that was most of
//! what telemetry cost a call. Here the labels an operation has when it starts (all but how it
//! ended) are hashed once, cheaply ([`WordHasher`]), and found in a map of [`Point`]s as it
//! starts; the operation keeps its point (a `&'static` one), not its labels, and as it ends records into
//! the SDK point bound for how it ended (succeeded, or each `error.type`), bound the first time
//! that ending is seen, so that a label set exports only the series it measured. The attribute
//! lists are built when a point is bound. At most [`MAX_BOUND`] SDK points are bound per
//! histogram, label sets and endings together (the labels are low-cardinality by design: a
//! peer's unknown tool names are never labels, but its error codes are); past that a measurement
//! takes the plain path, building its attributes each time, which the SDK's own cardinality
//! limit bounds.
//!
//! Each thread also keeps the few points it found in the map last ([`Recent`]): a message is
//! most often labelled as one of the last few were (the same tools, over the same transport),
//! and a point found there costs no hash, no lock and no probe of the map.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher as _, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use opentelemetry::metrics::{BoundHistogram, Histogram};
use opentelemetry::KeyValue;

/// The most SDK points kept bound per histogram (under the SDK's cardinality limit, 2000).
const MAX_BOUND: usize = 1024;

/// What an operation's target is, when it labels the histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target<'a> {
    Tool(&'a str),
    Prompt(&'a str),
}

/// How an operation ended, as `error.type` (and `rpc.response.status_code`) say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    ToolError,
    Cancelled,
    Code(i64),
}

/// The labels an operation has when it starts, borrowed from its message and transport.
#[derive(Debug, Clone, Copy, Eq)]
pub(crate) struct Labels<'a> {
    pub method: &'static str,
    pub target: Option<Target<'a>>,
    pub protocol_version: Option<&'a str>,
    pub network: &'static str,
    pub http_version: Option<&'static str>,
    pub server: Option<(&'a str, u16)>,
}

/// Texts compared: most labels are the same `&'static str` on both sides (a method's name, a
/// transport's), found equal by where they are before their bytes are compared.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || a == b)
}

fn same_option(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// As `PartialEq` compares them: each text by its bytes, each absence and each kind of target
/// apart (written beside it, so that the two change together).
impl std::hash::Hash for Labels<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.method.hash(state);
        match self.target {
            None => state.write_u8(0),
            Some(Target::Tool(name)) => (1u8, name).hash(state),
            Some(Target::Prompt(name)) => (2u8, name).hash(state),
        }
        self.protocol_version.hash(state);
        self.network.hash(state);
        self.http_version.hash(state);
        self.server.hash(state);
    }
}

impl PartialEq for Labels<'_> {
    fn eq(&self, other: &Self) -> bool {
        // The labels that tell most sets apart cheaply first: the method and the transport are
        // static texts, most often found the same (or not) by where they are.
        same(self.method, other.method)
            && same(self.network, other.network)
            && same_option(self.http_version, other.http_version)
            && same_target(self.target, other.target)
            && same_option(self.protocol_version, other.protocol_version)
            && same_server(self.server, other.server)
    }
}

fn same_target(a: Option<Target<'_>>, b: Option<Target<'_>>) -> bool {
    match (a, b) {
        (Some(Target::Tool(a)), Some(Target::Tool(b))) | (Some(Target::Prompt(a)), Some(Target::Prompt(b))) => {
            same(a, b)
        }
        (a, b) => a.is_none() && b.is_none(),
    }
}

fn same_server(a: Option<(&str, u16)>, b: Option<(&str, u16)>) -> bool {
    match (a, b) {
        (Some((a, port)), Some((b, other_port))) => port == other_port && same(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

impl Labels<'_> {
    /// The histogram's attributes for an operation so labelled that ended so, as the
    /// conventions name them.
    pub(crate) fn attributes(&self, failure: Option<Failure>) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(9);
        attributes.push(KeyValue::new("mcp.method.name", self.method));
        match self.target {
            Some(Target::Tool(name)) => {
                attributes.push(KeyValue::new("gen_ai.tool.name", name.to_owned()));
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            Some(Target::Prompt(name)) => attributes.push(KeyValue::new("gen_ai.prompt.name", name.to_owned())),
            None if self.method == "tools/call" => {
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"))
            }
            None => {}
        }
        if let Some(version) = self.protocol_version {
            attributes.push(KeyValue::new("mcp.protocol.version", version.to_owned()));
        }
        attributes.push(KeyValue::new("network.transport", self.network));
        if let Some(version) = self.http_version {
            attributes.push(KeyValue::new("network.protocol.name", "http"));
            attributes.push(KeyValue::new("network.protocol.version", version));
        }
        if let Some((host, port)) = self.server {
            attributes.push(KeyValue::new("server.address", host.to_owned()));
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
        match failure {
            None => {}
            Some(Failure::ToolError) => attributes.push(KeyValue::new("error.type", "tool_error")),
            Some(Failure::Cancelled) => attributes.push(KeyValue::new("error.type", "cancelled")),
            Some(Failure::Code(code)) => {
                attributes.push(KeyValue::new("error.type", code.to_string()));
                attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
            }
        }
        attributes
    }

    fn hash(&self) -> u64 {
        BuildHasherDefault::<WordHasher>::default().hash_one(self)
    }

    fn to_owned_labels(self) -> OwnedLabels {
        let own = |s: &str| Box::<str>::from(s);
        OwnedLabels {
            method: self.method,
            target: self.target.map(|t| match t {
                Target::Tool(name) => (true, own(name)),
                Target::Prompt(name) => (false, own(name)),
            }),
            protocol_version: self.protocol_version.map(own),
            network: self.network,
            http_version: self.http_version,
            server: self.server.map(|(host, port)| (own(host), port)),
        }
    }
}

/// A label set as a [`Point`] keeps it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OwnedLabels {
    method: &'static str,
    target: Option<(bool, Box<str>)>,
    protocol_version: Option<Box<str>>,
    network: &'static str,
    http_version: Option<&'static str>,
    server: Option<(Box<str>, u16)>,
}

impl OwnedLabels {
    /// Records `seconds` in `histogram` for an operation so labelled that ended so, the plain
    /// way (its attributes built for it, the SDK finding its point).
    fn record(&self, histogram: &Histogram<f64>, seconds: f64, failure: Option<Failure>) {
        histogram.record(seconds, &self.borrowed().attributes(failure));
    }

    fn borrowed(&self) -> Labels<'_> {
        Labels {
            method: self.method,
            target: self
                .target
                .as_ref()
                .map(|(tool, name)| if *tool { Target::Tool(name) } else { Target::Prompt(name) }),
            protocol_version: self.protocol_version.as_deref(),
            network: self.network,
            http_version: self.http_version,
            server: self.server.as_ref().map(|(host, port)| (&**host, *port)),
        }
    }
}

/// A label set's hash: a word at a time, one multiply per word (the scheme of rustc's
/// `FxHasher`), where SipHash or a byte-at-a-time hash spent a hundred instructions or more. It is
/// not keyed: the map it serves holds at most [`MAX_BOUND`] label sets, so colliding ones cost at
/// most that many comparisons.
#[derive(Default)]
struct WordHasher(u64);

/// The multiplier of [`WordHasher`] (rustc's).
const MULTIPLIER: u64 = 0xf135_7aea_2e62_a9c5;

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Whole words, then the last one read again where it overlaps the words before (a short
        // text: two halves that may overlap, or its first, middle and last bytes), so that no
        // byte is copied. Texts that differ only in their length hash apart by the length.
        let len = bytes.len();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
        let half = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default()));
        let last = match len {
            0 => 0,
            1..=3 => u64::from(bytes[0]) | u64::from(bytes[len / 2]) << 8 | u64::from(bytes[len - 1]) << 16,
            4..=7 => half(0) | half(len - 4) << 32,
            _ => {
                let mut at = 0;
                while at + 8 <= len {
                    self.add(word(at));
                    at += 8;
                }
                if at == len {
                    return self.add(len as u64);
                }
                word(len - 8)
            }
        };
        self.add(last ^ (len as u64) << 56);
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        // The multiply leaves its best bits high; the map takes its buckets from the low ones.
        self.0.rotate_left(26)
    }
}

/// A `u64` key is its own hash.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// How many SDK points a histogram has bound, shared by its label sets.
#[derive(Default)]
struct Budget(AtomicUsize);

impl Budget {
    /// Takes one point from the budget; `false` when none is left.
    fn take(&self) -> bool {
        self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < MAX_BOUND).then_some(n + 1)).is_ok()
    }

    fn spent(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= MAX_BOUND
    }
}

/// The points of one label set: an SDK point bound for each way its operations ended, the first
/// time one ends so.
pub(crate) struct Point {
    histogram: Histogram<f64>,
    budget: Arc<Budget>,
    labels: OwnedLabels,
    succeeded: OnceLock<Option<BoundHistogram<f64>>>,
    failed: RwLock<Vec<(Failure, BoundHistogram<f64>)>>,
}

impl Point {
    /// Records `seconds` for an operation of these labels that ended so (`None`: it succeeded).
    fn record(&self, seconds: f64, failure: Option<Failure>) {
        let point = match failure {
            None => self.succeeded.get_or_init(|| self.bind(None)).as_ref(),
            Some(failure) if self.record_failed(failure, seconds) => return,
            Some(failure) => match self.bind_failure(failure) {
                Some(point) => return point.record(seconds),
                None => None,
            },
        };
        match point {
            Some(point) => point.record(seconds),
            None => self.labels.record(&self.histogram, seconds, failure),
        }
    }

    /// The SDK point of these labels ended so, bound now; `None` when the budget is spent.
    fn bind(&self, failure: Option<Failure>) -> Option<BoundHistogram<f64>> {
        self.budget.take().then(|| self.histogram.bind(&self.labels.borrowed().attributes(failure)))
    }

    /// Records into the point bound for `failure`; `false` when there is none yet.
    fn record_failed(&self, failure: Failure, seconds: f64) -> bool {
        let Ok(failed) = self.failed.read() else { return false };
        let point = failed.iter().find(|(f, _)| *f == failure);
        point.inspect(|(_, point)| point.record(seconds)).is_some()
    }

    /// The point of `failure`, bound now; `None` when the budget is spent.
    fn bind_failure(&self, failure: Failure) -> Option<BoundHistogram<f64>> {
        if self.budget.spent() {
            return None;
        }
        let mut failed = self.failed.write().ok()?;
        if let Some((_, point)) = failed.iter().find(|(f, _)| *f == failure) {
            return Some(point.clone());
        }
        let point = self.bind(Some(failure))?;
        failed.push((failure, point.clone()));
        Some(point)
    }
}

/// Where an operation records its duration as it ends: its label set's points, or (when the
/// budget is spent) the plain histogram with its labels.
pub(crate) enum Recorder {
    Bound(&'static Point),
    Plain(Histogram<f64>, Box<OwnedLabels>),
}

impl Recorder {
    /// Records `seconds` for an operation that ended so (`None`: it succeeded).
    pub(crate) fn record(&self, seconds: f64, failure: Option<Failure>) {
        match self {
            Recorder::Bound(point) => point.record(seconds, failure),
            Recorder::Plain(histogram, labels) => labels.record(histogram, seconds, failure),
        }
    }
}

type Bound = Vec<&'static Point>;

/// The points a thread found in the map last, whichever histogram they belong to (told apart
/// by its [`BoundPoints::id`]): first in, first out, looked at newest first.
struct Recent {
    points: [Option<(u64, &'static Point)>; RECENT],
    next: usize,
}

/// How many points each thread keeps at hand.
const RECENT: usize = 4;

thread_local! {
    static RECENT_POINTS: RefCell<Recent> = const { RefCell::new(Recent { points: [const { None }; RECENT], next: 0 }) };
}

impl Recent {
    /// The point of `labels` in the histogram `owner`, if this thread keeps it.
    fn find(owner: u64, labels: &Labels<'_>) -> Option<&'static Point> {
        let found = RECENT_POINTS.try_with(|recent| {
            let recent = recent.try_borrow().ok()?;
            // The one kept last first.
            let newest_first = (1..=RECENT).map(|back| (recent.next + RECENT - back) % RECENT);
            let mut points = newest_first.filter_map(|at| recent.points[at].as_ref());
            points.find(|(id, point)| *id == owner && point.labels.borrowed() == *labels).map(|(_, point)| *point)
        });
        found.ok().flatten()
    }

    /// Keeps `point` of the histogram `owner` at hand, in place of the one kept longest.
    fn keep(owner: u64, point: &'static Point) {
        let _ = RECENT_POINTS.try_with(|recent| {
            if let Ok(mut recent) = recent.try_borrow_mut() {
                let next = recent.next;
                recent.points[next] = Some((owner, point));
                recent.next = (next + 1) % RECENT;
            }
        });
    }
}

/// A histogram and the points bound so far, by the hash of their labels.
pub(crate) struct BoundPoints {
    /// Tells this histogram's points apart from others' in a thread's [`Recent`] ones.
    id: u64,
    histogram: Histogram<f64>,
    bound: RwLock<HashMap<u64, Bound, BuildHasherDefault<Identity>>>,
    /// How many label sets the map holds (changed under its write lock): at most [`MAX_BOUND`].
    sets: AtomicUsize,
    /// The SDK points bound, label sets and endings together.
    budget: Arc<Budget>,
}

impl BoundPoints {
    pub(crate) fn new(histogram: Histogram<f64>) -> BoundPoints {
        static IDS: AtomicU64 = AtomicU64::new(0);
        BoundPoints {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            histogram,
            bound: RwLock::default(),
            sets: AtomicUsize::new(0),
            budget: Arc::default(),
        }
    }

    /// Where an operation labelled `labels` will record its duration.
    pub(crate) fn recorder(&self, labels: &Labels<'_>) -> Recorder {
        self.recorder_if(labels, || true).unwrap_or_else(|| self.plain(labels))
    }

    /// The plain path for `labels`, when the map or the budget is full.
    fn plain(&self, labels: &Labels<'_>) -> Recorder {
        Recorder::Plain(self.histogram.clone(), Box::new(labels.to_owned_labels()))
    }

    /// [`BoundPoints::recorder`] when the points of `labels` are bound already or `may_bind`
    /// says they may be (asked only then); `None`, and nothing bound, otherwise.
    pub(crate) fn recorder_if(&self, labels: &Labels<'_>, may_bind: impl FnOnce() -> bool) -> Option<Recorder> {
        if let Some(point) = Recent::find(self.id, labels) {
            return Some(Recorder::Bound(point));
        }
        let hash = labels.hash();
        let point = match self.find(hash, labels) {
            Some(point) => point,
            None if may_bind() => match self.bind(hash, labels) {
                Some(point) => point,
                None => return Some(self.plain(labels)),
            },
            None => return None,
        };
        Recent::keep(self.id, point);
        Some(Recorder::Bound(point))
    }

    fn find(&self, hash: u64, labels: &Labels<'_>) -> Option<&'static Point> {
        let bound = self.bound.read().ok()?;
        find(&bound, hash, labels)
    }

    /// Whether no label set may be added: the map or the budget is full (checked before the
    /// write lock is taken, so that operations past the bounds do not queue on it).
    fn full(&self) -> bool {
        self.sets.load(Ordering::Relaxed) >= MAX_BOUND || self.budget.spent()
    }

    /// The points of `labels`, kept now; `None` when the map or the budget is full.
    fn bind(&self, hash: u64, labels: &Labels<'_>) -> Option<&'static Point> {
        if self.full() {
            return None;
        }
        let mut bound = self.bound.write().ok()?;
        if let Some(point) = find(&bound, hash, labels) {
            return Some(point);
        }
        if self.full() {
            return None;
        }
        self.sets.fetch_add(1, Ordering::Relaxed);
        // Kept as long as the process (as the histogram, a static, is), at most `MAX_BOUND` of
        // them: an operation then holds its point without counting references.
        let point: &'static Point = Box::leak(Box::new(Point {
            histogram: self.histogram.clone(),
            budget: self.budget.clone(),
            labels: labels.to_owned_labels(),
            succeeded: OnceLock::new(),
            failed: RwLock::default(),
        }));
        bound.entry(hash).or_default().push(point);
        Some(point)
    }
}

fn find(
    bound: &HashMap<u64, Bound, BuildHasherDefault<Identity>>,
    hash: u64,
    labels: &Labels<'_>,
) -> Option<&'static Point> {
    bound.get(&hash)?.iter().find(|point| point.labels.borrowed() == *labels).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(tool: &str) -> Labels<'_> {
        Labels {
            method: "tools/call",
            target: Some(Target::Tool(tool)),
            protocol_version: Some("2025-11-25"),
            network: "pipe",
            http_version: None,
            server: Some(("example.com", 443)),
        }
    }

    #[test]
    fn a_label_set_round_trips_through_its_owned_form() {
        let labels = labels("echo");
        assert_eq!(labels.to_owned_labels().borrowed(), labels);
    }

    #[test]
    fn attributes_name_what_the_conventions_name() {
        let attributes = labels("echo").attributes(Some(Failure::Code(-32602)));
        let text: Vec<String> = attributes.iter().map(|kv| format!("{}={}", kv.key, kv.value)).collect();
        assert_eq!(
            text,
            [
                "mcp.method.name=tools/call",
                "gen_ai.tool.name=echo",
                "gen_ai.operation.name=execute_tool",
                "mcp.protocol.version=2025-11-25",
                "network.transport=pipe",
                "server.address=example.com",
                "server.port=443",
                "error.type=-32602",
                "rpc.response.status_code=-32602",
            ]
        );
    }

    #[test]
    fn different_labels_hash_apart_and_equal_ones_alike() {
        assert_eq!(labels("echo").hash(), labels("echo").hash());
        let copied = String::from("echo");
        assert_eq!(labels("echo").hash(), labels(&copied).hash(), "by what the text says, not where it is");
        assert_eq!(labels("echo"), labels(&copied));
        let long = "x".repeat(17);
        let names = ["", "e", "ec", "ech", "echo", "echo2", "echo_tool", "echo_tool_", "the_echo_tool_16", &long];
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                assert_ne!(labels(a).hash(), labels(b).hash(), "{a} and {b}");
                assert_ne!(labels(a), labels(b));
            }
        }
        assert_ne!(labels("abcd").hash(), labels("abce").hash());
        assert_ne!(labels("echo").hash(), Labels { target: Some(Target::Prompt("echo")), ..labels("echo") }.hash());
        assert_ne!(labels("echo"), Labels { target: Some(Target::Prompt("echo")), ..labels("echo") });
        let mut other = labels("echo");
        other.protocol_version = None;
        assert_ne!(labels("echo").hash(), other.hash());
        assert_ne!(labels("echo"), other);
        other = labels("echo");
        other.server = Some(("example.com", 80));
        assert_ne!(labels("echo"), other);
        other.server = None;
        assert_ne!(labels("echo"), other);
    }

    #[test]
    fn a_thread_finds_the_points_it_used_last_only_in_their_own_histogram() {
        let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
        let meter = opentelemetry::metrics::MeterProvider::meter(&provider, "test");
        let bound = |points: &BoundPoints, name: &str| match points.recorder(&labels(name)) {
            Recorder::Bound(point) => point,
            Recorder::Plain(..) => panic!("bound"),
        };
        let (first, second) =
            (BoundPoints::new(meter.f64_histogram("a").build()), BoundPoints::new(meter.f64_histogram("b").build()));
        let echo = bound(&first, "echo");
        assert!(!std::ptr::eq(echo, bound(&second, "echo")), "the same labels in another histogram are other points");
        assert!(std::ptr::eq(echo, bound(&first, "echo")));
        // More label sets than a thread keeps at hand, in turn: each still finds its own points,
        // at hand or in the map, and the map binds each set once.
        let names: Vec<String> = (0..3 * RECENT).map(|i| format!("tool{i}")).collect();
        let points: Vec<&Point> = names.iter().map(|name| bound(&first, name)).collect();
        for _ in 0..3 {
            for (name, point) in names.iter().zip(&points) {
                assert!(std::ptr::eq(*point, bound(&first, name)), "{name}");
            }
        }
        assert_eq!(first.sets.load(Ordering::Relaxed), 1 + 3 * RECENT);
        assert!(std::ptr::eq(echo, bound(&first, "echo")));
        let other_version = Labels { protocol_version: Some("2026-07-28"), ..labels("echo") };
        let Recorder::Bound(other) = first.recorder(&other_version) else { panic!("bound") };
        assert!(!std::ptr::eq(echo, other), "a label set differing in one label is another");
    }

    #[test]
    fn each_label_set_and_each_ending_is_bound_once_and_no_more_than_the_budget() {
        use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
        use opentelemetry_sdk::metrics::reader::MetricReader as _;
        let reader = Arc::new(opentelemetry_sdk::metrics::ManualReader::builder().build());
        let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
            .with_reader(super::super::metrics::Shared(reader.clone()))
            .build();
        let series = || {
            let mut collected = ResourceMetrics::default();
            reader.collect(&mut collected).unwrap();
            let metrics = collected.scope_metrics().flat_map(|scope| scope.metrics());
            metrics
                .map(|metric| match metric.data() {
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => h.data_points().count(),
                    _ => 0,
                })
                .sum::<usize>()
        };
        let meter = opentelemetry::metrics::MeterProvider::meter(&provider, "test");
        let points = BoundPoints::new(meter.f64_histogram("h").build());
        let (a, b) = (points.recorder(&labels("echo")), points.recorder(&labels("echo")));
        let (Recorder::Bound(a), Recorder::Bound(b)) = (&a, &b) else { panic!("bound") };
        assert!(std::ptr::eq(*a, *b), "one set of points per label set");
        assert_eq!(series(), 0, "nothing is exported before a measurement");
        b.record(0.1, Some(Failure::ToolError));
        assert_eq!(series(), 1, "only the ending measured is exported");
        for code in 0..20 {
            a.record(0.1, Some(Failure::Code(code)));
            a.record(0.1, Some(Failure::Code(code)));
        }
        a.record(0.1, None);
        assert_eq!(a.failed.read().unwrap().len(), 21);
        assert_eq!(points.budget.0.load(Ordering::Relaxed), 22);
        let names: Vec<String> = (0..MAX_BOUND).map(|i| format!("tool{i}")).collect();
        for name in &names {
            if let Recorder::Bound(point) = points.recorder(&labels(name)) {
                point.record(0.1, None);
            }
        }
        assert_eq!(points.budget.0.load(Ordering::Relaxed), MAX_BOUND, "never more points than the budget");
        assert!(matches!(points.recorder(&labels("one more")), Recorder::Plain(..)));

        // Label sets whose operations have not ended are bounded too.
        let points = BoundPoints::new(meter.f64_histogram("g").build());
        let held: Vec<Recorder> = names.iter().chain(&names[..5]).map(|name| points.recorder(&labels(name))).collect();
        assert_eq!(
            held.iter().filter(|r| matches!(r, Recorder::Plain(..))).count(),
            0,
            "the same sets again are found"
        );
        let more: Vec<String> = (0..5).map(|i| format!("more{i}")).collect();
        assert!(more.iter().all(|name| matches!(points.recorder(&labels(name)), Recorder::Plain(..))));
        assert_eq!(points.sets.load(Ordering::Relaxed), MAX_BOUND);
    }
}
