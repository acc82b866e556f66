//! What the fuzz targets share: the router they serve, and how an input is cut into parts.

use mcp::server::{NoArgs, RequestContext, ResourceRequest, Router, ToolDef, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// `echo`'s arguments.
#[derive(Deserialize, JsonSchema)]
pub struct Echo {
    /// The text.
    pub text: String,
}

/// An argument mirrored in a header (`x-mcp-header`), another in the body only.
#[derive(Deserialize, JsonSchema)]
pub struct Regional {
    /// Mirrored in `Mcp-Param-Region`.
    #[schemars(extend("x-mcp-header" = "Region"))]
    pub region: String,
    /// Mirrored in `Mcp-Param-Count`.
    #[schemars(extend("x-mcp-header" = "Count"))]
    pub count: Option<i64>,
    /// Not mirrored.
    pub note: Option<String>,
}

/// A set of tags (schemars writes `uniqueItems`).
#[derive(Deserialize, JsonSchema)]
pub struct Tags {
    /// The tags.
    pub tags: std::collections::HashSet<String>,
}

#[derive(Deserialize)]
struct Item {
    id: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Greet {
    name: String,
}

/// A router with a little of everything a request can name: tools (one with header-mirrored
/// arguments, one behind a scope), a resource, a template, a prompt.
pub fn router() -> Router {
    Router::new()
        .info("fuzz", "1.0.0")
        .require_scopes(&["mcp"])
        .tool("echo", "Echo.", |a: Echo, _cx: RequestContext| async move { Ok::<_, ToolError>(a.text) })
        .tool("regional", "Regional.", |a: Regional, _cx: RequestContext| async move {
            Ok::<_, ToolError>(format!("{} {:?} {:?}", a.region, a.count, a.note))
        })
        .tool("tags", "Tags.", |a: Tags, _cx: RequestContext| async move { Ok::<_, ToolError>(a.tags.len().to_string()) })
        .tool_def(ToolDef::new("write").description("Writes.").scopes(&["files:write"]), |_: NoArgs, _cx: RequestContext| async move {
            Ok::<_, ToolError>("written")
        })
        .resource("test://static", "static", |_r: ResourceRequest, _cx: RequestContext| async move {
            Ok::<_, ToolError>("static text".to_owned())
        })
        .resource_template("test://items/{id}", "item", |r: ResourceRequest<Item>, _cx: RequestContext| async move {
            Ok::<_, ToolError>(format!("item {}", r.params.id))
        })
        .prompt("greet", "Greets.", |a: Greet, _cx: RequestContext| async move {
            Ok::<_, ToolError>(format!("Hello {}", a.name))
        })
}

/// `data` cut at its first `\n\n` (else at its end): a head and a body.
pub fn head_and_body(data: &[u8]) -> (&[u8], &[u8]) {
    match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (data, &[]),
    }
}
