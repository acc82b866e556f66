//! JSON Schemas derived from Rust types (schemars) and enforced on input.
//!
//! A tool's argument type derives `JsonSchema`; its schema is generated once, compiled once,
//! and checked before the handler runs, so a handler only ever sees arguments that match. Flat
//! schemas are checked in place; others by the `jsonschema` crate (feature `jsonschema`, on by
//! default) or, without it, by the structural checks of `structural_schema`, which refuse a
//! schema using a keyword they do not check.

#[cfg(feature = "jsonschema")]
use jsonschema::Validator;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use mcp_types::JsonObject;

/// The JSON Schema (2020-12) of `T`, without the `$schema` and `title` keys that MCP does not need.
pub fn schema_for<T: JsonSchema>() -> JsonObject {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(map) => map,
        Value::Bool(true) => Map::new(),
        other => {
            let mut map = Map::new();
            map.insert("allOf".into(), Value::Array(vec![other]));
            map
        }
    };
    object.remove("$schema");
    object.remove("title");
    for value in object.values_mut() {
        drop_numeric_formats(value);
    }
    object
}

/// Removes the `format`s schemars gives numbers (`uint`, `int64`, `double`...): JSON Schema
/// defines none of them, clients warn about them, and the bounds they imply are already there
/// as `minimum` and `maximum`.
fn drop_numeric_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let numeric = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                let digits = f.trim_start_matches("uint").trim_start_matches("int");
                f == "double"
                    || f == "float"
                    || ((f.starts_with("int") || f.starts_with("uint")) && digits.bytes().all(|b| b.is_ascii_digit()))
            });
            if numeric {
                map.remove("format");
            }
            for v in map.values_mut() {
                drop_numeric_formats(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_numeric_formats),
        _ => {}
    }
}

/// A tool's `inputSchema`: the schema of `T`, with `type: "object"` at the root as MCP requires.
pub fn input_schema_for<T: JsonSchema>() -> JsonObject {
    let mut object = schema_for::<T>();
    object.remove("description"); // the tool's own description says it, for the model

    match object.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None if object.contains_key("properties") || object.is_empty() => {
            object.insert("type".into(), "object".into());
        }
        _ => {
            // Not an object at the root (an enum, a tuple): keep it reachable but object-typed.
            let inner = Value::Object(std::mem::take(&mut object));
            object.insert("type".into(), "object".into());
            object.insert("allOf".into(), Value::Array(vec![inner]));
        }
    }
    object
}

/// A compiled schema that explains every violation in words a model can act on.
pub struct CompiledSchema {
    inner: Compiled,
}

enum Compiled {
    /// The common flat shape, checked directly.
    Flat(super::flat_schema::FlatSchema),
    /// Everything else, by the general validator.
    #[cfg(feature = "jsonschema")]
    General(Box<Validator>),
    /// Everything else, by the structural checks (built without `jsonschema`).
    #[cfg(not(feature = "jsonschema"))]
    General(Box<super::structural_schema::StructuralSchema>),
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledSchema")
    }
}

impl CompiledSchema {
    /// Compiles a schema; `Err` names what is wrong with it.
    pub fn compile(schema: &JsonObject) -> Result<Self, String> {
        if let Some(flat) = super::flat_schema::FlatSchema::from_schema(schema) {
            return Ok(CompiledSchema { inner: Compiled::Flat(flat) });
        }
        Self::compile_general(schema).map(|general| CompiledSchema { inner: Compiled::General(Box::new(general)) })
    }

    #[cfg(feature = "jsonschema")]
    fn compile_general(schema: &JsonObject) -> Result<Validator, String> {
        let value = Value::Object(schema.clone());
        jsonschema::options()
            .should_validate_formats(true)
            .build(&value)
            .map_err(|e| format!("invalid JSON Schema: {e}"))
    }

