//! The fast path of argument validation: flat object schemas of primitive properties, the shape
//! most tools declare (and what schemars derives for a struct of strings, numbers and booleans).
//!
//! Checked directly, with the same verdicts as the general validator (a property test compares
//! them) and messages in its style. It also spares the general validator's one-time set-up
//! (about 1.5 ms) for servers whose tools all fit. Anything else goes to `jsonschema` (or, built
//! without it, to `structural_schema`).

use mcp_types::JsonObject;
use serde_json::Value;

const ROOT_KEYS: &[&str] =
    &["type", "properties", "required", "additionalProperties", "description", "title", "$schema"];
const PROPERTY_KEYS: &[&str] = &[
    "type",
    "description",
    "title",
    "default",
    "examples",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "enum",
    "x-mcp-header",
];
/// Formats that only describe (the general validator does not check them either).
const DESCRIPTIVE_FORMATS: &[&str] =
    &["int8", "int16", "int32", "int64", "int", "uint8", "uint16", "uint32", "uint64", "uint", "float", "double"];
pub(super) const TYPES: &[&str] = &["string", "number", "integer", "boolean", "null"];

/// A flat object schema.
#[derive(Debug)]
pub(crate) struct FlatSchema {
    properties: Vec<(String, Rule)>,
    required: Vec<String>,
    additional: bool,
}

#[derive(Debug, Default)]
struct Rule {
    types: Vec<String>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    enumeration: Option<Vec<Value>>,
}

impl FlatSchema {
    /// The schema as a flat schema, or `None` when it uses anything beyond that shape.
    pub fn from_schema(schema: &JsonObject) -> Option<FlatSchema> {
        if !schema.keys().all(|k| ROOT_KEYS.contains(&k.as_str())) || schema.get("type")? != "object" {
            return None;
        }
        if let Some(dialect) = schema.get("$schema") {
            if dialect != "https://json-schema.org/draft/2020-12/schema" {
                return None;
            }
        }
        let additional = match schema.get("additionalProperties") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return None,
        };
        let required = match schema.get("required") {
            None => Vec::new(),
            Some(Value::Array(r)) => r.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        let properties = match schema.get("properties") {
            None => Vec::new(),
            Some(Value::Object(props)) => props
                .iter()
                .map(|(k, v)| Some((k.clone(), Rule::from_schema(v.as_object()?)?)))
                .collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        Some(FlatSchema { properties, required, additional })
    }

    /// `Ok` when `instance` matches, else the problems (at most 10).
    pub fn check(&self, instance: &Value) -> Result<(), Vec<String>> {
        let Value::Object(object) = instance else {
            return Err(vec![format!("{} is not of type \"object\"", show(Seen::Value(instance)))]);
        };
        let mut problems = Vec::new();
        for name in &self.required {
            if !object.contains_key(name) {
                problems.push(format!("{} is a required property", Value::String(name.clone())));
            }
        }
        for (name, value) in object {
            self.check_property(name, Seen::Value(value), &mut problems);
        }
        verdict(problems)
    }

    /// [`FlatSchema::check`] on the JSON text of the instance, read without building a tree:
    /// values of properties the schema does not name, and containers (which no flat property
    /// accepts), are skipped as they are read, so checking takes no memory beyond the strings.
    pub fn check_text(&self, text: &str) -> Result<(), Vec<String>> {
        let mut de = serde_json::Deserializer::from_str(text);
        match serde::de::Deserializer::deserialize_any(&mut de, Streaming { schema: self }) {
            Ok(problems) => verdict(problems),
            Err(e) => Err(vec![format!("the arguments are not valid JSON: {e}")]),
        }
    }

    fn check_property(&self, name: &str, value: Seen<'_>, problems: &mut Vec<String>) {
        match self.properties.iter().find(|(p, _)| p == name) {
            Some((_, rule)) => rule.check(Pointer(name), value, problems),
            None if !self.additional => {
                problems.push(format!("Additional properties are not allowed ('{name}' was unexpected)"));
            }
            None => {}
        }
    }
}

fn verdict(mut problems: Vec<String>) -> Result<(), Vec<String>> {
    problems.truncate(10);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// A value as the checks see it: a parsed value, a string read in place, or a container that
/// was skipped (only its kind is known).
#[derive(Clone, Copy)]
pub(super) enum Seen<'a> {
    Value(&'a Value),
    Str(&'a str),
    Container(&'static str),
}

/// How a value appears in a message: in full when short, else its start and an ellipsis (an
/// 8 MiB argument must not come back 8 MiB long in the error).
pub(super) fn show(value: Seen<'_>) -> String {
    const MAX: usize = 60;
    let text = match value {
        Seen::Value(v) => serialized_start(v, MAX + 1),
        Seen::Str(s) => Value::String(s.chars().take(MAX + 1).collect()).to_string(),
        Seen::Container("array") => return "[…]".into(),
        Seen::Container(_) => return "{…}".into(),
    };
    if text.chars().count() <= MAX {
        return text;
    }
    let mut cut: String = text.chars().take(MAX).collect();
    cut.push('…');
    cut
}

/// The first `chars` characters of `value` as JSON (all of it when shorter): the serialization
/// stops there, however large the value.
fn serialized_start(value: &Value, chars: usize) -> String {
    /// Takes bytes until it has enough, then refuses the rest (which ends the serialization).
    struct Capped {
        bytes: Vec<u8>,
        cap: usize,
    }
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.cap - self.bytes.len();
            if room == 0 {
                return Err(std::io::Error::other("enough"));
            }
            let taken = buf.len().min(room);
            self.bytes.extend_from_slice(&buf[..taken]);
            Ok(taken)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // A character takes at most 4 bytes: this many hold `chars` whole ones.
    let mut out = Capped { bytes: Vec::new(), cap: chars * 4 };
    let _ = serde_json::to_writer(&mut out, value);
    let text = String::from_utf8_lossy(&out.bytes);
    text.chars().take(chars).collect()
}

/// The top level of a streamed instance.
struct Streaming<'s> {
    schema: &'s FlatSchema,
}

impl<'de> serde::de::Visitor<'de> for Streaming<'_> {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
        let mut present = vec![false; self.schema.required.len()];
        let mut problems = Vec::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if let Some(i) = self.schema.required.iter().position(|r| *r == key) {
                present[i] = true;
            }
            if self.schema.properties.iter().any(|(p, _)| *p == key) {
                let value: Primitive = map.next_value()?;
                self.schema.check_property(&key, value.seen(), &mut problems);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
                self.schema.check_property(&key, Seen::Value(&Value::Null), &mut problems);
            }
        }
        let missing = self.schema.required.iter().zip(present).filter(|(_, seen)| !seen);
        let mut all: Vec<String> =
            missing.map(|(name, _)| format!("{} is a required property", Value::String(name.clone()))).collect();
        all.append(&mut problems);
        Ok(all)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(vec![format!("{} is not of type \"object\"", show(Seen::Container("array")))])
    }

