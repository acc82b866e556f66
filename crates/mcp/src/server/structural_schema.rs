//! Input schemas beyond the flat shape, checked without the `jsonschema` crate: what a server
//! built with `default-features = false` uses (the `jsonschema` feature brings the full
//! validator instead).
//!
//! It covers what schemars derives and what tools write by hand: `type`, `enum`, `const`, the
//! numeric and length bounds, `multipleOf`, `properties`, `required`, `additionalProperties`,
//! `minProperties`/`maxProperties`, `items`, `prefixItems`, `minItems`/`maxItems`,
//! `uniqueItems`, `allOf`/`anyOf`/`oneOf`/`not`, `if`/`then`/`else`, `$ref` to `#` and to
//! `$defs`/`definitions`, and the formats `date-time`, `date`, `time`, `uuid`, `ipv4`, `ipv6`.
//! A schema that uses a keyword it does not check (`pattern`, `patternProperties`,
//! `unevaluatedProperties`, a format such as `email`...) does not compile: the tool's calls fail,
//! saying which keyword needs the feature, instead of letting unchecked input through. Other
//! unknown keywords are annotations, as JSON Schema says. Verdicts match `jsonschema`'s (a test
//! compares them); messages follow its wording.

use mcp_types::JsonObject;
use serde_json::{Map, Value};

use super::flat_schema::{escape, same, Bounds, Seen};

/// Keywords of JSON Schema this module does not check: a schema using one is refused.
const UNCHECKED: &[&str] = &[
    "pattern",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "$dynamicRef",
    "$recursiveRef",
];
/// Formats this module checks; any other named in [`UNCHECKED_FORMATS`] refuses the schema.
const FORMATS: &[&str] = &["date-time", "date", "time", "uuid", "ipv4", "ipv6"];
const UNCHECKED_FORMATS: &[&str] = &[
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
    "duration",
];
/// How deep checking goes (instance levels and `$ref` hops together) before it gives up.
const MAX_DEPTH: usize = 128;

/// A compiled schema: its root and the definitions `$ref` points to.
#[derive(Debug)]
pub(crate) struct StructuralSchema {
    root: Node,
    defs: Vec<Node>,
}

#[derive(Debug)]
enum Node {
    Bool(bool),
    Rules(Box<Rules>),
}

/// Where a `$ref` leads.
#[derive(Debug, Clone, Copy)]
enum Target {
    Root,
    Def(usize),
}

#[derive(Debug, Default)]
struct Rules {
    types: Option<Vec<String>>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    format: Option<String>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    additional: Option<Node>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    items: Option<Node>,
    prefix_items: Vec<Node>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Node>,
    conditional: Option<(Node, Option<Node>, Option<Node>)>,
    reference: Option<Target>,
}

/// Names of the definitions, for resolving `$ref` while compiling.
struct Scope<'a> {
    names: Vec<(&'static str, &'a str)>,
}

impl StructuralSchema {
    /// Compiles `schema`; `Err` names the keyword or value it cannot check.
    pub fn compile(schema: &JsonObject) -> Result<Self, String> {
        let mut names = Vec::new();
        let mut bodies = Vec::new();
        for section in ["$defs", "definitions"] {
            if let Some(defs) = schema.get(section) {
                let defs = defs.as_object().ok_or_else(|| format!("`{section}` must be an object"))?;
                for (name, body) in defs {
                    names.push((section, name.as_str()));
                    bodies.push(body);
                }
            }
        }
        let scope = Scope { names };
        let defs = bodies.into_iter().map(|b| compile_node(b, &scope)).collect::<Result<Vec<_>, _>>()?;
        let root = compile_rules(schema, &scope)?;
        Ok(StructuralSchema { root: Node::Rules(Box::new(root)), defs })
    }

    /// `Ok` when `instance` matches, else one line per violation (at most 10), each naming where.
    /// Checking stops at the tenth.
    pub fn check(&self, instance: &Value) -> Result<(), Vec<String>> {
        let mut problems = Problems::new(MAX_PROBLEMS);
        self.check_node(&self.root, instance, &mut String::new(), 0, &mut problems);
        if problems.list.is_empty() {
            Ok(())
        } else {
            Err(problems.list)
        }
    }

