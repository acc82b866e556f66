//! A span of this library's operations written, as it is recorded, as the OTLP protobuf `Span`
//! message (`opentelemetry.proto.trace.v1.Span`) it is sent as, so that it waits for export as
//! those bytes ([`Queued`]).
//!
//! An operation writes its name, kind, start and attributes as it begins ([`Written`]), and the
//! rest as it ends ([`finish`]): its ids in the room left before the name, its end time in the
//! room left after the start, its link, status and flags after the attributes. Field by field,
//! the bytes are those `prost` writes for the message `opentelemetry-proto` describes (the tests
//! compare them with what those types encode for the same span). The keys and varints are a few
//! lines of this module's (an attribute's key field is encoded when the program is built, and a
//! short attribute's lengths are one byte each); links and attribute values other than text,
//! integers, booleans and floats are encoded through `opentelemetry-proto`'s own messages.
//!
//! The buffers spans are written in are used again ([`POOL`]): a request's thread takes one, the
//! export thread gives it back once the span is copied into a batch, so that in a steady state
//! neither thread allocates a common span's memory, nor frees memory the other allocated (a span
//! grown past a kilobyte, with recorded tool content, is freed by the export thread).
//!
//! Why: a span made through the SDK (its span object, its `SpanData`), then turned into
//! protobuf messages on the export thread, cost a request several microseconds, most of it
//! allocations: every attribute's key and value copied into a `String` twice over, then freed
//! on another thread than the one that made them, which with glibc makes the two threads wait on
//! each other's arena locks. Written this way, a span is one buffer, taken from the pool and
//! given back, and one copy into its batch.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, SpanId, TraceState};
use opentelemetry::{KeyValue, Value};
use opentelemetry_proto::tonic::common::v1 as common;
use opentelemetry_proto::tonic::trace::v1::{span, status::StatusCode, SpanFlags};
use opentelemetry_sdk::trace::SpanData;
use prost::encoding::{encoded_len_varint, key_len, WireType};

/// The bytes a span's buffer has room for when it is made (a common span takes 250 to 400); a
/// buffer grown past twice this (recorded tool arguments or results) is not used again.
pub(crate) const SLOT: usize = 512;

/// The room left before the name for the ids (`trace_id`, `span_id`, `parent_span_id`).
const IDS: usize = 40;

/// Names, URIs, ids and other text longer than this are cut (at a character boundary, `…`
/// appended).
pub(crate) const MAX_TEXT: usize = 256;

/// The fields of `opentelemetry.proto.trace.v1.Span` written here.
mod field {
    pub const TRACE_ID: u32 = 1;
    pub const SPAN_ID: u32 = 2;
    pub const TRACE_STATE: u32 = 3;
    pub const PARENT_SPAN_ID: u32 = 4;
    pub const NAME: u32 = 5;
    pub const KIND: u32 = 6;
    pub const START: u32 = 7;
    pub const END: u32 = 8;
    pub const ATTRIBUTES: u32 = 9;
    pub const LINKS: u32 = 13;
    pub const STATUS: u32 = 15;
    pub const FLAGS: u32 = 16;
    /// `Status.message`, `Status.code`.
    pub const STATUS_MESSAGE: u32 = 2;
    pub const STATUS_CODE: u32 = 3;
    /// `KeyValue.key`, `KeyValue.value`.
    pub const KEY: u32 = 1;
    pub const VALUE: u32 = 2;
    /// `AnyValue`'s `string_value`, `bool_value`, `int_value`, `double_value`.
    pub const STRING: u32 = 1;
    pub const BOOL: u32 = 2;
    pub const INT: u32 = 3;
    pub const DOUBLE: u32 = 4;
}

/// `text` cut to [`MAX_TEXT`] bytes: the part kept, and what marks the cut (`…`, or nothing).
pub(crate) fn clip(text: &str) -> (&str, &'static str) {
    if text.len() <= MAX_TEXT {
        return (text, "");
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], "…")
}

/// `text` cut to [`MAX_TEXT`] as [`clip`] cuts it, `…` appended; copied only when it is cut.
pub(crate) fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    match clip(text) {
        (whole, "") => std::borrow::Cow::Borrowed(whole),
        (head, mark) => std::borrow::Cow::Owned([head, mark].concat()),
    }
}

/// Gives `f` the text of `ip` (an IPv4 address's copied from a table of octets, without the
/// formatting machinery, which cost a request more than the rest of its span's attributes).
pub(crate) fn ip_text<R>(ip: std::net::IpAddr, f: impl FnOnce(&Ascii) -> R) -> R {
    let mut small = Small::empty();
    let std::net::IpAddr::V4(v4) = ip else {
        // Hex digits, colons and dots, 45 bytes at most: it fits.
        let _ = write!(small, "{ip}");
        return f(&Ascii(small));
    };
    for octet in v4.octets() {
        let (text, len) = OCTETS[usize::from(octet)];
        small.bytes[small.len..small.len + 4].copy_from_slice(&text); // 16 bytes at most
        small.len += usize::from(len) + 1;
    }
    small.len -= 1; // the last octet's dot
    f(&Ascii(small))
}

