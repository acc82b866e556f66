//! The era adapter: turns a request of any protocol revision into one [`RequestContext`], and
//! a handler's result back into the shape its era expects.
//!
//! - 2026-07-28 (modern): version, client capabilities and client info come from the request's
//!   own `_meta`; results carry `resultType` and `io.modelcontextprotocol/serverInfo`.
//! - 2024-11-05 to 2025-11-25 (legacy): they come from the session's `initialize`.
//!
//! Handlers never see the difference.

use std::sync::Arc;

use mcp_types::legacy::{InitializeParams, InitializeResult};
use mcp_types::lifecycle::{ClientCapabilities, Implementation};
use mcp_types::logging::LoggingLevel;
use mcp_types::meta;
use mcp_types::version::ProtocolVersion;
use mcp_types::{ErrorCode, ErrorObject, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::context::{ContextParts, Origin, RequestContext};
use super::head::{ParamsHead, RequestMeta};
use super::reply::Reply;
use super::Router;
use crate::engine::outbox::Outbox;
use crate::engine::session::Session;

/// Methods that exist only before 2026-07-28.
const LEGACY_ONLY: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/result",
    "tasks/list",
];
/// Methods that exist only from 2026-07-28 on.
const MODERN_ONLY: &[&str] = &["server/discover", "subscriptions/listen", "tasks/update"];
/// Methods whose complete results carry `ttlMs` and `cacheScope` (2026-07-28).
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

/// The most memory a client's declaration (capabilities, client info, `initialize` params) may
/// take as a tree: a few KiB in practice.
const DECLARATION_BUDGET: usize = 1024 * 1024;

/// A client's declaration, typed, parsed within [`DECLARATION_BUDGET`].
/// `what` names it in an error, and is written out only then.
fn declared<T: serde::de::DeserializeOwned>(raw: &RawValue, what: std::fmt::Arguments<'_>) -> Result<T, ErrorObject> {
    let tree = super::bounded::parse(raw.get(), DECLARATION_BUDGET)
        .map_err(|e| ErrorObject::invalid_params(format!("{what} is {e}")))?;
    serde_json::from_value(tree).map_err(|e| ErrorObject::invalid_params(format!("{what} is malformed: {e}")))
}

/// What the engine needs to run one request.
pub(crate) struct Admitted {
    pub cx: RequestContext,
    pub modern: bool,
}

/// Decides the era of a request and builds its context, or the error that rejects it.
pub(crate) fn admit(
    method: &str,
    id: RequestId,
    params: Option<&RawValue>,
    session: Option<&Arc<Session>>,
    outbox: Outbox,
    cancel: CancellationToken,
) -> Result<Admitted, ErrorObject> {
    admit_read(method, id, ParamsHead::read(params)?.meta, session, outbox, cancel)
}

/// [`admit`] with the params' `_meta` already read (by a transport that read the params' head
/// for checks of its own, with [`ParamsHead`]).
pub(crate) fn admit_read(
    method: &str,
    id: RequestId,
    meta: RequestMeta<'_>,
    session: Option<&Arc<Session>>,
    outbox: Outbox,
    cancel: CancellationToken,
) -> Result<Admitted, ErrorObject> {
    #[cfg(feature = "otel")]
    let carrier = meta.carrier();
    #[cfg_attr(not(feature = "otel"), allow(unused_mut))]
    let mut admitted = admit_either(method, id, meta, session, outbox, cancel);
    #[cfg(feature = "otel")]
    if let (Ok(admitted), Some(carrier)) = (&mut admitted, carrier) {
        admitted.cx.set_carrier(carrier);
    }
    admitted
}