    fn check_node(&self, node: &Node, value: &Value, path: &mut String, depth: usize, out: &mut Problems) {
        match node {
            Node::Bool(true) => {}
            Node::Bool(false) => out.push(|| at(path, format!("False schema does not allow {}", show(value)))),
            Node::Rules(rules) => self.check_rules(rules, value, path, depth, out),
        }
    }

    /// Whether `value` matches `node`: checking stops at the first problem.
    fn valid(&self, node: &Node, value: &Value, path: &mut String, depth: usize) -> bool {
        let mut problems = Problems::new(1);
        self.check_node(node, value, path, depth, &mut problems);
        problems.list.is_empty()
    }

    fn check_rules(&self, rules: &Rules, value: &Value, path: &mut String, depth: usize, out: &mut Problems) {
        if out.full() {
            return;
        }
        out.looked_at += 1;
        if depth > MAX_DEPTH {
            out.push(|| at(path, format!("the value nests deeper than {MAX_DEPTH} levels of the schema")));
            return;
        }
        if let Some(target) = rules.reference {
            let node = match target {
                Target::Root => &self.root,
                Target::Def(i) => &self.defs[i],
            };
            self.check_node(node, value, path, depth + 1, out);
        }
        if let Some(types) = &rules.types {
            if !types.iter().any(|t| has_type(t, value)) {
                out.push(|| {
                    let quoted: Vec<String> = types.iter().map(|t| format!("\"{t}\"")).collect();
                    let noun = if quoted.len() == 1 { "type" } else { "types" };
                    at(path, format!("{} is not of {noun} {}", show(value), quoted.join(", ")))
                });
                return;
            }
        }
        if let Some(values) = &rules.enumeration {
            if !values.iter().any(|e| same(e, value)) {
                out.push(|| {
                    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                    at(path, format!("{} is not one of [{}]", show(value), listed.join(", ")))
                });
            }
        }
        if let Some(constant) = &rules.constant {
            if !same(constant, value) {
                out.push(|| at(path, format!("{constant} was expected")));
            }
        }
        match value {
            Value::Number(n) => check_number(rules, n.as_f64().unwrap_or_default(), value, path, out),
            Value::String(s) => check_string(rules, s, value, path, out),
            Value::Array(items) => self.check_array(rules, items, value, path, depth, out),
            Value::Object(object) => self.check_object(rules, object, value, path, depth, out),
            _ => {}
        }
        self.check_combinators(rules, value, path, depth, out);
    }

    fn check_array(
        &self,
        rules: &Rules,
        items: &[Value],
        value: &Value,
        path: &mut String,
        depth: usize,
        out: &mut Problems,
    ) {
        let count = items.len() as u64;
        if let Some(m) = rules.min_items.filter(|m| count < *m) {
            out.push(|| at(path, format!("{} has less than {m} items", show(value))));
        }
        if let Some(m) = rules.max_items.filter(|m| count > *m) {
            out.push(|| at(path, format!("{} has more than {m} items", show(value))));
        }
        if rules.unique_items && !out.full() && unique::has_duplicates(items) {
            out.push(|| at(path, format!("{} has non-unique elements", show(value))));
        }
        for (i, item) in items.iter().enumerate() {
            if out.full() {
                return;
            }
            let schema = match rules.prefix_items.get(i) {
                Some(schema) => schema,
                None => match &rules.items {
                    Some(schema) => schema,
                    None => break,
                },
            };
            let len = path.len();
            path.push('/');
            path.push_str(&i.to_string());
            self.check_node(schema, item, path, depth + 1, out);
            path.truncate(len);
        }
    }

    fn check_object(
        &self,
        rules: &Rules,
        object: &Map<String, Value>,
        value: &Value,
        path: &mut String,
        depth: usize,
        out: &mut Problems,
    ) {
        for name in &rules.required {
            if !object.contains_key(name) {
                out.push(|| at(path, format!("{} is a required property", Value::String(name.clone()))));
            }
        }
        let count = object.len() as u64;
        if let Some(m) = rules.min_properties.filter(|m| count < *m) {
            out.push(|| at(path, format!("{} has less than {m} properties", show(value))));
        }
        if let Some(m) = rules.max_properties.filter(|m| count > *m) {
            out.push(|| at(path, format!("{} has more than {m} properties", show(value))));
        }
        let mut unexpected = Unexpected::default();
        for (name, item) in object {
            if out.full() {
                return;
            }
            let schema = match rules.properties.iter().find(|(p, _)| p == name) {
                Some((_, schema)) => schema,
                None => match &rules.additional {
                    Some(Node::Bool(false)) => {
                        unexpected.add(name);
                        continue;
                    }
                    Some(schema) => schema,
                    None => continue,
                },
            };
            let len = path.len();
            path.push('/');
            path.push_str(&escape(name));
            self.check_node(schema, item, path, depth + 1, out);
            path.truncate(len);
        }
        if unexpected.count > 0 {
            out.push(|| at(path, unexpected.message()));
        }
    }