/// Every octet's decimal text followed by a dot, four bytes (some unused), and the text's
/// length without the dot.
const OCTETS: [([u8; 4], u8); 256] = {
    let mut table = [([0; 4], 0); 256];
    let mut n = 0;
    while n < 256 {
        let octet = n as u8;
        table[n] = match octet {
            0..=9 => ([b'0' + octet, b'.', 0, 0], 1),
            10..=99 => ([b'0' + octet / 10, b'0' + octet % 10, b'.', 0], 2),
            _ => ([b'0' + octet / 100, b'0' + octet / 10 % 10, b'0' + octet % 10, b'.'], 3),
        };
        n += 1;
    }
    table
};

/// ASCII text on the stack: digits, signs, dots and colons.
pub(crate) struct Ascii(Small);

impl Ascii {
    fn bytes(&self) -> &[u8] {
        &self.0.bytes[..self.0.len]
    }

    /// The text (tests).
    #[cfg(test)]
    fn text(&self) -> &str {
        self.0.text()
    }
}

/// Gives `f` the decimal text of `n` (request ids, error codes), written without the formatting
/// machinery.
pub(crate) fn int_text<R>(n: i64, f: impl FnOnce(&Ascii) -> R) -> R {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut small = Small::empty();
    if n < 0 {
        small.bytes[0] = b'-';
        small.len = 1;
    }
    let count = digits.len() - at;
    small.bytes[small.len..small.len + count].copy_from_slice(&digits[at..]);
    small.len += count;
    f(&Ascii(small))
}

/// A few bytes of text on the stack.
struct Small {
    bytes: [u8; 64],
    len: usize,
}

impl Small {
    fn empty() -> Small {
        Small { bytes: [0; 64], len: 0 }
    }