    fn visit_str<E>(self, v: &str) -> Result<Vec<String>, E> {
        Ok(vec![format!("{} is not of type \"object\"", show(Seen::Str(v)))])
    }

    fn visit_bool<E>(self, v: bool) -> Result<Vec<String>, E> {
        Ok(vec![format!("{v} is not of type \"object\"")])
    }

    fn visit_i64<E>(self, v: i64) -> Result<Vec<String>, E> {
        Ok(vec![format!("{v} is not of type \"object\"")])
    }

    fn visit_u64<E>(self, v: u64) -> Result<Vec<String>, E> {
        Ok(vec![format!("{v} is not of type \"object\"")])
    }

    fn visit_f64<E>(self, v: f64) -> Result<Vec<String>, E> {
        Ok(vec![format!("{} is not of type \"object\"", Value::from(v))])
    }

    fn visit_unit<E>(self) -> Result<Vec<String>, E> {
        Ok(vec!["null is not of type \"object\"".into()])
    }
}

/// One property's value read from the text: scalars in full, strings in place when they need no
/// unescaping, containers skipped.
enum Primitive<'de> {
    Scalar(Value),
    Str(std::borrow::Cow<'de, str>),
    Container(&'static str),
}

impl Primitive<'_> {
    fn seen(&self) -> Seen<'_> {
        match self {
            Primitive::Scalar(v) => Seen::Value(v),
            Primitive::Str(s) => Seen::Str(s),
            Primitive::Container(kind) => Seen::Container(kind),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Primitive<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PrimitiveVisitor)
    }
}

struct PrimitiveVisitor;