    fn check_combinators(&self, rules: &Rules, value: &Value, path: &mut String, depth: usize, out: &mut Problems) {
        for schema in &rules.all_of {
            self.check_node(schema, value, path, depth + 1, out);
        }
        if out.full() {
            return;
        }
        if !rules.any_of.is_empty() && !rules.any_of.iter().any(|s| self.valid(s, value, path, depth + 1)) {
            out.push(|| {
                let message =
                    format!("{} is not valid under any of the schemas listed in the 'anyOf' keyword", show(value));
                at(path, message)
            });
        }
        if !rules.one_of.is_empty() {
            // Two matches settle it: the rest need not be tried.
            let matching = rules.one_of.iter().filter(|s| self.valid(s, value, path, depth + 1)).take(2).count();
            if matching == 0 {
                out.push(|| {
                    let message =
                        format!("{} is not valid under any of the schemas listed in the 'oneOf' keyword", show(value));
                    at(path, message)
                });
            } else if matching > 1 {
                out.push(|| {
                    let message = format!(
                        "{} is valid under more than one of the schemas listed in the 'oneOf' keyword",
                        show(value)
                    );
                    at(path, message)
                });
            }
        }
        if let Some(not) = &rules.not {
            if self.valid(not, value, path, depth + 1) {
                out.push(|| at(path, format!("{} should not be valid under the schema in 'not'", show(value))));
            }
        }
        if let Some((condition, then, otherwise)) = &rules.conditional {
            let branch = if self.valid(condition, value, path, depth + 1) { then } else { otherwise };
            if let Some(branch) = branch {
                self.check_node(branch, value, path, depth + 1, out);
            }
        }
    }
}

/// Whether two of `items` are equal, and how many comparisons the check made to say so.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn first_duplicate_counted(items: &[Value]) -> (bool, usize) {
    let mut compared = 0;
    let found = unique::first_duplicate(items, &mut compared).is_some();
    (found, compared)
}

/// Whether two values are equal as JSON Schema compares them.
#[cfg(feature = "fuzzing")]
pub(crate) fn schema_equal(a: &Value, b: &Value) -> bool {
    same(a, b)
}

/// The most problems a check reports: it stops there.
const MAX_PROBLEMS: usize = 10;

/// The problems found so far, at most `limit`, each written out only when it is kept.
struct Problems {
    list: Vec<String>,
    limit: usize,
    /// Values looked at (a measure of the work done).
    looked_at: usize,
}

impl Problems {
    fn new(limit: usize) -> Self {
        Problems { list: Vec::new(), limit, looked_at: 0 }
    }

    fn full(&self) -> bool {
        self.list.len() >= self.limit
    }

    fn push(&mut self, problem: impl FnOnce() -> String) {
        if !self.full() {
            self.list.push(problem());
        }
    }
}

/// The properties `additionalProperties: false` refuses: the first few named, the rest counted.
#[derive(Default)]
struct Unexpected {
    named: Vec<String>,
    count: usize,
}

impl Unexpected {
    const NAMED: usize = 5;

    fn add(&mut self, name: &str) {
        if self.named.len() < Self::NAMED {
            self.named.push(format!("'{}'", show_name(name)));
        }
        self.count += 1;
    }

    fn message(&self) -> String {
        let verb = if self.count == 1 { "was" } else { "were" };
        let more = match self.count - self.named.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!("Additional properties are not allowed ({}{more} {verb} unexpected)", self.named.join(", "))
    }
}

/// A property name as a message shows it: whole when short, else its start.
fn show_name(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(60) {
        None => std::borrow::Cow::Borrowed(name),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &name[..cut])),
    }
}

