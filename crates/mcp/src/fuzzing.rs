//! Entry points for the fuzz targets (`fuzz/`, cargo-fuzz): the readers of what strangers send
//! that live inside the crate, reachable from outside it. Built only with the `fuzzing` feature;
//! not an API (nothing here is stable).

use mcp_types::{ErrorObject, JsonObject};
use serde_json::Value;

/// What the one reader of a request's params head takes from `params`: whether it is a
/// 2026-07-28 request, and the item `method` names.
pub fn params_head(method: &str, params: Option<&str>) -> Result<(bool, Option<String>), ErrorObject> {
    let head = crate::server::head::ParamsHead::read_text(params)?;
    Ok((head.is_modern(), head.named(method).map(std::borrow::Cow::into_owned)))
}

/// What the middleware's `Call::name` reads.
pub fn named_item(method: &str, params: Option<&str>) -> Option<String> {
    crate::server::middleware::named_item(method, params)
}

/// A peer's value parsed under `budget` bytes of memory.
pub fn bounded_parse(text: &str, budget: usize) -> Result<Value, String> {
    crate::server::bounded::parse(text, budget)
}

/// The built-in structural check of `instance` against `schema` (`None`: the schema does not
/// compile), at most 10 problems.
pub fn structural_check(schema: &JsonObject, instance: &Value) -> Option<Result<(), Vec<String>>> {
    let compiled = crate::server::structural_schema::StructuralSchema::compile(schema).ok()?;
    Some(compiled.check(instance))
}

/// Whether two items are equal as `uniqueItems` judges them, and how many comparisons the
/// hashing check made to say so.
pub fn unique_items(items: &[Value]) -> (bool, usize) {
    crate::server::structural_schema::first_duplicate_counted(items)
}

/// Whether two values are equal as JSON Schema compares them (`1` and `1.0` are).
pub fn schema_equal(a: &Value, b: &Value) -> bool {
    crate::server::structural_schema::schema_equal(a, b)
}

/// The scopes the resource server's peek says a POST body needs, for `router`.
#[cfg(feature = "auth")]
pub fn needed_scopes(router: &crate::Router, body: &[u8]) -> Vec<String> {
    crate::auth::needed_scopes_of(router, body)
}

/// An authorization server's metadata document, read as the client reads it.
#[cfg(feature = "client-oauth")]
pub fn server_metadata(doc: &Value) -> Result<crate::client::auth::discovery::ServerMetadata, String> {
    let Value::Object(doc) = doc else { return Err("not an object".into()) };
    crate::client::auth::discovery::read_server_metadata(doc).map_err(|e| e.to_string())
}

/// A protected resource's metadata document, read as the client reads it: the resource and the
/// authorization server it names for `server_url`.
#[cfg(feature = "client-oauth")]
pub fn resource_metadata(doc: &Value, server_url: &str) -> Result<(String, String), String> {
    let said = crate::client::auth::discovery::read_resource_metadata(doc, server_url, |_| false)
        .map_err(|e| e.to_string())?;
    Ok((said.resource, said.issuer))
}