impl<'de> serde::de::Visitor<'de> for PrimitiveVisitor {
    type Value = Primitive<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Scalar(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Scalar(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Scalar(Value::from(v)))
    }
    fn visit_unit<E>(self) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Scalar(Value::Null))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Str(std::borrow::Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Str(std::borrow::Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Primitive<'de>, E> {
        Ok(Primitive::Str(std::borrow::Cow::Owned(v)))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Primitive<'de>, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Primitive::Container("array"))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Primitive<'de>, A::Error> {
        while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
        Ok(Primitive::Container("object"))
    }
}

fn number(v: &Value) -> Option<Option<f64>> {
    match v {
        Value::Number(n) => Some(n.as_f64()),
        _ => None,
    }
}

impl Rule {
    fn from_schema(s: &JsonObject) -> Option<Rule> {
        if !s.keys().all(|k| PROPERTY_KEYS.contains(&k.as_str())) {
            return None;
        }
        if let Some(format) = s.get("format") {
            if !DESCRIPTIVE_FORMATS.contains(&format.as_str()?) {
                return None;
            }
        }
        let types: Vec<String> = match s.get("type")? {
            Value::String(t) => vec![t.clone()],
            Value::Array(ts) => ts.iter().map(|t| t.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()?,
            _ => return None,
        };
        if types.is_empty() || !types.iter().all(|t| TYPES.contains(&t.as_str())) {
            return None;
        }
        let bound = |key: &str| s.get(key).map(number).map(|n| n.flatten()).map(|n| n.ok_or(())).transpose();
        let length = |key: &str| s.get(key).map(|v| v.as_u64().ok_or(())).transpose();
        Some(Rule {
            types,
            minimum: bound("minimum").ok()?,
            maximum: bound("maximum").ok()?,
            exclusive_minimum: bound("exclusiveMinimum").ok()?,
            exclusive_maximum: bound("exclusiveMaximum").ok()?,
            min_length: length("minLength").ok()?,
            max_length: length("maxLength").ok()?,
            enumeration: match s.get("enum") {
                None => None,
                Some(Value::Array(values)) => Some(values.clone()),
                Some(_) => return None,
            },
        })
    }

    fn has_type(&self, value: Seen<'_>) -> bool {
        self.types.iter().any(|t| match (t.as_str(), value) {
            ("string", Seen::Value(Value::String(_)) | Seen::Str(_)) => true,
            ("boolean", Seen::Value(Value::Bool(_))) | ("null", Seen::Value(Value::Null)) => true,
            ("number", Seen::Value(Value::Number(_))) => true,
            ("integer", Seen::Value(Value::Number(n))) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        })
    }

    fn check(&self, path: Pointer<'_>, value: Seen<'_>, problems: &mut Vec<String>) {
        if !self.has_type(value) {
            let quoted: Vec<String> = self.types.iter().map(|t| format!("\"{t}\"")).collect();
            let noun = if quoted.len() == 1 { "type" } else { "types" };
            problems.push(format!("at {path}: {} is not of {noun} {}", show(value), quoted.join(", ")));
            return;
        }
        if let Some(values) = &self.enumeration {
            let listed = match value {
                Seen::Value(v) => values.iter().any(|e| same(e, v)),
                Seen::Str(s) => values.iter().any(|e| e.as_str() == Some(s)),
                Seen::Container(_) => false,
            };
            if !listed {
                let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                problems.push(format!("at {path}: {} is not one of [{}]", show(value), listed.join(", ")));
            }
        }
        if let Seen::Value(Value::Number(n)) = value {
            let n = n.as_f64().unwrap_or_default();
            self.check_bounds(path, n, || show(value), problems);
        }
        let text = match value {
            Seen::Value(Value::String(s)) => Some(s.as_str()),
            Seen::Str(s) => Some(s),
            _ => None,
        };
        if let Some(s) = text {
            self.check_length(path, s, problems, || show(value));
        }
    }

    fn check_bounds(&self, path: Pointer<'_>, n: f64, shown: impl Fn() -> String, problems: &mut Vec<String>) {
        let bounds = Bounds {
            minimum: self.minimum,
            maximum: self.maximum,
            exclusive_minimum: self.exclusive_minimum,
            exclusive_maximum: self.exclusive_maximum,
        };
        for (words, bound) in bounds.broken_by(n) {
            problems.push(format!("at {path}: {} is {words} {bound}", shown()));
        }
    }

    fn check_length(&self, path: Pointer<'_>, s: &str, problems: &mut Vec<String>, shown: impl Fn() -> String) {
        if self.min_length.is_none() && self.max_length.is_none() {
            return;
        }
        let chars = s.chars().count() as u64;
        if self.min_length.is_some_and(|m| chars < m) {
            problems.push(format!(
                "at {path}: {} is shorter than {} characters",
                shown(),
                self.min_length.unwrap_or(0)
            ));
        }
        if self.max_length.is_some_and(|m| chars > m) {
            problems.push(format!("at {path}: {} is longer than {} characters", shown(), self.max_length.unwrap_or(0)));
        }
    }
}

/// A number's bounds, as a schema states them.
#[derive(Clone, Copy)]
pub(super) struct Bounds {
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: Option<f64>,
    pub exclusive_maximum: Option<f64>,
}

impl Bounds {
    /// The bounds `n` breaks: the words that say how, and the bound.
    pub fn broken_by(self, n: f64) -> impl Iterator<Item = (&'static str, f64)> {
        [
            (self.minimum.filter(|m| n < *m), "less than the minimum of"),
            (self.maximum.filter(|m| n > *m), "greater than the maximum of"),
            (self.exclusive_minimum.filter(|m| n <= *m), "less than or equal to the minimum of"),
            (self.exclusive_maximum.filter(|m| n >= *m), "greater than or equal to the maximum of"),
        ]
        .into_iter()
        .filter_map(|(bound, words)| bound.map(|b| (words, b)))
    }
}

/// JSON equality where numbers compare by value (1 and 1.0 are one number), at every depth.
pub(super) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// A property's JSON Pointer (`/name`), written out only when a problem names it.
#[derive(Clone, Copy)]
struct Pointer<'a>(&'a str);

impl std::fmt::Display for Pointer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "/{}", escape(self.0))
    }
}

/// A JSON Pointer segment.
pub(super) fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn leaves_richer_schemas_to_the_general_validator() {
        for s in [
            json!({"type": "object", "properties": {"e": {"type": "string", "format": "email"}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}}),
            json!({"type": "object", "oneOf": [{"required": ["a"]}]}),
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
        ] {
            assert!(FlatSchema::from_schema(s.as_object().unwrap()).is_none(), "{s}");
        }
    }
}