mod unique {
    //! `uniqueItems` in time linear in the array: each item is hashed once (equal items, as
    //! JSON Schema compares them, hash alike: `1` and `1.0` are equal), and only items of equal
    //! hash are compared. The hash's keys are random, so no input can be made to collide.

    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hash, Hasher};

    use serde_json::Value;

    use super::super::flat_schema::same;

    /// Whether two items of `items` are equal.
    pub(super) fn has_duplicates(items: &[Value]) -> bool {
        let mut compared = 0;
        first_duplicate(items, &mut compared).is_some()
    }

    /// The first pair of equal items (by hash order), counting the comparisons made.
    pub(super) fn first_duplicate(items: &[Value], compared: &mut usize) -> Option<(usize, usize)> {
        if items.len() < 2 {
            return None;
        }
        let keys = RandomState::new();
        let mut hashed: Vec<(u64, usize)> = items.iter().enumerate().map(|(i, v)| (hash(&keys, v), i)).collect();
        hashed.sort_unstable();
        for run in hashed.chunk_by(|a, b| a.0 == b.0) {
            for (k, &(_, i)) in run.iter().enumerate() {
                for &(_, j) in &run[..k] {
                    *compared += 1;
                    if same(&items[i], &items[j]) {
                        return Some((j.min(i), j.max(i)));
                    }
                }
            }
        }
        None
    }

    fn hash(keys: &RandomState, value: &Value) -> u64 {
        let mut hasher = keys.build_hasher();
        feed(keys, value, &mut hasher);
        hasher.finish()
    }

    fn feed(keys: &RandomState, value: &Value, hasher: &mut impl Hasher) {
        match value {
            Value::Null => 0u8.hash(hasher),
            Value::Bool(b) => (1u8, b).hash(hasher),
            Value::Number(n) => {
                // As `same` compares numbers: by their value as a float (so -0 is 0).
                let f = n.as_f64().unwrap_or_default();
                (2u8, if f == 0.0 { 0 } else { f.to_bits() }).hash(hasher);
            }
            Value::String(s) => (3u8, s).hash(hasher),
            Value::Array(items) => {
                (4u8, items.len()).hash(hasher);
                for item in items {
                    feed(keys, item, hasher);
                }
            }
            Value::Object(object) => {
                // In any order: the sum of each entry's own hash.
                let sum = object.iter().fold(0u64, |sum, (k, v)| {
                    let mut entry = keys.build_hasher();
                    k.hash(&mut entry);
                    feed(keys, v, &mut entry);
                    sum.wrapping_add(entry.finish())
                });
                (5u8, object.len(), sum).hash(hasher);
            }
        }
    }
}

fn check_number(rules: &Rules, n: f64, value: &Value, path: &str, out: &mut Problems) {
    let bounds = Bounds {
        minimum: rules.minimum,
        maximum: rules.maximum,
        exclusive_minimum: rules.exclusive_minimum,
        exclusive_maximum: rules.exclusive_maximum,
    };
    for (words, bound) in bounds.broken_by(n) {
        out.push(|| at(path, format!("{} is {words} {bound}", show(value))));
    }
    if let Some(m) = rules.multiple_of {
        let quotient = n / m;
        if !quotient.is_finite() || quotient.fract() != 0.0 {
            out.push(|| at(path, format!("{} is not a multiple of {m}", show(value))));
        }
    }
}

fn check_string(rules: &Rules, s: &str, value: &Value, path: &str, out: &mut Problems) {
    if rules.min_length.is_some() || rules.max_length.is_some() {
        let chars = s.chars().count() as u64;
        if let Some(m) = rules.min_length.filter(|m| chars < *m) {
            out.push(|| at(path, format!("{} is shorter than {m} characters", show(value))));
        }
        if let Some(m) = rules.max_length.filter(|m| chars > *m) {
            out.push(|| at(path, format!("{} is longer than {m} characters", show(value))));
        }
    }
    if let Some(format) = &rules.format {
        if !formats::matches(format, s) {
            out.push(|| at(path, format!("{} is not a \"{format}\"", show(value))));
        }
    }
}

fn compile_node(schema: &Value, scope: &Scope<'_>) -> Result<Node, String> {
    match schema {
        Value::Bool(b) => Ok(Node::Bool(*b)),
        Value::Object(object) => Ok(Node::Rules(Box::new(compile_rules(object, scope)?))),
        other => Err(format!("a schema must be an object or a boolean, not {other}")),
    }
}

