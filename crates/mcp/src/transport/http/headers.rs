//! The request headers a POST is checked by: 2026-07-28's request-metadata headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) against the body, and the `Mcp-Param-*`
//! headers against the `tools/call` arguments annotated `x-mcp-header` (read in place, the others
//! skipped); plus how a header is read (`=?base64?...?=` values decoded).

use http::HeaderMap;
use mcp_types::{ErrorCode, ErrorObject};
use serde_json::value::RawValue;

use crate::server::head::ParamsHead;

/// The header naming a legacy session.
pub(super) const SESSION: &str = "mcp-session-id";

/// A header's value, if it is visible ASCII.
pub(super) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// 2026-07-28: the request-metadata headers must be present and match the body, and arguments
/// annotated `x-mcp-header` must be mirrored in `Mcp-Param-*`.
pub(super) fn check_modern_headers(
    router: &crate::server::Router,
    headers: &HeaderMap,
    method: &str,
    params: Option<&RawValue>,
    head: &ParamsHead<'_>,
) -> Result<(), ErrorObject> {
    check_metadata_headers(headers, method, head)?;
    check_param_headers(router, headers, method, head.name().as_deref(), params)
}

fn check_metadata_headers(headers: &HeaderMap, method: &str, body: &ParamsHead<'_>) -> Result<(), ErrorObject> {
    let mismatch = |what: String| ErrorObject::new(ErrorCode::HEADER_MISMATCH, format!("Header mismatch: {what}"));
    let version = body.version();
    let version = version.as_deref().unwrap_or("");
    match header(headers, "mcp-protocol-version") {
        Some(h) if h == version => {}
        Some(h) => return Err(mismatch(format!("MCP-Protocol-Version header {h:?} does not match body {version:?}"))),
        None => return Err(mismatch("the MCP-Protocol-Version header is required".into())),
    }
    match header(headers, "mcp-method") {
        Some(h) if h == method => {}
        Some(h) => return Err(mismatch(format!("Mcp-Method header {h:?} does not match body method {method:?}"))),
        None => return Err(mismatch("the Mcp-Method header is required".into())),
    }
    let mirrored = match method {
        "tools/call" | "prompts/get" => Some(body.name()),
        "resources/read" => Some(body.uri()),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some(body.task_id()),
        _ => None,
    };
    if let Some(field) = mirrored {
        let expected = field.as_deref().unwrap_or("");
        match header(headers, "mcp-name").map(decode_header_value) {
            Some(Some(h)) if h == expected => {}
            Some(Some(h)) => {
                return Err(mismatch(format!("Mcp-Name header value {h:?} does not match body value {expected:?}")))
            }
            Some(None) => return Err(mismatch("the Mcp-Name header is not valid base64".into())),
            None => return Err(mismatch("the Mcp-Name header is required".into())),
        }
    }
    Ok(())
}