fn admit_either(
    method: &str,
    id: RequestId,
    meta: RequestMeta<'_>,
    session: Option<&Arc<Session>>,
    outbox: Outbox,
    cancel: CancellationToken,
) -> Result<Admitted, ErrorObject> {
    if meta.protocol_version().is_some() {
        return admit_modern(method, id, meta, outbox, cancel);
    }
    match session {
        Some(_) if MODERN_ONLY.contains(&method) => Err(ErrorObject::method_not_found(method)),
        Some(session) => {
            let parts = ContextParts {
                id,
                origin: Origin::Session(session.clone()),
                progress_token: meta.progress_token,
                outbox,
                cancel,
            };
            Ok(Admitted { cx: RequestContext::new(parts), modern: false })
        }
        None => Err(ErrorObject::invalid_params(format!(
            "missing params._meta[\"{}\"]: a 2026-07-28 request carries its protocol version, client \
             capabilities and client info in params._meta; an older client sends initialize first",
            meta::PROTOCOL_VERSION
        ))),
    }
}

fn admit_modern(
    method: &str,
    id: RequestId,
    meta: RequestMeta,
    outbox: Outbox,
    cancel: CancellationToken,
) -> Result<Admitted, ErrorObject> {
    let version = match meta.protocol_version().map(|v| serde_json::from_str::<String>(v.get())) {
        Some(Ok(v)) => v,
        _ => {
            return Err(ErrorObject::invalid_params(format!("_meta[\"{}\"] must be a string", meta::PROTOCOL_VERSION)))
        }
    };
    if !ProtocolVersion::MODERN.contains(&version.as_str()) {
        return Err(unsupported_version(&version));
    }
    let client_capabilities: ClientCapabilities = match meta.client_capabilities {
        Some(v) => declared(v, format_args!("_meta[\"{}\"]", meta::CLIENT_CAPABILITIES))?,
        None => {
            return Err(ErrorObject::invalid_params(format!(
                "missing params._meta[\"{}\"] (send {{}} for a client without optional capabilities)",
                meta::CLIENT_CAPABILITIES
            )))
        }
    };
    let client_info: Option<Implementation> =
        meta.client_info.and_then(|v| declared(v, format_args!("clientInfo")).ok());
    let request_log_level: Option<LoggingLevel> = match meta.log_level {
        None => None,
        Some(v) => Some(serde_json::from_str(v.get()).map_err(|_| {
            ErrorObject::invalid_params(format!(
                "_meta[\"{}\"] must be one of debug, info, notice, warning, error, critical, alert, emergency",
                meta::LOG_LEVEL
            ))
        })?),
    };
    if LEGACY_ONLY.contains(&method) {
        return Err(ErrorObject::method_not_found(method));
    }
    let origin =
        Origin::Request { protocol_version: version, client_capabilities, client_info, log_level: request_log_level };
    let parts = ContextParts { id, origin, progress_token: meta.progress_token, outbox, cancel };
    Ok(Admitted { cx: RequestContext::new(parts), modern: true })
}

/// -32022 with the versions this server supports.
pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, format!("Unsupported protocol version: {requested}"))
        .with_data(json!({"supported": ProtocolVersion::ALL, "requested": requested}))
}

/// The legacy handshake: the client's version if we speak it, else our newest legacy one.
pub(crate) fn initialize(
    router: &Router,
    params: Option<&RawValue>,
) -> Result<(InitializeParams, InitializeResult), ErrorObject> {
    let raw = params.ok_or_else(|| ErrorObject::invalid_params("initialize needs params"))?;
    let params: InitializeParams = declared(raw, format_args!("the initialize params"))
        .map_err(|e| ErrorObject::invalid_params(format!("invalid initialize params: {}", e.message)))?;
    let requested = params.protocol_version.as_str();
    let version = if ProtocolVersion::LEGACY.contains(&requested) { requested } else { ProtocolVersion::LATEST_LEGACY };
    let result = InitializeResult {
        protocol_version: version.to_owned(),
        capabilities: router.capabilities_for(version),
        server_info: router.inner.config.info.clone(),
        instructions: router.inner.config.instructions.clone(),
        meta: None,
    };
    Ok((params, result))
}

/// A legacy session opened by `initialize`, with the result to send.
pub(crate) struct Opened {
    /// The new session (not yet installed anywhere).
    pub session: Arc<Session>,
    /// The `initialize` result, as the middleware layers passed it back.
    pub result: Value,
}