fn compile_list(schema: &JsonObject, key: &str, scope: &Scope<'_>) -> Result<Vec<Node>, String> {
    match schema.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(list)) if !list.is_empty() => list.iter().map(|s| compile_node(s, scope)).collect(),
        Some(_) => Err(format!("`{key}` must be a non-empty array of schemas")),
    }
}

fn compile_optional(schema: &JsonObject, key: &str, scope: &Scope<'_>) -> Result<Option<Node>, String> {
    schema.get(key).map(|s| compile_node(s, scope)).transpose()
}

fn number_of(schema: &JsonObject, key: &str) -> Result<Option<f64>, String> {
    match schema.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(format!("`{key}` must be a number, not {other}")),
    }
}

fn count_of(schema: &JsonObject, key: &str) -> Result<Option<u64>, String> {
    match schema.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| format!("`{key}` must be a non-negative integer, not {v}")),
    }
}

fn compile_rules(schema: &JsonObject, scope: &Scope<'_>) -> Result<Rules, String> {
    if let Some(keyword) = schema.keys().find(|k| UNCHECKED.contains(&k.as_str())) {
        return Err(refused(&format!("the keyword `{keyword}`")));
    }
    let types = match schema.get("type") {
        None => None,
        Some(Value::String(t)) => Some(vec![t.clone()]),
        Some(Value::Array(ts)) => Some(
            ts.iter()
                .map(|t| t.as_str().map(str::to_owned).ok_or_else(|| format!("`type` lists {t}, not a type name")))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(format!("`type` must be a name or a list of names, not {other}")),
    };
    const TYPES: &[&str] = &["string", "number", "integer", "boolean", "null", "object", "array"];
    if let Some(unknown) = types.iter().flatten().find(|t| !TYPES.contains(&t.as_str())) {
        return Err(format!("`type` names {unknown:?}, which is not a JSON Schema type"));
    }
    let format = match schema.get("format").map(|f| f.as_str()) {
        None => None,
        Some(None) => return Err("`format` must be a string".into()),
        Some(Some(f)) if UNCHECKED_FORMATS.contains(&f) => return Err(refused(&format!("the format {f:?}"))),
        Some(Some(f)) => FORMATS.contains(&f).then(|| f.to_owned()), // others describe only
    };
    let (items, prefix_items) = match schema.get("items") {
        // An array under `items` is the tuple form of earlier drafts.
        Some(Value::Array(_)) => (None, compile_list(schema, "items", scope)?),
        _ => (compile_optional(schema, "items", scope)?, compile_list(schema, "prefixItems", scope)?),
    };
    let conditional = match compile_optional(schema, "if", scope)? {
        Some(condition) => {
            Some((condition, compile_optional(schema, "then", scope)?, compile_optional(schema, "else", scope)?))
        }
        None => None,
    };
    Ok(Rules {
        types,
        enumeration: match schema.get("enum") {
            None => None,
            Some(Value::Array(values)) => Some(values.clone()),
            Some(_) => return Err("`enum` must be an array".into()),
        },
        constant: schema.get("const").cloned(),
        minimum: number_of(schema, "minimum")?,
        maximum: number_of(schema, "maximum")?,
        exclusive_minimum: number_of(schema, "exclusiveMinimum")?,
        exclusive_maximum: number_of(schema, "exclusiveMaximum")?,
        multiple_of: match number_of(schema, "multipleOf")? {
            Some(m) if m <= 0.0 => return Err("`multipleOf` must be greater than 0".into()),
            m => m,
        },
        min_length: count_of(schema, "minLength")?,
        max_length: count_of(schema, "maxLength")?,
        format,
        properties: match schema.get("properties") {
            None => Vec::new(),
            Some(Value::Object(props)) => {
                props.iter().map(|(k, v)| Ok((k.clone(), compile_node(v, scope)?))).collect::<Result<_, String>>()?
            }
            Some(_) => return Err("`properties` must be an object".into()),
        },
        required: match schema.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_owned).ok_or_else(|| format!("`required` lists {n}, not a name")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`required` must be an array of names".into()),
        },
        additional: compile_optional(schema, "additionalProperties", scope)?,
        min_properties: count_of(schema, "minProperties")?,
        max_properties: count_of(schema, "maxProperties")?,
        items,
        prefix_items,
        min_items: count_of(schema, "minItems")?,
        max_items: count_of(schema, "maxItems")?,
        unique_items: schema.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false),
        all_of: compile_list(schema, "allOf", scope)?,
        any_of: compile_list(schema, "anyOf", scope)?,
        one_of: compile_list(schema, "oneOf", scope)?,
        not: compile_optional(schema, "not", scope)?,
        conditional,
        reference: schema.get("$ref").map(|r| resolve(r, scope)).transpose()?,
    })
}

