//! Resources: static ones by URI and families by URI template, with typed template parameters.
//!
//! A handler is `(ResourceRequest<P>, RequestContext) -> Result<Out, ToolError>`, where `P` is
//! deserialized from the template's variables (`NoArgs`-like `()` for a static resource) and
//! `Out` is text, bytes ([`Blob`]) or resource contents.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use base64::Engine as _;
use mcp_types::content::{BlobResourceContents, ResourceContents, TextResourceContents};
use mcp_types::resources::{Resource, ResourceTemplate};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::RequestContext;
use super::handler_state::State;
use super::tool::BoxFuture;
use super::uri_template::UriTemplate;
use crate::error::ToolError;

/// What a resource handler receives: the URI read and the template's parameters.
#[derive(Debug, Clone)]
pub struct ResourceRequest<P = ()> {
    /// The URI being read.
    pub uri: String,
    /// The template variables, typed (`()` for a static resource).
    pub params: P,
}

/// Binary resource contents, sent base64-encoded.
#[derive(Debug, Clone)]
pub struct Blob(pub Vec<u8>);

/// Text resource contents read as they are sent, never held whole: a text of any size (a
/// report of a hundred megabytes) costs the server one chunk of memory at a time. The response
/// is, byte for byte, the one the same text in a `String` would make; on stdio, in an HTTP body
/// or an SSE event it is written as it is read. Its text is sent once: a client that resumes an
/// SSE stream after this response, or on another instance of a cluster, gets an error asking it
/// to read the resource again. The text should be UTF-8 (other bytes become U+FFFD); a read that
/// fails midway ends the text with a line saying so.
pub struct StreamedText(crate::engine::splice::Reader);

impl StreamedText {
    /// The text `reader` gives.
    pub fn new(reader: impl tokio::io::AsyncRead + Send + Unpin + 'static) -> StreamedText {
        StreamedText(Box::new(reader))
    }

    /// The text of the file at `path` (opened now: a missing file is an error here, not midway).
    pub async fn file(path: impl AsRef<std::path::Path>) -> std::io::Result<StreamedText> {
        Ok(StreamedText::new(tokio::fs::File::open(path).await?))
    }
}

impl std::fmt::Debug for StreamedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamedText")
    }
}

impl IntoContents for StreamedText {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        crate::engine::splice::register(self.0).into_contents(uri, mime_type)
    }
}

/// What a resource handler may return.
pub trait IntoContents {
    /// The contents, given the URI read and the registered MIME type.
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents>;
}

impl IntoContents for String {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::Text(TextResourceContents {
            uri: uri.to_owned(),
            mime_type: mime_type.map(Into::into),
            text: self,
            meta: None,
        })]
    }
}

impl IntoContents for Blob {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::Blob(BlobResourceContents {
            uri: uri.to_owned(),
            mime_type: mime_type.map(Into::into),
            blob: base64::engine::general_purpose::STANDARD.encode(self.0),
            meta: None,
        })]
    }
}

impl IntoContents for ResourceContents {
    fn into_contents(self, _: &str, _: Option<&str>) -> Vec<ResourceContents> {
        vec![self]
    }
}

impl IntoContents for Vec<ResourceContents> {
    fn into_contents(self, _: &str, _: Option<&str>) -> Vec<ResourceContents> {
        self
    }
}

/// An async function usable as a resource handler:
/// `Fn(ResourceRequest<P>, RequestContext)`, or `Fn(State<S>, ResourceRequest<P>, RequestContext)`
/// with the router's state first (see [`State`]).
pub trait ResourceHandler<P, Out, St = ()>: Clone + Send + Sync + 'static {
    /// Reads the resource.
    fn call(&self, request: ResourceRequest<P>, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>>;
}

impl<F, Fut, P, Out> ResourceHandler<P, Out> for F
where
    F: Fn(ResourceRequest<P>, RequestContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
{
    fn call(&self, request: ResourceRequest<P>, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>> {
        Box::pin((self)(request, cx))
    }
}

impl<F, Fut, S, P, Out> ResourceHandler<P, Out, State<S>> for F
where
    F: Fn(State<S>, ResourceRequest<P>, RequestContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    S: Clone + Send + Sync + 'static,
{
    fn call(&self, request: ResourceRequest<P>, cx: RequestContext) -> BoxFuture<Result<Out, ToolError>> {
        super::handler_state::with_state(cx, |state, cx| (self)(state, request, cx))
    }
}

pub(crate) type ErasedResourceHandler = Arc<
    dyn Fn(String, BTreeMap<String, String>, RequestContext) -> BoxFuture<Result<Vec<ResourceContents>, ToolError>>
        + Send
        + Sync,
>;

/// A static resource as registered.
pub(crate) struct ResourceEntry {
    pub def: Resource,
    pub handler: ErasedResourceHandler,
}

/// A resource template as registered.
pub(crate) struct TemplateEntry {
    pub def: ResourceTemplate,
    pub template: UriTemplate,
    pub handler: ErasedResourceHandler,
}

/// Type-erases a handler: variables are deserialized into `P` (a bad value is -32602).
pub(crate) fn erase<H, P, Out, St>(handler: H, mime_type: Option<String>) -> ErasedResourceHandler
where
    H: ResourceHandler<P, Out, St>,
    St: 'static,
    P: DeserializeOwned + Send + 'static,
    Out: IntoContents + Send + 'static,
{
    Arc::new(move |uri: String, vars: BTreeMap<String, String>, cx: RequestContext| {
        let handler = handler.clone();
        let mime_type = mime_type.clone();
        Box::pin(async move {
            let params = params_from_vars::<P>(vars)?;
            let out = handler.call(ResourceRequest { uri: uri.clone(), params }, cx).await?;
            Ok(out.into_contents(&uri, mime_type.as_deref()))
        }) as BoxFuture<_>
    })
}

fn params_from_vars<P: DeserializeOwned>(vars: BTreeMap<String, String>) -> Result<P, ToolError> {
    // `()` deserializes from null; every other parameter type from the map of variables.
    if let Ok(unit) = serde_json::from_value::<P>(Value::Null) {
        return Ok(unit);
    }
    super::params::from_strings(vars)
        .map_err(|e| ToolError::invalid_params(format!("invalid resource URI parameters: {e}")))
}