/// Answers `initialize` through the middleware layers, like any request: the audit log names
/// it (and its client), a rate limit may refuse it. `extend` adds what the transport knows of
/// the caller (its identity, its account) to the request's context first. On success the
/// session is returned for the transport to install; a refusal opens nothing.
pub(crate) async fn open_session(
    router: &Router,
    id: RequestId,
    params: Option<&RawValue>,
    outbox: Outbox,
    extend: impl FnOnce(&mut RequestContext),
) -> Result<Opened, ErrorObject> {
    let computed = initialize(router, params);
    let (origin, session, answer) = match computed {
        Ok((params, result)) => {
            let session = Arc::new(Session::new(
                result.protocol_version.clone(),
                params.capabilities,
                params.client_info,
                outbox.clone(),
            ));
            let answer = serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()));
            (Origin::Session(session.clone()), Some(session), answer)
        }
        Err(e) => {
            let origin = Origin::Request {
                protocol_version: requested_version(params).unwrap_or_default(),
                client_capabilities: ClientCapabilities::default(),
                client_info: None,
                log_level: None,
            };
            (origin, None, Err(e))
        }
    };
    let parts = ContextParts { id, origin, progress_token: None, outbox, cancel: CancellationToken::new() };
    let mut cx = RequestContext::new(parts);
    #[cfg(feature = "otel")]
    if let Some(carrier) = params.and_then(|p| crate::telemetry::Carrier::read(p.get())) {
        cx.set_carrier(carrier);
    }
    extend(&mut cx);
    let result =
        router.serve_answered("initialize", crate::engine::raw::RawParams::copied(params), &cx, answer).await?;
    let session = session.ok_or_else(|| ErrorObject::internal("initialize was refused"))?;
    Ok(Opened { session, result })
}

/// The `protocolVersion` an `initialize` asked for, if it can be read.
fn requested_version(params: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct Asked {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    serde_json::from_str::<Asked>(params?.get()).ok().map(|a| a.protocol_version)
}

/// Gives a result the fields its era expects.
/// The server's `Implementation` as JSON, made once: whole for `server/discover`, and its name,
/// version and title for every other result (what the spec asks there: "server name and
/// version"; the description and icons would be sent again with every answer).
fn info_json(router: &Router, whole: bool) -> &Value {
    let (short, full, _) = info_forms(router);
    if whole {
        full
    } else {
        short
    }
}

/// The server's `Implementation`: short (name, version, title) and whole as trees, and short as
/// JSON text for typed results.
fn info_forms(router: &Router) -> &super::InfoForms {
    let config = &router.inner.config;
    config.info_json.get_or_init(|| {
        let full = serde_json::to_value(&config.info).unwrap_or_default();
        let mut short = serde_json::Map::new();
        for key in ["name", "version", "title"] {
            if let Some(v) = full.get(key) {
                short.insert(key.into(), v.clone());
            }
        }
        let short = Value::Object(short);
        let text = serde_json::value::to_raw_value(&short).expect("a tree is JSON");
        (short, full, Arc::from(text))
    })
}

pub(crate) fn finish(router: &Router, method: &str, mut reply: Reply, modern: bool) -> Reply {
    if !modern {
        return reply;
    }
    match reply.value_mut() {
        Some(value) => finish_value(router, method, value),
        None => reply.set_server_info(&info_forms(router).2),
    }
    reply
}

fn finish_value(router: &Router, method: &str, value: &mut Value) {
    let Value::Object(object) = value else {
        return;
    };
    super::reply::add_era_fields(object, || info_json(router, method == "server/discover").clone());
    if object["resultType"] == "complete" && CACHEABLE.contains(&method) {
        let ttl = router.inner.config.cache_ttl.as_millis() as u64;
        object.entry("ttlMs").or_insert(ttl.into());
        object.entry("cacheScope").or_insert("private".into());
    }
}