fn resolve(reference: &Value, scope: &Scope<'_>) -> Result<Target, String> {
    let Some(text) = reference.as_str() else { return Err(format!("`$ref` must be a string, not {reference}")) };
    if text == "#" {
        return Ok(Target::Root);
    }
    for (i, (section, name)) in scope.names.iter().enumerate() {
        let pointer_name = escape(name);
        if text.strip_prefix("#/").and_then(|t| t.strip_prefix(section)) == Some(&format!("/{pointer_name}")) {
            return Ok(Target::Def(i));
        }
    }
    Err(refused(&format!("the reference {text:?} (only `#` and `#/$defs/NAME` are followed)")))
}

fn refused(what: &str) -> String {
    format!("{what} is not checked by this build; build mcp-stack with its `jsonschema` feature to check it")
}

fn has_type(kind: &str, value: &Value) -> bool {
    match (kind, value) {
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("null", Value::Null) => true,
        ("object", Value::Object(_)) | ("array", Value::Array(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

fn at(path: &str, message: String) -> String {
    if path.is_empty() {
        message
    } else {
        format!("at {path}: {message}")
    }
}

/// A value as a message shows it (as the flat checks show it).
fn show(value: &Value) -> String {
    super::flat_schema::show(Seen::Value(value))
}

mod formats {
    //! The formats the structural checks know, as RFC 3339 and RFC 4122 define them.

    /// Whether `s` is of `format` (one of `super::FORMATS`).
    pub fn matches(format: &str, s: &str) -> bool {
        match format {
            "date" => date(s),
            "time" => time(s),
            "date-time" => s.split_once(['T', 't']).is_some_and(|(d, t)| date(d) && time(t)),
            "uuid" => uuid(s),
            "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
            "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
            _ => true,
        }
    }

    fn digits(s: &str, n: usize) -> Option<u32> {
        (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    }

    fn date(s: &str) -> bool {
        let mut parts = s.split('-');
        let (Some(y), Some(m), Some(d), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else { return false };
        let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
        let days = match m {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return false,
        };
        (1..=days).contains(&d)
    }

    /// `HH:MM:SS[.frac](Z|±HH:MM)`.
    fn time(s: &str) -> bool {
        let (clock, offset) = match s.find(['Z', 'z', '+', '-']) {
            Some(i) => s.split_at(i),
            None => return false,
        };
        let offset_ok = match offset {
            "Z" | "z" => true,
            _ => offset[1..]
                .split_once(':')
                .is_some_and(|(h, m)| digits(h, 2).is_some_and(|h| h <= 23) && digits(m, 2).is_some_and(|m| m <= 59)),
        };
        let (whole, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
        let mut parts = whole.split(':');
        let (Some(h), Some(m), Some(sec), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        let fraction_ok = !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit());
        offset_ok
            && fraction_ok
            && digits(h, 2).is_some_and(|h| h <= 23)
            && digits(m, 2).is_some_and(|m| m <= 59)
            && digits(sec, 2).is_some_and(|s| s <= 60)
    }

    fn uuid(s: &str) -> bool {
        let groups: Vec<&str> = s.split('-').collect();
        groups.len() == 5
            && groups
                .iter()
                .zip([8, 4, 4, 4, 12])
                .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[cfg(feature = "jsonschema")]
    fn full(schema: &Value, instance: &Value) -> bool {
        jsonschema::options().should_validate_formats(true).build(schema).unwrap().is_valid(instance)
    }

    fn ours(schema: &Value, instance: &Value) -> Result<(), Vec<String>> {
        StructuralSchema::compile(schema.as_object().unwrap()).unwrap().check(instance)
    }

    /// Each schema with instances that pass and fail, judged the same by both validators.
    #[cfg(feature = "jsonschema")]
    #[test]
    fn gives_the_full_validators_verdicts() {
        let cases: Vec<(Value, Vec<Value>)> = vec![
            (
                json!({"type": "object", "properties": {"point": {"$ref": "#/$defs/Point"}, "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true, "maxItems": 3}},
                       "required": ["point"], "additionalProperties": false,
                       "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}, "y": {"type": "number", "multipleOf": 0.5}}, "required": ["x", "y"]}}}),
                vec![
                    json!({"point": {"x": 1, "y": 2.5}}),
                    json!({"point": {"x": 1.0, "y": 2}, "tags": ["a", "b"]}),
                    json!({"point": {"x": -1, "y": 2}}),
                    json!({"point": {"x": 1, "y": 2.3}}),
                    json!({"point": {"x": 1}}),
                    json!({"point": {"x": 1, "y": 1}, "tags": ["a", "a"]}),
                    json!({"point": {"x": 1, "y": 1}, "tags": ["a", "b", "c", "d"]}),
                    json!({"point": {"x": 1, "y": 1}, "tags": [""]}),
                    json!({"point": {"x": 1, "y": 1}, "extra": 1}),
                    json!({}),
                    json!([1]),
                ],
            ),
            (
                json!({"type": "object", "properties": {"shape": {"oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "exclusiveMinimum": 0}}, "required": ["kind", "r"]},
                    {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}]}}}),
                vec![
                    json!({"shape": {"kind": "circle", "r": 1}}),
                    json!({"shape": {"kind": "square", "side": 2}}),
                    json!({"shape": {"kind": "circle", "r": 0}}),
                    json!({"shape": {"kind": "triangle"}}),
                    json!({"shape": 3}),
                ],
            ),
            (
                json!({"type": "object", "properties": {"v": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
                       "n": {"not": {"type": "string"}}, "t": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": false, "minItems": 1}},
                       "minProperties": 1, "maxProperties": 2}),
                vec![
                    json!({"v": "a"}),
                    json!({"v": null}),
                    json!({"v": "c"}),
                    json!({"n": 1}),
                    json!({"n": "x"}),
                    json!({"t": [1, true]}),
                    json!({"t": [1, true, 3]}),
                    json!({"t": []}),
                    json!({"t": ["1"]}),
                    json!({}),
                    json!({"v": "a", "n": 1, "t": [1]}),
                ],
            ),
            (
                json!({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}, "day": {"format": "date"},
                       "id": {"format": "uuid"}, "ip": {"format": "ipv4"}, "ip6": {"format": "ipv6"}, "at": {"format": "time"}},
                       "if": {"required": ["when"]}, "then": {"required": ["day"]}, "else": {"properties": {"id": {"type": "string"}}}}),
                vec![
                    json!({"when": "2026-12-03T16:34:10Z", "day": "2024-02-29"}),
                    json!({"when": "2026-12-03T16:34:10.5+01:00", "day": "2026-12-03"}),
                    json!({"when": "2026-12-03 16:34:10Z", "day": "2026-12-03"}),
                    json!({"when": "2026-12-03T16:34:10Z"}),
                    json!({"when": "2026-12-03T16:34:10Z", "day": "2023-02-29"}),
                    json!({"id": "123e4567-e89b-12d3-a456-426614174000"}),
                    json!({"id": "123e4567-e89b-12d3-a456-42661417400"}),
                    json!({"id": 5}),
                    json!({"ip": "10.0.0.1"}),
                    json!({"ip": "10.0.0.256"}),
                    json!({"ip6": "::1"}),
                    json!({"ip6": "::g"}),
                    json!({"at": "23:59:60Z"}),
                    json!({"at": "24:00:00Z"}),
                ],
            ),
            (
                json!({"type": "object", "properties": {"child": {"$ref": "#"}, "name": {"type": "string", "maxLength": 2}}, "additionalProperties": {"type": "integer"}}),
                vec![
                    json!({"child": {"child": {"name": "ab"}}}),
                    json!({"child": {"child": {"name": "abc"}}}),
                    json!({"n": 1}),
                    json!({"n": "1"}),
                ],
            ),
        ];
        let (mut passed, mut failed) = (0, 0);
        for (schema, instances) in cases {
            for instance in instances {
                let verdict = ours(&schema, &instance);
                assert_eq!(verdict.is_ok(), full(&schema, &instance), "{schema}\n{instance}\n{verdict:?}");
                if verdict.is_ok() {
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
        }
        assert!(passed >= 10 && failed >= 20, "{passed} passed, {failed} failed");
    }

    #[test]
    fn says_where_and_what() {
        let schema = json!({"type": "object", "properties": {"p": {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}}, "required": ["q"]});
        let problems = ours(&schema, &json!({"p": {"xs": [1, "two"]}})).unwrap_err();
        assert_eq!(problems, vec!["\"q\" is a required property", "at /p/xs/1: \"two\" is not of type \"integer\""]);
    }

    #[test]
    fn refuses_what_it_cannot_check() {
        for schema in [
            json!({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]+$"}}}),
            json!({"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}}),
            json!({"type": "object", "unevaluatedProperties": false}),
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}),
        ] {
            let error = StructuralSchema::compile(schema.as_object().unwrap()).unwrap_err();
            assert!(error.contains("`jsonschema` feature"), "{error}");
        }
        // Unknown keywords are annotations; an unknown format only describes.
        let schema = json!({"type": "object", "x-ui": {"order": 1}, "properties": {"c": {"format": "color"}}});
        assert!(ours(&schema, &json!({"c": "red"})).is_ok());
    }

    /// schemars writes `uniqueItems` for a `HashSet` argument: a million items are judged with
    /// about one comparison each (hashing), not half a million each (every pair).
    #[test]
    fn unique_items_take_linear_work() {
        let distinct: Vec<Value> = (0..1_000_000u64)
            .map(|i| match i % 4 {
                0 => json!(i),
                1 => json!(format!("s{i}")),
                2 => json!([i, "x"]),
                _ => json!([[i], true]),
            })
            .collect();
        let (found, compared) = first_duplicate_counted(&distinct);
        assert!(!found);
        assert!(compared < 1_000, "{compared} comparisons for distinct items (collisions of 64-bit hashes only)");
        let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}});
        let instance = json!({"tags": distinct});
        assert!(ours(&schema, &instance).is_ok());
        // Equal as JSON Schema compares them: numbers by value, objects in any order.
        for (a, b) in [
            (json!(1), json!(1.0)),
            (json!(0), json!(-0.0)),
            (json!({"a": 1, "b": [2]}), json!({"b": [2.0], "a": 1})),
            (json!([1, {"x": null}]), json!([1.0, {"x": null}])),
        ] {
            let (found, compared) = first_duplicate_counted(&[json!("other"), a.clone(), json!(7), b.clone()]);
            assert!(found && compared >= 1, "{a} and {b}");
            assert!(ours(&schema, &json!({"tags": [a, b]})).is_err());
        }
        for (a, b) in
            [(json!("1"), json!(1)), (json!([1, 2]), json!([2, 1])), (json!({"a": 1}), json!({"a": 1, "b": 1}))]
        {
            assert!(!first_duplicate_counted(&[a.clone(), b.clone()]).0, "{a} and {b}");
        }
    }

    /// Checking stops at the tenth problem: a million bad items are not all looked at, and a
    /// problem's value is shown by its start without writing it out whole.
    #[test]
    fn checking_stops_at_the_tenth_problem_and_shows_little() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "array", "items": {"type": "integer"}}}});
        let compiled = StructuralSchema::compile(schema.as_object().unwrap()).unwrap();
        let bad: Vec<Value> = (0..1_000_000).map(|i| json!(format!("{i}"))).collect();
        let mut problems = Problems::new(MAX_PROBLEMS);
        compiled.check_node(&compiled.root, &json!({"n": bad}), &mut String::new(), 0, &mut problems);
        assert_eq!(problems.list.len(), 10);
        assert!(problems.looked_at < 100, "{} values looked at", problems.looked_at);
        let huge = json!({"n": ["é".repeat(4 * 1024 * 1024)]});
        let problems = compiled.check(&huge).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].chars().count() < 120, "{}", problems[0]);
        let many: serde_json::Map<String, Value> = (0..100_000).map(|i| (format!("k{i}"), json!(i))).collect();
        let closed = json!({"type": "object", "additionalProperties": false});
        let message = ours(&closed, &Value::Object(many)).unwrap_err().remove(0);
        assert!(message.len() < 200 && message.contains("and 99995 more were unexpected"), "{message}");
    }

    #[test]
    fn a_reference_loop_ends() {
        let schema = json!({"type": "object", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "properties": {"a": {"$ref": "#/$defs/A"}}});
        let problems = ours(&schema, &json!({"a": 1})).unwrap_err();
        assert!(problems[0].contains("deeper"), "{problems:?}");
    }
}
