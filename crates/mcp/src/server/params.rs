//! Typed parameters from string values: URI template variables and prompt arguments arrive as
//! strings, and this deserializer parses each into whatever the target field wants (`u32`,
//! `bool`, `String`, an enum...), with serde's error naming the field when it cannot.

use std::collections::BTreeMap;

use serde::de::value::{Error, MapDeserializer};
use serde::de::{DeserializeOwned, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

/// Deserializes `T` from a map of string values.
pub fn from_strings<T: DeserializeOwned>(values: BTreeMap<String, String>) -> Result<T, Error> {
    let map = MapDeserializer::new(values.into_iter().map(|(k, v)| (k, StrValue(v))));
    T::deserialize(map)
}

/// One string value that parses itself into the type asked for.
struct StrValue(String);

impl<'de> IntoDeserializer<'de, Error> for StrValue {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

macro_rules! parse_as {
    ($($method:ident => $visit:ident: $ty:ty),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.trim().parse::<$ty>() {
                Ok(v) => visitor.$visit(v),
                Err(_) => Err(serde::de::Error::custom(format!(
                    "{:?} is not a valid {}", self.0, stringify!($ty)
                ))),
            }
        }
    )*};
}

impl<'de> serde::Deserializer<'de> for StrValue {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_string(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    parse_as! {
        deserialize_bool => visit_bool: bool,
        deserialize_i8 => visit_i8: i8,
        deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32,
        deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64,
        deserialize_f32 => visit_f32: f32,
        deserialize_f64 => visit_f64: f64,
    }

    forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    struct P {
        id: u32,
        name: String,
        flag: Option<bool>,
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn parses_each_field_as_its_type() {
        let p: P = from_strings(map(&[("id", "42"), ("name", "7"), ("flag", "true")])).unwrap();
        assert_eq!(p, P { id: 42, name: "7".into(), flag: Some(true) });
        let e = from_strings::<P>(map(&[("id", "x"), ("name", "n")])).unwrap_err();
        assert!(e.to_string().contains("u32"), "{e}");
        assert!(from_strings::<P>(map(&[("id", "1")])).is_err(), "missing name");
    }
}
