//! The labels of an operation's duration (`mcp.{server,client}.operation.duration`) and the
//! histogram points already bound to each set of them.
//!
//! Recording through the SDK's plain `Histogram::record` sorts the attributes, hashes them with
//! SipHash and looks them up under a lock on every message: with sampling off that was most of
//! what telemetry cost a call. Here an operation's labels are hashed once, cheaply (FNV-1a over the
//! few short strings), and found in a map of the SDK's bound points; the attribute list is built
//! only the first time a set is seen. The map holds at most [`MAX_BOUND`] sets (the labels are
//! low-cardinality by design: a peer's unknown tool names are never labels); past that a
//! measurement takes the plain path, which the SDK's own cardinality limit bounds.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::RwLock;

use opentelemetry::metrics::{BoundHistogram, Histogram};
use opentelemetry::KeyValue;

/// The most label sets kept bound per histogram.
const MAX_BOUND: usize = 1024;

/// What an operation's target is, when it labels the histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Target<'a> {
    Tool(&'a str),
    Prompt(&'a str),
}

/// How an operation ended, as `error.type` (and `rpc.response.status_code`) say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Failure {
    ToolError,
    Cancelled,
    Code(i64),
}

/// One operation's labels, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Labels<'a> {
    pub method: &'static str,
    pub target: Option<Target<'a>>,
    pub protocol_version: Option<&'a str>,
    pub network: &'static str,
    pub http_version: Option<&'static str>,
    pub server: Option<(&'a str, u16)>,
    pub failure: Option<Failure>,
}

impl Labels<'_> {
    /// The histogram's attributes, as the conventions name them.
    pub(crate) fn attributes(&self) -> Vec<KeyValue> {
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
        match self.failure {
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
        let mut hasher = Fnv::default();
        std::hash::Hash::hash(self, &mut hasher);
        hasher.finish()
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
            failure: self.failure,
        }
    }
}

/// A label set kept in the map, to tell apart two sets whose hashes meet.
#[derive(Debug, PartialEq, Eq)]
struct OwnedLabels {
    method: &'static str,
    target: Option<(bool, Box<str>)>,
    protocol_version: Option<Box<str>>,
    network: &'static str,
    http_version: Option<&'static str>,
    server: Option<(Box<str>, u16)>,
    failure: Option<Failure>,
}

impl OwnedLabels {
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
            failure: self.failure,
        }
    }
}

/// FNV-1a: a few short strings hashed in nanoseconds (the map's keys are already hashes).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }

    fn finish(&self) -> u64 {
        self.0
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

type Bound = Vec<(OwnedLabels, BoundHistogram<f64>)>;

/// A histogram and its points bound so far, by the hash of their labels.
pub(crate) struct BoundPoints {
    histogram: Histogram<f64>,
    bound: RwLock<HashMap<u64, Bound, BuildHasherDefault<Identity>>>,
    count: std::sync::atomic::AtomicUsize,
}

impl BoundPoints {
    pub(crate) fn new(histogram: Histogram<f64>) -> BoundPoints {
        BoundPoints { histogram, bound: RwLock::default(), count: Default::default() }
    }

    /// Records `seconds` in the point of `labels`.
    pub(crate) fn record(&self, seconds: f64, labels: &Labels<'_>) {
        let hash = labels.hash();
        if let Ok(bound) = self.bound.read() {
            if let Some(point) = find(&bound, hash, labels) {
                point.record(seconds);
                return;
            }
        }
        match self.bind(hash, labels) {
            Some(point) => point.record(seconds),
            None => self.histogram.record(seconds, &labels.attributes()),
        }
    }

    /// The point of `labels`, bound now; `None` when the map is full.
    fn bind(&self, hash: u64, labels: &Labels<'_>) -> Option<BoundHistogram<f64>> {
        use std::sync::atomic::Ordering;
        if self.count.load(Ordering::Relaxed) >= MAX_BOUND {
            return None;
        }
        let mut bound = self.bound.write().ok()?;
        if let Some(point) = find(&bound, hash, labels) {
            return Some(point.clone());
        }
        let point = self.histogram.bind(&labels.attributes());
        bound.entry(hash).or_default().push((labels.to_owned_labels(), point.clone()));
        self.count.fetch_add(1, Ordering::Relaxed);
        Some(point)
    }
}

fn find<'m>(
    bound: &'m HashMap<u64, Bound, BuildHasherDefault<Identity>>,
    hash: u64,
    labels: &Labels<'_>,
) -> Option<&'m BoundHistogram<f64>> {
    bound.get(&hash)?.iter().find(|(owned, _)| owned.borrowed() == *labels).map(|(_, point)| point)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(failure: Option<Failure>) -> Labels<'static> {
        Labels {
            method: "tools/call",
            target: Some(Target::Tool("echo")),
            protocol_version: Some("2025-11-25"),
            network: "pipe",
            http_version: None,
            server: None,
            failure,
        }
    }

    #[test]
    fn a_label_set_round_trips_through_its_owned_form() {
        for failure in [None, Some(Failure::ToolError), Some(Failure::Cancelled), Some(Failure::Code(-32602))] {
            let labels = labels(failure);
            assert_eq!(labels.to_owned_labels().borrowed(), labels);
        }
    }

    #[test]
    fn attributes_name_what_the_conventions_name() {
        let attributes = labels(Some(Failure::Code(-32602))).attributes();
        let text: Vec<String> = attributes.iter().map(|kv| format!("{}={}", kv.key, kv.value)).collect();
        assert_eq!(
            text,
            [
                "mcp.method.name=tools/call",
                "gen_ai.tool.name=echo",
                "gen_ai.operation.name=execute_tool",
                "mcp.protocol.version=2025-11-25",
                "network.transport=pipe",
                "error.type=-32602",
                "rpc.response.status_code=-32602",
            ]
        );
    }

    #[test]
    fn different_labels_hash_apart_and_equal_ones_alike() {
        assert_eq!(labels(None).hash(), labels(None).hash());
        assert_ne!(labels(None).hash(), labels(Some(Failure::Cancelled)).hash());
    }
}