    #[cfg(test)]
    fn text(&self) -> &str {
        // Only whole `&str`s are written in.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl std::fmt::Write for Small {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len.checked_add(s.len()).filter(|end| *end <= self.bytes.len()).ok_or(std::fmt::Error)?;
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A span being written: room for its ids, its name, kind, start, room for its end, then its
/// attributes, each a `KeyValue` message of the `Span`'s `attributes` field, as they are
/// recorded.
pub(crate) struct Written {
    bytes: Vec<u8>,
    /// Where the name's text is.
    name: std::ops::Range<usize>,
    /// Where the end time's eight bytes go.
    end_time: usize,
    start: UnixNanos,
}

/// A moment of the wall clock as OTLP writes it: nanoseconds since the Unix epoch (0 at one
/// before it, later times counted on from there; past the year 2554, the largest). A span's end
/// is its start plus its duration, added as integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct UnixNanos(pub u64);

impl UnixNanos {
    /// `self`, `elapsed` later.
    pub fn after(self, elapsed: std::time::Duration) -> UnixNanos {
        UnixNanos(self.0.saturating_add(whole_nanos(elapsed)))
    }
}

impl From<SystemTime> for UnixNanos {
    fn from(time: SystemTime) -> UnixNanos {
        UnixNanos(time.duration_since(UNIX_EPOCH).map_or(0, whole_nanos))
    }
}

/// `duration` in nanoseconds, the largest `u64` past it (584 years).
fn whole_nanos(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Written {
    /// A span named `name`, or `{name} {target}` (each cut to [`MAX_TEXT`]), of `kind`, begun at
    /// `start`.
    pub fn new(name: &str, target: Option<&str>, kind: span::SpanKind, start: UnixNanos) -> Written {
        let mut bytes = POOL.take();
        bytes.resize(IDS, 0);
        let (head, cut) = clip(name);
        let target = target.map(clip);
        let len = head.len() + cut.len() + target.map_or(0, |(head, cut)| 1 + head.len() + cut.len());
        if len > 0 {
            field_key(field::NAME, WireType::LengthDelimited, &mut bytes);
            varint(len as u64, &mut bytes);
        }
        let name_start = bytes.len();
        bytes.extend_from_slice(head.as_bytes());
        bytes.extend_from_slice(cut.as_bytes());
        if let Some((head, cut)) = target {
            bytes.push(b' ');
            bytes.extend_from_slice(head.as_bytes());
            bytes.extend_from_slice(cut.as_bytes());
        }
        let name = name_start..bytes.len();
        if kind != span::SpanKind::Unspecified {
            field_key(field::KIND, WireType::Varint, &mut bytes);
            varint(kind as i32 as u64, &mut bytes);
        }
        if start.0 != 0 {
            field_key(field::START, WireType::SixtyFourBit, &mut bytes);
            bytes.extend_from_slice(&start.0.to_le_bytes());
        }
        // The end is always written (prost would leave out a zero: a clock before 1970).
        field_key(field::END, WireType::SixtyFourBit, &mut bytes);
        let end_time = bytes.len();
        bytes.extend_from_slice(&[0; 8]);
        Written { bytes, name, end_time, start }
    }

    /// What is written so far.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// When the span began.
    pub fn start(&self) -> UnixNanos {
        self.start
    }

    /// The buffer, written so far (the span is not, once it is taken).
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }

    /// The span's name.
    pub fn name(&self) -> &str {
        // Made of whole `&str`s.
        std::str::from_utf8(&self.bytes[self.name.clone()]).unwrap_or_default()
    }

    /// A text attribute, cut to [`MAX_TEXT`].
    pub fn text(&mut self, key: Key, value: &str) {
        let (head, cut) = clip(value);
        self.text_bytes(key, head.as_bytes(), cut);
    }

    /// A text attribute of the ASCII text [`int_text`] and [`ip_text`] give (not checked as
    /// UTF-8 again).
    pub fn ascii(&mut self, key: Key, value: &Ascii) {
        self.text_bytes(key, value.bytes(), "");
    }

    /// A text attribute of `head` (UTF-8, and a whole string's prefix at a character boundary)
    /// then `cut`.
    fn text_bytes(&mut self, key: Key, head: &[u8], cut: &str) {
        let len = head.len() + cut.len();
        // A length of 0x80 or more makes the attribute not short: the byte is then not used.
        if !self.short(key, &[STRING_KEY, len as u8], [head, cut.as_bytes()]) {
            let head = std::str::from_utf8(head).unwrap_or_default();
            self.string(key.name, head, cut);
        }
    }

    /// A short attribute (most are), every key and length one byte: `key`'s field, written when
    /// the program was built, then its `AnyValue`, `value_head` and `value`'s parts. `false`,
    /// and nothing written, when it would not be short.
    fn short(&mut self, key: Key, value_head: &[u8], value: [&[u8]; 2]) -> bool {
        let value_len = value_head.len() + value[0].len() + value[1].len();
        let len_of_key_value = key.field.len() + 2 + value_len;
        if len_of_key_value >= 0x80 {
            return false;
        }
        self.bytes.reserve(2 + len_of_key_value);
        self.bytes.extend_from_slice(&[ATTRIBUTE_KEY, len_of_key_value as u8]);
        self.bytes.extend_from_slice(key.field);
        self.bytes.extend_from_slice(&[VALUE_KEY, value_len as u8]);
        self.bytes.extend_from_slice(value_head);
        for part in value.into_iter().filter(|part| !part.is_empty()) {
            self.bytes.extend_from_slice(part);
        }
        true
    }

    /// Attributes whose keys and values are known when the program is built, written then
    /// ([`fixed!`](crate::telemetry::wire::fixed)): one copy.
    pub fn fixed(&mut self, attributes: Fixed) {
        self.bytes.extend_from_slice(attributes.0);
    }

    /// A text attribute kept whole (tool arguments and results, whose size the caller bounds).
    pub fn content(&mut self, key: Key, value: &str) {
        self.string(key.name, value, "");
    }

    /// An integer attribute.
    pub fn int(&mut self, key: Key, value: i64) {
        let mut value_head = Head::default();
        value_head.key(field::INT, WireType::Varint);
        value_head.varint(value as u64);
        if !self.short(key, value_head.bytes(), [&[], &[]]) {
            self.integer(key.name, value);
        }
    }

    /// An integer attribute, its key given as text.
    fn integer(&mut self, key: &str, value: i64) {
        let mut value_head = Head::default();
        value_head.key(field::INT, WireType::Varint);
        value_head.varint(value as u64);
        self.key_value(key, &value_head, &[]);
    }

    /// A boolean attribute.
    fn bool(&mut self, key: &str, value: bool) {
        let mut value_head = Head::default();
        value_head.key(field::BOOL, WireType::Varint);
        value_head.varint(u64::from(value));
        self.key_value(key, &value_head, &[]);
    }

    /// A floating-point attribute.
    fn double(&mut self, key: &str, value: f64) {
        let mut value_head = Head::default();
        value_head.key(field::DOUBLE, WireType::SixtyFourBit);
        self.key_value(key, &value_head, &[&value.to_le_bytes()]);
    }

    /// An attribute as the OpenTelemetry API holds it (those a sampler adds), kept whole.
    pub fn attribute(&mut self, attribute: &KeyValue) {
        let key = attribute.key.as_str();
        match &attribute.value {
            Value::String(text) => self.string(key, text.as_str(), ""),
            Value::I64(n) => self.integer(key, *n),
            Value::Bool(b) => self.bool(key, *b),
            Value::F64(f) => self.double(key, *f),
            other => {
                let message =
                    common::KeyValue { key: key.to_owned(), value: Some(other.clone().into()), key_strindex: 0 };
                prost::encoding::message::encode(field::ATTRIBUTES, &message, &mut self.bytes);
            }
        }
    }

    /// A text attribute of `head` then `tail`.
    fn string(&mut self, key: &str, head: &str, tail: &str) {
        let mut value_head = Head::default();
        value_head.key(field::STRING, WireType::LengthDelimited);
        value_head.varint((head.len() + tail.len()) as u64);
        self.key_value(key, &value_head, &[head.as_bytes(), tail.as_bytes()]);
    }

    /// An attribute: a `KeyValue` of the `Span`'s `attributes` field, whose `AnyValue` is
    /// `value_head` then `value`. Its keys and lengths are put together on the stack and the
    /// whole written with one reservation (most attributes are a few dozen bytes: writing them
    /// a byte at a time cost more than all the rest of a span).
    fn key_value(&mut self, key: &str, value_head: &Head, value: &[&[u8]]) {
        let value_len = value_head.len + value.iter().map(|part| part.len()).sum::<usize>();
        let mut head = Head::default();
        // proto3 leaves an empty string out.
        let key_field = match key.len() {
            0 => 0,
            n => key_len(field::KEY) + encoded_len_varint(n as u64) + n,
        };
        let len = key_field + key_len(field::VALUE) + encoded_len_varint(value_len as u64) + value_len;
        head.key(field::ATTRIBUTES, WireType::LengthDelimited);
        head.varint(len as u64);
        if !key.is_empty() {
            head.key(field::KEY, WireType::LengthDelimited);
            head.varint(key.len() as u64);
        }
        let mut middle = Head::default();
        middle.key(field::VALUE, WireType::LengthDelimited);
        middle.varint(value_len as u64);
        self.bytes.reserve(head.len + key.len() + middle.len + value_len);
        self.bytes.extend_from_slice(head.bytes());
        self.bytes.extend_from_slice(key.as_bytes());
        self.bytes.extend_from_slice(middle.bytes());
        self.bytes.extend_from_slice(value_head.bytes());
        for part in value {
            self.bytes.extend_from_slice(part);
        }
    }
}

/// The one-byte key of a length-delimited field numbered under 16.
const fn length_delimited_key(number: u32) -> u8 {
    ((number << 3) | WireType::LengthDelimited as u32) as u8
}

/// The keys of `Span.attributes`, `KeyValue.value` and `AnyValue.string_value`.
const ATTRIBUTE_KEY: u8 = length_delimited_key(field::ATTRIBUTES);
const VALUE_KEY: u8 = length_delimited_key(field::VALUE);
const STRING_KEY: u8 = length_delimited_key(field::STRING);

/// An attribute's key, known when the program is built, its `KeyValue.key` field encoded then
/// ([`key!`](crate::telemetry::wire::key)).
#[derive(Clone, Copy)]
pub(crate) struct Key {
    name: &'static str,
    field: &'static [u8],
}

impl Key {
    pub(crate) const fn new(name: &'static str, field: &'static [u8]) -> Key {
        Key { name, field }
    }
}

/// The `KeyValue.key` field of `name` (shorter than 126 bytes, not empty): its key, its length,
/// its text.
pub(crate) const fn key_field<const N: usize>(name: &str) -> [u8; N] {
    assert!(N > 2 && N < 0x80, "an attribute key of 1 to 125 bytes");
    assert!(name.len() + 2 == N, "the field of a key is the key and two bytes");
    let mut field = [0; N];
    field[0] = length_delimited_key(field::KEY);
    field[1] = (N - 2) as u8;
    copy_into(&mut field, 2, name.as_bytes());
    field
}

/// An attribute [`Key`], its field encoded when the program is built: `key!("mcp.method.name")`.
macro_rules! key {
    ($name:expr) => {{
        const NAME: &str = $name;
        const FIELD: [u8; NAME.len() + 2] = $crate::telemetry::wire::key_field(NAME);
        const KEY: $crate::telemetry::wire::Key = $crate::telemetry::wire::Key::new(NAME, &FIELD);
        KEY
    }};
}
pub(crate) use key;

/// Text attributes whose keys and values are known when the program is built, written then, as
/// the `attributes` fields of a `Span` one after the other ([`fixed!`]).
#[derive(Clone, Copy)]
pub(crate) struct Fixed(&'static [u8]);

impl Fixed {
    pub(crate) const fn new(bytes: &'static [u8]) -> Fixed {
        Fixed(bytes)
    }
}

/// How many bytes [`fixed_attributes`] writes for `pairs`.
pub(crate) const fn fixed_len(pairs: &[(&str, &str)]) -> usize {
    let mut len = 0;
    let mut i = 0;
    while i < pairs.len() {
        let (key, value) = pairs[i];
        let len_of_key_value = 2 + key.len() + 2 + 2 + value.len();
        assert!(!key.is_empty() && len_of_key_value < 0x80, "a short attribute");
        len += 2 + len_of_key_value;
        i += 1;
    }
    len
}

/// The `attributes` fields of text attributes `pairs` (each key not empty, a key and its value
/// 121 bytes at most together, so that every length is one byte): what [`Written::text`] writes
/// for each.
pub(crate) const fn fixed_attributes<const N: usize>(pairs: &[(&str, &str)]) -> [u8; N] {
    assert!(fixed_len(pairs) == N, "the length fixed_len gives");
    let mut bytes = [0; N];
    let mut at = 0;
    let mut i = 0;
    while i < pairs.len() {
        let (key, value) = (pairs[i].0.as_bytes(), pairs[i].1.as_bytes());
        let lengths = [
            ATTRIBUTE_KEY,
            (2 + key.len() + 2 + 2 + value.len()) as u8,
            length_delimited_key(field::KEY),
            key.len() as u8,
        ];
        at = copy_into(&mut bytes, at, &lengths);
        at = copy_into(&mut bytes, at, key);
        at = copy_into(&mut bytes, at, &[VALUE_KEY, (2 + value.len()) as u8, STRING_KEY, value.len() as u8]);
        at = copy_into(&mut bytes, at, value);
        i += 1;
    }
    bytes
}

/// `from` copied into `bytes` at `at`; where it ends.
const fn copy_into<const N: usize>(bytes: &mut [u8; N], at: usize, from: &[u8]) -> usize {
    let mut i = 0;
    while i < from.len() {
        bytes[at + i] = from[i];
        i += 1;
    }
    at + from.len()
}

/// Text attributes known when the program is built, written then:
/// `fixed!(("network.transport", "tcp"), ("network.protocol.name", "http"))`.
macro_rules! fixed {
    ($(($key:expr, $value:expr)),+ $(,)?) => {{
        const PAIRS: &[(&str, &str)] = &[$(($key, $value)),+];
        const BYTES: [u8; $crate::telemetry::wire::fixed_len(PAIRS)] = $crate::telemetry::wire::fixed_attributes(PAIRS);
        const FIXED: $crate::telemetry::wire::Fixed = $crate::telemetry::wire::Fixed::new(&BYTES);
        FIXED
    }};
}
pub(crate) use fixed;

/// Up to two keys and two lengths, put together on the stack.
#[derive(Default)]
struct Head {
    bytes: [u8; 24],
    len: usize,
}

impl Head {
    #[inline]
    fn key(&mut self, number: u32, wire_type: WireType) {
        self.varint(u64::from(number << 3 | wire_type as u32));
    }

    #[inline]
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes[self.len] = (value as u8) | 0x80;
            self.len += 1;
            value >>= 7;
        }
        self.bytes[self.len] = value as u8;
        self.len += 1;
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// What a span is besides what [`Written`] holds, known when it ends.
pub(crate) struct Frame<'a> {
    pub context: &'a SpanContext,
    /// `SpanId::INVALID` for a root span.
    pub parent: SpanId,
    pub parent_is_remote: bool,
    pub end: UnixNanos,
    pub link: Option<&'a span::Link>,
    pub status: StatusCode,
    /// An error status's description, cut to [`MAX_TEXT`].
    pub status_message: &'a str,
}

/// A span waiting in the export queue (small: the queue moves it twice).
pub(crate) enum Queued {
    /// One of this library's: its `Span` message is `bytes[from..]`.
    Written { bytes: Vec<u8>, from: usize },
    /// Any other, as the SDK ended it (the spans of its tracer).
    Full(Box<SpanData>),
}

#[cfg(test)]
impl Queued {
    /// A written span's bytes (`None`: a span as the SDK ended it).
    pub fn written(&self) -> Option<&[u8]> {
        match self {
            Queued::Written { bytes, from } => bytes.get(*from..),
            Queued::Full(_) => None,
        }
    }
}

/// Buffers for spans, used again (see the module's text).
pub(crate) struct Pool {
    buffers: Mutex<Vec<Vec<u8>>>,
}

/// Buffers the pool keeps at most (a batch's, and those of the spans recorded meanwhile).
const POOLED: usize = 1024;

/// The buffers of this process's spans.
pub(crate) static POOL: Pool = Pool { buffers: Mutex::new(Vec::new()) };

impl Pool {
    /// An empty buffer.
    fn take(&self) -> Vec<u8> {
        let buffer = self.buffers.lock().ok().and_then(|mut buffers| buffers.pop());
        buffer.unwrap_or_else(|| Vec::with_capacity(SLOT))
    }

    /// Whether `buffer` is used again (not one grown large).
    fn keeps(buffer: &Vec<u8>) -> bool {
        buffer.capacity() <= 2 * SLOT
    }

    /// Gives `buffer` back, unless it grew large or the pool is full.
    fn put(&self, mut buffer: Vec<u8>) {
        if !Pool::keeps(&buffer) {
            return;
        }
        if let Ok(mut buffers) = self.buffers.lock() {
            if buffers.len() < POOLED {
                buffer.clear();
                buffers.push(buffer);
            }
        }
    }

    /// Gives the buffers of `returned` back (emptying it), but those grown large and those beyond
    /// what the pool keeps.
    pub fn give_back(&self, returned: &mut Vec<Vec<u8>>) {
        if let Ok(mut buffers) = self.buffers.lock() {
            let room = POOLED.saturating_sub(buffers.len());
            let kept = returned.drain(..).filter(Pool::keeps).take(room);
            buffers.extend(kept.map(|mut buffer| {
                buffer.clear();
                buffer
            }));
        }
        returned.clear();
    }
}

/// A span not recorded after all (its sampler dropped it) gives its buffer back.
impl Drop for Written {
    fn drop(&mut self) {
        if self.bytes.capacity() > 0 {
            POOL.put(self.take());
        }
    }
}

/// The span of `written` and `frame`, as the `Span` message it is sent as.
pub(crate) fn finish(mut written: Written, frame: &Frame<'_>) -> Queued {
    let mut bytes = written.take();
    bytes[written.end_time..written.end_time + 8].copy_from_slice(&frame.end.0.to_le_bytes());
    let out = &mut bytes;
    if let Some(link) = frame.link {
        prost::encoding::message::encode(field::LINKS, link, out);
    }
    let (message, code) = (frame.status_message, frame.status as i32 as u64);
    let message_len = match message.len() {
        0 => 0,
        n => key_len(field::STATUS_MESSAGE) + encoded_len_varint(n as u64) + n,
    };
    let code_len = if code == 0 { 0 } else { key_len(field::STATUS_CODE) + encoded_len_varint(code) };
    field_key(field::STATUS, WireType::LengthDelimited, out);
    varint((message_len + code_len) as u64, out);
    if !message.is_empty() {
        length_delimited(field::STATUS_MESSAGE, message.as_bytes(), out);
    }
    if code != 0 {
        field_key(field::STATUS_CODE, WireType::Varint, out);
        varint(code, out);
    }
    let flags = span_flags(frame.parent_is_remote, frame.context.trace_flags().to_u8());
    field_key(field::FLAGS, WireType::ThirtyTwoBit, out);
    out.extend_from_slice(&flags.to_le_bytes());
    if *frame.context.trace_state() == TraceState::NONE {
        // A span of recorded tool content waits at its size, not at the capacity its growth
        // doubled.
        if !Pool::keeps(&bytes) && bytes.capacity() > bytes.len() + bytes.len() / 4 {
            bytes.shrink_to_fit();
        }
        // The ids, in the room before the name, ending where it begins.
        let (ids, len) = ids_on_stack(frame);
        let from = IDS - len;
        bytes[from..IDS].copy_from_slice(&ids[..len]);
        return Queued::Written { bytes, from };
    }
    // A `tracestate` (between the ids) may not fit in the room: the span is copied after them.
    let mut with_state = Vec::with_capacity(bytes.len() + 64);
    put_ids(frame, &mut with_state);
    with_state.extend_from_slice(&bytes[IDS..]);
    POOL.put(bytes);
    Queued::Written { bytes: with_state, from: 0 }
}

/// The ids' fields (`trace_id`, `span_id`, `parent_span_id`), and their length, on the stack.
fn ids_on_stack(frame: &Frame<'_>) -> ([u8; IDS], usize) {
    let mut ids = [0; IDS];
    let mut len = 0;
    let mut put = |number: u32, bytes: &[u8]| {
        // One-byte keys and lengths: fields under 16, ids of 16 bytes at most.
        ids[len] = length_delimited_key(number);
        ids[len + 1] = bytes.len() as u8;
        ids[len + 2..len + 2 + bytes.len()].copy_from_slice(bytes);
        len += 2 + bytes.len();
    };
    put(field::TRACE_ID, &frame.context.trace_id().to_bytes());
    put(field::SPAN_ID, &frame.context.span_id().to_bytes());
    if frame.parent != SpanId::INVALID {
        put(field::PARENT_SPAN_ID, &frame.parent.to_bytes());
    }
    (ids, len)
}

/// Writes the ids' fields, and the `tracestate` between them, with prost's primitives.
fn put_ids(frame: &Frame<'_>, out: &mut Vec<u8>) {
    length_delimited(field::TRACE_ID, &frame.context.trace_id().to_bytes(), out);
    length_delimited(field::SPAN_ID, &frame.context.span_id().to_bytes(), out);
    let state = frame.context.trace_state().header();
    if !state.is_empty() {
        length_delimited(field::TRACE_STATE, state.as_bytes(), out);
    }
    if frame.parent != SpanId::INVALID {
        length_delimited(field::PARENT_SPAN_ID, &frame.parent.to_bytes(), out);
    }
}

/// A length-delimited field: its key, length and bytes.
pub(crate) fn length_delimited(number: u32, bytes: &[u8], out: &mut Vec<u8>) {
    field_key(number, WireType::LengthDelimited, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// A field's key.
#[inline]
pub(crate) fn field_key(number: u32, wire_type: WireType, out: &mut Vec<u8>) {
    varint(u64::from(number << 3 | wire_type as u32), out);
}

/// A varint, as `prost::encoding::encode_varint` writes it, for a `Vec` (that one, generic over
/// buffers, was not inlined, and most varints here are one byte).
#[inline]
pub(crate) fn varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The span's `flags`: its trace flags, and whether its parent is remote (always known here).
fn span_flags(parent_is_remote: bool, trace_flags: u8) -> u32 {
    let mut flags = u32::from(trace_flags) | SpanFlags::ContextHasIsRemoteMask as u32;
    if parent_is_remote {
        flags |= SpanFlags::ContextIsRemoteMask as u32;
    }
    flags
}

/// `data` written as this library's operations write their spans (tests compare the two ways).
#[cfg(test)]
pub(crate) fn of_span_data(data: &SpanData) -> Queued {
    use opentelemetry::trace::Status;
    assert!(data.events.is_empty() && data.links.len() <= 1, "written spans have no events and one link at most");
    let mut written = Written::new(&data.name, None, data.span_kind.clone().into(), data.start_time.into());
    for attribute in &data.attributes {
        written.attribute(attribute);
    }
    let link = data.links.iter().next().cloned().map(span::Link::from);
    let (status, status_message) = match &data.status {
        Status::Error { description } => (StatusCode::Error, &**description),
        Status::Ok => (StatusCode::Ok, ""),
        Status::Unset => (StatusCode::Unset, ""),
    };
    let frame = Frame {
        context: &data.span_context,
        parent: data.parent_span_id,
        parent_is_remote: data.parent_span_is_remote,
        end: data.end_time.into(),
        link: link.as_ref(),
        status,
        status_message,
    };
    finish(written, &frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Link, SpanKind, Status, TraceFlags, TraceId};
    use prost::Message as _;

    fn span(attributes: Vec<KeyValue>, status: Status, parent: SpanId, link: bool) -> SpanData {
        let context = |n: u128, state: TraceState| {
            SpanContext::new(TraceId::from(n), SpanId::from(n as u64 + 1), TraceFlags::SAMPLED, false, state)
        };
        let mut links = opentelemetry_sdk::trace::SpanLinks::default();
        if link {
            links.links.push(Link::with_context(context(7, TraceState::from_key_value([("k", "v")]).unwrap())));
        }
        SpanData {
            span_context: context(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10, TraceState::NONE),
            parent_span_id: parent,
            parent_span_is_remote: true,
            span_kind: SpanKind::Server,
            name: "tools/call echo".into(),
            start_time: UNIX_EPOCH + std::time::Duration::from_nanos(1_700_000_000_000_000_005),
            end_time: UNIX_EPOCH + std::time::Duration::from_nanos(1_700_000_000_000_000_009),
            attributes,
            dropped_attributes_count: 0,
            events: Default::default(),
            links,
            status,
            instrumentation_scope: opentelemetry::InstrumentationScope::builder("s").build(),
        }
    }

    #[test]
    fn a_written_span_is_the_bytes_opentelemetry_proto_encodes() {
        let attributes = || {
            vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("client.port", 4000_i64),
                KeyValue::new("negative", -3_i64),
                KeyValue::new("ok", true),
                KeyValue::new("ratio", 0.5),
                KeyValue::new("empty", ""),
                KeyValue::new("é", "ü".repeat(200)),
                KeyValue::new("list", Value::Array(vec![1_i64, 2].into())),
            ]
        };
        let mut with_state = span(attributes(), Status::Unset, SpanId::from(9), false);
        with_state.span_context = SpanContext::new(
            TraceId::from(5),
            SpanId::from(6),
            TraceFlags::SAMPLED,
            false,
            TraceState::from_key_value([("vendor", "value")]).unwrap(),
        );
        let cases = [
            span(attributes(), Status::error("bad"), SpanId::from(9), false),
            span(vec![], Status::Unset, SpanId::INVALID, false),
            span(attributes(), Status::Ok, SpanId::from(9), true),
            with_state,
        ];
        for data in cases {
            let queued = of_span_data(&data);
            let expected = opentelemetry_proto::tonic::trace::v1::Span::from(data).encode_to_vec();
            assert_eq!(queued.written().unwrap(), expected.as_slice());
        }
        // Over a slot: a buffer of its own, the same bytes.
        let big = span(
            vec![KeyValue::new("gen_ai.tool.call.result", "r".repeat(70_000))],
            Status::Unset,
            SpanId::INVALID,
            false,
        );
        let queued = of_span_data(&big);
        assert_eq!(queued.written().unwrap(), opentelemetry_proto::tonic::trace::v1::Span::from(big).encode_to_vec());
    }

    #[test]
    fn a_known_key_writes_what_a_key_given_as_text_writes() {
        let start = UnixNanos::from(SystemTime::now());
        let mut fast = Written::new("n", None, span::SpanKind::Client, start);
        let mut general = Written::new("n", None, span::SpanKind::Client, start);
        let long = "x".repeat(MAX_TEXT + 10);
        for value in ["tools/call", "", "é", &"y".repeat(100), &"z".repeat(110), &long] {
            fast.text(key!("mcp.method.name"), value);
            let (head, cut) = clip(value);
            general.string("mcp.method.name", head, cut);
            fast.int(key!("client.port"), -7);
            general.integer("client.port", -7);
        }
        // Keys about the longest for one-byte lengths: a 112-byte key's with a ten-byte integer
        // is 127 bytes, a 113-byte key's 128 (two-byte lengths).
        const KEY_112: &str = "a.key.of.one.hundred.and.twelve.bytes.long.enough.that.a.ten.byte.integer.makes.its.attribute.127.bytes.xxxxxxxx";
        const KEY_113: &str = "a.key.of.one.hundred.and.thirteen.bytes.long.enough.that.a.ten.byte.integer.makes.its.attribute.128.bytes.xxxxxxx";
        assert_eq!((KEY_112.len(), KEY_113.len()), (112, 113));
        for value in [i64::MIN, 1] {
            fast.int(key!(KEY_112), value);
            general.integer(KEY_112, value);
            fast.int(key!(KEY_113), value);
            general.integer(KEY_113, value);
        }
        assert_eq!(fast.bytes, general.bytes);
    }

    #[test]
    fn fixed_attributes_are_what_text_attributes_write() {
        let start = UnixNanos::from(SystemTime::now());
        let mut fixed = Written::new("n", None, span::SpanKind::Client, start);
        let mut general = Written::new("n", None, span::SpanKind::Client, start);
        fixed.fixed(fixed!(("network.transport", "tcp"), ("network.protocol.name", "http")));
        fixed.fixed(fixed!(("é", "ü"), ("empty", "")));
        // The longest: a key and its value of 121 bytes together.
        const LONG_KEY: &str = "a.key.of.sixty.one.bytes.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
        const LONG_VALUE: &str = "a value of sixty bytes.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
        assert_eq!(LONG_KEY.len() + LONG_VALUE.len(), 121);
        fixed.fixed(fixed!((LONG_KEY, LONG_VALUE)));
        general.text(key!("network.transport"), "tcp");
        general.text(key!("network.protocol.name"), "http");
        general.text(key!("é"), "ü");
        general.text(key!("empty"), "");
        general.text(key!(LONG_KEY), LONG_VALUE);
        assert_eq!(fixed.bytes, general.bytes);
    }

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        let long = "é".repeat(200);
        let (head, cut) = clip(&long);
        assert!(head.len() <= MAX_TEXT && cut == "…" && long.starts_with(head));
        assert_eq!(clip("short"), ("short", ""));
        let mut written = Written::new("tools/call", Some(&long), span::SpanKind::Server, SystemTime::now().into());
        assert!(written.name().ends_with('…') && written.name().starts_with("tools/call é"));
        written.text(key!("k"), &long);
        for n in [0, 7, -1, 10, -32602, 1_000_000, i64::MAX, i64::MIN] {
            assert_eq!(int_text(n, |t| t.text().to_owned()), n.to_string());
        }
        let longest = ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::ffff:255.255.255.255"];
        for ip in
            ["127.0.0.1", "0.0.0.0", "255.255.255.255", "10.20.100.9", "::1", "2001:db8::7"].iter().chain(&longest)
        {
            assert_eq!(ip_text(ip.parse().unwrap(), |t| t.text().to_owned()), *ip);
        }
        for octet in 0..=255u8 {
            for ip in [[octet; 4], [1, 22, octet, 7], [octet, 0, 255, 100]] {
                let ip = std::net::IpAddr::from(ip);
                assert_eq!(ip_text(ip, |t| t.text().to_owned()), ip.to_string());
            }
        }
    }
}
