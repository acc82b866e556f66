//! Untrusted JSON parsed into a [`Value`] under a memory budget.
//!
//! A JSON text can take far more memory as a tree than as text: every small object is a map with
//! its own node (about 600 bytes for `{"a":1}`, 7 bytes of text), so 8 MiB of nested objects
//! would become half a gigabyte. Arguments, answers and capabilities from a peer are parsed here
//! instead: the parse stops, with a clear message, as soon as the tree it builds would pass the
//! budget.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The budget a peer's value may take in memory, by default (16 MiB).
pub(crate) const DEFAULT_BUDGET: usize = 16 * 1024 * 1024;

/// What one value costs beyond its own slot, roughly as the allocator sees it.
const STRING_HEADER: usize = 16;
const ARRAY_SLOT: usize = std::mem::size_of::<Value>();
const OBJECT_NODE: usize = 640;
const OBJECT_ENTRY: usize = 64;

/// Parses `text` into a value that takes at most about `budget` bytes; `Err` explains.
pub(crate) fn parse(text: &str, budget: usize) -> Result<Value, String> {
    let remaining = Cell::new(budget);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Bounded(&remaining).deserialize(&mut de).map_err(|e| describe(e, budget))?;
    de.end().map_err(|e| describe(e, budget))?;
    Ok(value)
}

fn describe(e: serde_json::Error, budget: usize) -> String {
    if e.to_string().starts_with(TOO_LARGE) {
        format!("{TOO_LARGE} (more than {} MiB in memory)", budget / (1024 * 1024))
    } else {
        format!("not valid JSON: {e}")
    }
}

const TOO_LARGE: &str = "the value is too large to take";

/// The most memory one byte of JSON text can take as a tree, as the budget counts it: `{}`
/// repeated in an array (3 bytes each, with the comma) counts a map node of 640 bytes each.
const MOST_PER_BYTE: usize = 256;

/// Whether `text` is too short to pass `budget` as a tree, whatever its shape: it may then be
/// read without counting.
pub(crate) fn cannot_outgrow(text: &str, budget: usize) -> bool {
    text.len() <= budget / MOST_PER_BYTE
}

#[derive(Clone, Copy)]
struct Bounded<'b>(&'b Cell<usize>);

impl Bounded<'_> {
    fn spend<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        match self.0.get().checked_sub(bytes) {
            Some(left) => {
                self.0.set(left);
                Ok(())
            }
            None => Err(E::custom(TOO_LARGE)),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.spend(v.len() + STRING_HEADER)?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.spend(v.len() + STRING_HEADER)?;
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.spend(ARRAY_SLOT)?;
            match seq.next_element_seed(self)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend(OBJECT_NODE)?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            self.spend(key.len() + OBJECT_ENTRY)?;
            let value = map.next_value_seed(self)?;
            object.insert(key.into_owned(), value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_serde_json_within_the_budget() {
        let text = r#"{"a":[1,-2,3.5,true,null,"é\n"],"b":{"c":{}},"d":18446744073709551615}"#;
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parse(text, DEFAULT_BUDGET).unwrap(), expected);
    }

    #[test]
    fn stops_at_the_budget_however_the_text_is_shaped() {
        let mut deep = String::from("1");
        for _ in 0..60 {
            deep = format!("{{\"k\":[{deep}]}}");
        }
        let many = format!("[{}]", vec![deep.as_str(); 2000].join(","));
        let e = parse(&many, 1024 * 1024).unwrap_err();
        assert!(e.contains("too large"), "{e}");
        let wide = format!("[{}]", vec!["1"; 100_000].join(","));
        assert!(parse(&wide, 1024 * 1024).is_err());
        assert!(parse(&wide, DEFAULT_BUDGET).is_ok());
        assert!(parse("[1,", DEFAULT_BUDGET).unwrap_err().contains("not valid JSON"));
        assert!(parse("1 2", DEFAULT_BUDGET).is_err(), "trailing characters");
    }

    /// As the budget counts them, the costliest shapes take less than [`MOST_PER_BYTE`] bytes of
    /// tree per byte of text: a text [`cannot_outgrow`] accepts is one the budget would pass.
    #[test]
    fn no_shape_takes_more_than_the_bound_per_byte() {
        for item in [r#"{"":0}"#, "[[]]", "[0]", r#""""#, "{}", "0", r#"{"a":{"b":{}}}"#] {
            let text = format!("[{}]", vec![item; 1000].join(","));
            let cost = DEFAULT_BUDGET - {
                let remaining = Cell::new(DEFAULT_BUDGET);
                let mut de = serde_json::Deserializer::from_str(&text);
                Bounded(&remaining).deserialize(&mut de).unwrap();
                remaining.get()
            };
            assert!(cost / text.len() < MOST_PER_BYTE, "{item}: {} bytes per byte", cost / text.len());
        }
        assert!(cannot_outgrow(&"x".repeat(DEFAULT_BUDGET / MOST_PER_BYTE), DEFAULT_BUDGET));
        assert!(!cannot_outgrow(&"x".repeat(DEFAULT_BUDGET / MOST_PER_BYTE + 1), DEFAULT_BUDGET));
    }
}