/// `tools/call`: arguments annotated `x-mcp-header` must be mirrored, equal, in `Mcp-Param-*`.
/// Only for a tool that has such arguments are they read, and then only those (no tree).
fn check_param_headers(
    router: &crate::server::Router,
    headers: &HeaderMap,
    method: &str,
    name: Option<&str>,
    params: Option<&RawValue>,
) -> Result<(), ErrorObject> {
    let Some(name) = name.filter(|_| method == "tools/call") else { return Ok(()) };
    let annotated = router.header_params(name);
    if annotated.is_empty() {
        return Ok(());
    }
    let wanted: Vec<&str> = annotated.iter().map(|(arg, _, _)| arg.as_str()).collect();
    let values = picked::arguments(params, &wanted)?;
    let mismatch = |what: String| ErrorObject::new(ErrorCode::HEADER_MISMATCH, format!("Header mismatch: {what}"));
    for ((arg, suffix, kind), value) in annotated.iter().zip(values) {
        let header_name = format!("mcp-param-{}", suffix.to_ascii_lowercase());
        let present = headers.get(&header_name);
        match (value, present) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!("Mcp-Param-{suffix} is set but {arg} is absent from the body")))
            }
            (Some(_), None) => {
                return Err(mismatch(format!("the Mcp-Param-{suffix} header is required when {arg} is given")))
            }
            (Some(value), Some(raw)) => {
                let raw = raw.to_str().map_err(|_| mismatch(format!("Mcp-Param-{suffix} has invalid characters")))?;
                let decoded = decode_header_value(raw)
                    .ok_or_else(|| mismatch(format!("Mcp-Param-{suffix} is not valid base64")))?;
                if !header_matches(&decoded, value, kind) {
                    return Err(mismatch(format!(
                        "Mcp-Param-{suffix} value {decoded:?} does not match body value {}",
                        picked::shown(value)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Whether a header's value is the argument `body` (JSON text): a string, a boolean or a number.
fn header_matches(header: &str, body: &RawValue, kind: &str) -> bool {
    let text = body.get();
    match text.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<String>(text).is_ok_and(|s| header == s),
        Some(b't' | b'f') => header == text,
        Some(b'-' | b'0'..=b'9') => {
            let Ok(n) = serde_json::from_str::<serde_json::Number>(text) else { return false };
            if kind == "integer" || kind == "number" {
                header.trim().parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(h, b)| (h - b).abs() < 1e-9)
            } else {
                header == n.to_string()
            }
        }
        _ => false,
    }
}

mod picked {
    //! Some arguments of a `tools/call`, read in place, the others skipped.

    use std::borrow::Cow;
    use std::fmt;

    use mcp_types::ErrorObject;
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    use serde_json::value::RawValue;

    /// The arguments named in `wanted`, in its order, each as JSON text (`None`: absent or
    /// `null`). `arguments`, or one of the wanted arguments, given twice is refused.
    pub(super) fn arguments<'a>(
        params: Option<&'a RawValue>,
        wanted: &[&str],
    ) -> Result<Vec<Option<&'a RawValue>>, ErrorObject> {
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(borrow, default)]
            arguments: Option<&'a RawValue>,
        }
        let refused = |e: serde_json::Error| ErrorObject::invalid_params(format!("invalid params: arguments: {e}"));
        let none = vec![None; wanted.len()];
        let Some(params) = params else { return Ok(none) };
        let Some(arguments) = serde_json::from_str::<Params>(params.get()).map_err(refused)?.arguments else {
            return Ok(none);
        };
        if !arguments.get().starts_with('{') {
            return Ok(none); // not an object: the tool's schema says so
        }
        let mut de = serde_json::Deserializer::from_str(arguments.get());
        Pick { wanted }.deserialize(&mut de).map_err(refused)
    }

    /// A value as an error message shows it: its first 60 characters.
    pub(super) fn shown(value: &RawValue) -> Cow<'_, str> {
        let text = value.get();
        match text.char_indices().nth(60) {
            None => Cow::Borrowed(text),
            Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
        }
    }

    struct Pick<'w> {
        wanted: &'w [&'w str],
    }

    impl<'de> DeserializeSeed<'de> for Pick<'_> {
        type Value = Vec<Option<&'de RawValue>>;

        fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Pick<'_> {
        type Value = Vec<Option<&'de RawValue>>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of arguments")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = vec![None; self.wanted.len()];
            let mut seen = vec![false; self.wanted.len()];
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match self.wanted.iter().position(|w| *w == key) {
                    Some(i) if seen[i] => {
                        return Err(serde::de::Error::custom(format_args!("duplicate field `{key}`")))
                    }
                    Some(i) => {
                        seen[i] = true;
                        let value: &'de RawValue = map.next_value()?;
                        found[i] = Some(value).filter(|v| v.get() != "null");
                    }
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
    }
}

/// Header values that are not plain ASCII travel as `=?base64?...?=`.
fn decode_header_value(value: &str) -> Option<String> {
    use base64::Engine as _;
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => {
            base64::engine::general_purpose::STANDARD.decode(encoded).ok().and_then(|b| String::from_utf8(b).ok())
        }
        None => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        serde_json::from_str(text).unwrap()
    }

    /// The annotated arguments are read in place, whatever the others hold.
    #[test]
    fn picked_arguments_are_read_in_place() {
        let params = raw(r#"{"name":"t","arguments":{"big":[[[1]]],"region":"eu","n":null,"id":7}}"#);
        let got = picked::arguments(Some(&params), &["region", "n", "id", "missing"]).unwrap();
        let texts: Vec<Option<&str>> = got.iter().map(|v| v.map(RawValue::get)).collect();
        assert_eq!(texts, vec![Some("\"eu\""), None, Some("7"), None]);
        assert!(header_matches("eu", got[0].unwrap(), "string"));
        assert!(header_matches("7.0", got[2].unwrap(), "integer"));
        assert!(!header_matches("7.0", got[2].unwrap(), "string"));
        for twice in
            [r#"{"arguments":{"region":"eu","region":"us"}}"#, r#"{"arguments":{"region":null,"region":"us"}}"#]
        {
            let e = picked::arguments(Some(&raw(twice)), &["region"]).unwrap_err();
            assert!(e.message.contains("duplicate field `region`"), "{}", e.message);
        }
        assert!(picked::arguments(Some(&raw(r#"{"arguments":{},"arguments":{}}"#)), &["region"]).is_err());
        assert!(picked::arguments(Some(&raw(r#"{"arguments":[1]}"#)), &["a"]).unwrap()[0].is_none());
        let long = raw(&format!("[{}]", vec!["1"; 100].join(",")));
        assert_eq!(picked::shown(&long).chars().count(), 61);
    }
}