    #[cfg(not(feature = "jsonschema"))]
    fn compile_general(schema: &JsonObject) -> Result<super::structural_schema::StructuralSchema, String> {
        super::structural_schema::StructuralSchema::compile(schema).map_err(|e| format!("invalid JSON Schema: {e}"))
    }

    /// Whether the general validator handles this schema (it is not a flat one).
    pub fn is_general(&self) -> bool {
        matches!(self.inner, Compiled::General(_))
    }

    /// Checks the JSON text of an instance. A flat schema reads the text in place (no tree is
    /// built: `Ok(None)`); the general validator needs the tree, built within `budget` bytes and
    /// returned when it matches (`Ok(Some(tree))`).
    pub(crate) fn check_text(&self, text: &str, budget: usize) -> Result<Option<Value>, Vec<String>> {
        if let Compiled::Flat(flat) = &self.inner {
            return flat.check_text(text).map(|()| None);
        }
        let value = super::bounded::parse(text, budget).map_err(|e| vec![format!("the arguments are {e}")])?;
        self.check(&value)?;
        Ok(Some(value))
    }

    /// `Ok` when `instance` matches, else one line per violation (at most 10), each naming where.
    pub fn check(&self, instance: &Value) -> Result<(), Vec<String>> {
        match &self.inner {
            Compiled::Flat(flat) => flat.check(instance),
            Compiled::General(general) => check_general(general, instance),
        }
    }
}

#[cfg(not(feature = "jsonschema"))]
fn check_general(general: &super::structural_schema::StructuralSchema, instance: &Value) -> Result<(), Vec<String>> {
    general.check(instance)
}

#[cfg(feature = "jsonschema")]
fn check_general(validator: &Validator, instance: &Value) -> Result<(), Vec<String>> {
    if validator.is_valid(instance) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(instance)
        .take(10)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                format!("{e}")
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect();
    Err(problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Sum {
        /// First.
        a: f64,
        b: f64,
    }

    #[test]
    fn numbers_carry_bounds_not_made_up_formats() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Counts {
            n: usize,
            small: u8,
            ratio: f64,
            list: Vec<u32>,
            when: String,
        }
        let schema = Value::Object(input_schema_for::<Counts>());
        let text = schema.to_string();
        assert!(!text.contains("\"format\""), "{text}");
        assert_eq!(schema["properties"]["n"]["minimum"], 0);
        assert_eq!(schema["properties"]["small"]["maximum"], 255);
    }

    #[test]
    fn derives_an_object_schema_and_rejects_bad_input() {
        let schema = input_schema_for::<Sum>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        let compiled = CompiledSchema::compile(&schema).unwrap();
        assert!(compiled.check(&serde_json::json!({"a": 1, "b": 2})).is_ok());
        let errors = compiled.check(&serde_json::json!({"a": "x"})).unwrap_err();
        assert!(errors.iter().any(|e| e.contains("/a")), "{errors:?}");
        assert!(errors.iter().any(|e| e.contains("\"b\"")), "{errors:?}");
    }
}

/// The flat checks give the general validator's verdicts (tested here, above both).
#[cfg(test)]
mod flat_agrees_with_general {
    use mcp_types::JsonObject;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::super::flat_schema::{FlatSchema, TYPES};

    #[cfg(feature = "jsonschema")]
    fn general(schema: &JsonObject, instance: &Value) -> bool {
        jsonschema::options().build(&Value::Object(schema.clone())).unwrap().is_valid(instance)
    }

    /// Without the `jsonschema` feature, the general checks are the structural ones.
    #[cfg(not(feature = "jsonschema"))]
    fn general(schema: &JsonObject, instance: &Value) -> bool {
        crate::server::structural_schema::StructuralSchema::compile(schema).unwrap().check(instance).is_ok()
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
            prop_assert_eq!(flat.check_text(&value.to_string()).is_ok(), general(&schema, &value), "streamed: schema {} instance {}", Value::Object(schema.clone()), value);
        }
    }
}
