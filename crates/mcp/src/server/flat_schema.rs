//! The fast path of argument validation: flat object schemas of primitive properties, the shape
//! most tools declare (and what schemars derives for a struct of strings, numbers and booleans).
//!
//! Checked directly, with the same verdicts as the general validator (a property test compares
//! them) and messages in its style. It also spares the general validator's one-time set-up
//! (about 1.5 ms) for servers whose tools all fit. Anything else goes to `jsonschema`.

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
const TYPES: &[&str] = &["string", "number", "integer", "boolean", "null"];

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
            return Err(vec![format!("{instance} is not of type \"object\"")]);
        };
        let mut problems = Vec::new();
        for name in &self.required {
            if !object.contains_key(name) {
                problems.push(format!("{} is a required property", Value::String(name.clone())));
            }
        }
        for (name, value) in object {
            match self.properties.iter().find(|(p, _)| p == name) {
                Some((_, rule)) => rule.check(&format!("/{}", escape(name)), value, &mut problems),
                None if !self.additional => {
                    problems.push(format!("Additional properties are not allowed ('{name}' was unexpected)"));
                }
                None => {}
            }
        }
        problems.truncate(10);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
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

    fn has_type(&self, value: &Value) -> bool {
        self.types.iter().any(|t| match (t.as_str(), value) {
            ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("null", Value::Null) => true,
            ("number", Value::Number(_)) => true,
            ("integer", Value::Number(n)) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
            _ => false,
        })
    }

    fn check(&self, path: &str, value: &Value, problems: &mut Vec<String>) {
        if !self.has_type(value) {
            let quoted: Vec<String> = self.types.iter().map(|t| format!("\"{t}\"")).collect();
            let noun = if quoted.len() == 1 { "type" } else { "types" };
            problems.push(format!("at {path}: {value} is not of {noun} {}", quoted.join(", ")));
            return;
        }
        if let Some(values) = &self.enumeration {
            if !values.iter().any(|v| same(v, value)) {
                let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                problems.push(format!("at {path}: {value} is not one of [{}]", listed.join(", ")));
            }
        }
        if let Some(n) = value.as_f64() {
            let checks = [
                (self.minimum.is_some_and(|m| n < m), "less than the minimum of", self.minimum),
                (self.maximum.is_some_and(|m| n > m), "greater than the maximum of", self.maximum),
                (
                    self.exclusive_minimum.is_some_and(|m| n <= m),
                    "less than or equal to the minimum of",
                    self.exclusive_minimum,
                ),
                (
                    self.exclusive_maximum.is_some_and(|m| n >= m),
                    "greater than or equal to the maximum of",
                    self.exclusive_maximum,
                ),
            ];
            for (broken, words, bound) in checks {
                if broken {
                    problems.push(format!("at {path}: {value} is {words} {}", bound.unwrap_or_default()));
                }
            }
        }
        if let Value::String(s) = value {
            let chars = s.chars().count() as u64;
            if self.min_length.is_some_and(|m| chars < m) {
                problems
                    .push(format!("at {path}: {value} is shorter than {} characters", self.min_length.unwrap_or(0)));
            }
            if self.max_length.is_some_and(|m| chars > m) {
                problems.push(format!("at {path}: {value} is longer than {} characters", self.max_length.unwrap_or(0)));
            }
        }
    }
}

/// JSON equality where numbers compare by value (1 and 1.0 are one number).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A JSON Pointer segment.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn general(schema: &JsonObject, instance: &Value) -> bool {
        jsonschema::options().build(&Value::Object(schema.clone())).unwrap().is_valid(instance)
    }

    fn property() -> impl Strategy<Value = Value> {
        let types = prop::sample::subsequence(TYPES.to_vec(), 1..3);
        (types, any::<Option<i8>>(), any::<Option<i8>>(), any::<Option<u8>>(), any::<Option<u8>>(), any::<bool>())
            .prop_map(|(types, min, max, min_len, max_len, with_enum)| {
                let mut p = serde_json::Map::new();
                p.insert("type".into(), if types.len() == 1 { json!(types[0]) } else { json!(types) });
                if let Some(m) = min {
                    p.insert("minimum".into(), json!(m));
                }
                if let Some(m) = max {
                    p.insert("exclusiveMaximum".into(), json!(m));
                }
                if let Some(m) = min_len {
                    p.insert("minLength".into(), json!(m % 5));
                }
                if let Some(m) = max_len {
                    p.insert("maxLength".into(), json!(m % 7));
                }
                if with_enum {
                    p.insert("enum".into(), json!(["a", 1, 2.5, true, null, "é"]));
                }
                Value::Object(p)
            })
    }

    fn schema() -> impl Strategy<Value = JsonObject> {
        (
            prop::collection::btree_map("[a-c]", property(), 0..3),
            any::<bool>(),
            prop::sample::subsequence(vec!["a", "b", "c"], 0..3),
        )
            .prop_map(|(props, additional, required)| {
                let mut s = serde_json::Map::new();
                s.insert("type".into(), json!("object"));
                s.insert("properties".into(), Value::Object(props.into_iter().collect()));
                s.insert("additionalProperties".into(), json!(additional));
                s.insert("required".into(), json!(required));
                s
            })
    }

    fn instance() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-300i64..300).prop_map(Value::from),
            (-300.0f64..300.0).prop_map(|f| json!((f * 4.0).round() / 4.0)),
            "[a-zé]{0,8}".prop_map(Value::from),
            Just(json!([1])),
            Just(json!({"x": 1})),
        ];
        prop_oneof![
            4 => prop::collection::btree_map("[a-d]", leaf.clone(), 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
            1 => leaf,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn agrees_with_the_general_validator(schema in schema(), value in instance()) {
            let flat = FlatSchema::from_schema(&schema).expect("the generated schemas are flat");
            prop_assert_eq!(flat.check(&value).is_ok(), general(&schema, &value), "schema {} instance {}", Value::Object(schema.clone()), value);
        }
    }

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
