//! The OAuth discovery of an HTTP server, step by step as `mcp login` runs it, each step with
//! what it asked and what came back: the request without a token and its 401 challenge, the
//! protected resource metadata (each URL tried, in the spec's order), its `resource` against the
//! URL, the authorization server's metadata, and how this client would register and prove
//! itself. No token is requested here and none is shown: the Authorize button runs the real flow.

use mcp::client::auth::{discovery, Challenge};
use mcp::fetch::Fetcher;
use serde_json::{json, Value};

/// One step as the page shows it.
fn step(name: &str, ok: bool, said: String, detail: Value) -> Value {
    json!({"name": name, "ok": ok, "said": said, "detail": detail})
}

/// The steps, as far as they go.
pub async fn steps(url: &str, fetcher: &Fetcher, registration: Registration) -> Value {
    let mut steps = Vec::new();
    let probe = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "mcp-inspect-probe", "reason": "probing for authorization"}});
    let accept = ("accept", "application/json, text/event-stream".to_owned());
    let answer = match fetcher.post_json(url, &probe, &[accept]).await {
        Ok(answer) => answer,
        Err(e) => {
            steps.push(step("request without a token", false, format!("no answer from {url}: {e}"), Value::Null));
            return json!({"steps": steps});
        }
    };
    let challenges: Vec<&str> =
        answer.headers.get_all(http::header::WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()).collect();
    let detail = json!({"request": format!("POST {url} (a notification, no Authorization)"), "status": answer.status.as_u16(), "www-authenticate": challenges});
    if answer.status != http::StatusCode::UNAUTHORIZED {
        steps.push(step(
            "request without a token",
            true,
            format!("{}: this server needs no authorization", answer.status),
            detail,
        ));
        return json!({"steps": steps, "needed": false});
    }
    let parsed = mcp::client::auth::challenge::parse_all(challenges.iter().copied());
    let bearer: Option<&Challenge> = parsed.iter().find(|c| c.scheme.eq_ignore_ascii_case("bearer"));
    let said = match bearer {
        Some(c) => format!(
            "401 with a Bearer challenge{}{}",
            c.get("resource_metadata").map(|m| format!(", resource_metadata={m}")).unwrap_or_default(),
            c.get("scope").map(|s| format!(", scope={s}")).unwrap_or_default()
        ),
        None => "401 without a Bearer WWW-Authenticate: the client falls back to the well-known URLs".into(),
    };
    steps.push(step("request without a token", bearer.is_some(), said, detail));

    let mut tried = Vec::new();
    let mut prm = None;
    for candidate in discovery::metadata_candidates(url, bearer) {
        match fetcher.get(&candidate, &[]).await {
            Ok(a) if a.status.is_success() => match a.json() {
                Ok(doc) => {
                    tried.push(json!({"url": candidate, "status": a.status.as_u16()}));
                    prm = Some(doc);
                    break;
                }
                Err(e) => tried.push(json!({"url": candidate, "status": a.status.as_u16(), "error": e})),
            },
            Ok(a) => tried.push(json!({"url": candidate, "status": a.status.as_u16()})),
            Err(e) => tried.push(json!({"url": candidate, "error": e})),
        }
    }
    let Some(prm) = prm else {
        steps.push(step(
            "protected resource metadata",
            false,
            "none found: a 2025-03-26 client would use the server's origin as the authorization server".into(),
            json!({"tried": tried}),
        ));
        return json!({"steps": steps, "needed": true});
    };
    steps.push(step(
        "protected resource metadata",
        true,
        format!("found at {}", tried.last().map_or("?", |t| t["url"].as_str().unwrap_or("?"))),
        json!({"tried": tried, "document": prm}),
    ));

    let resource = prm.get("resource").and_then(Value::as_str).unwrap_or_default();
    let covers = resource.is_empty() || discovery::resource_covers(resource, url);
    steps.push(step(
        "resource matches the URL",
        covers,
        if covers {
            format!("{} stands for {url}", if resource.is_empty() { "(no resource given)" } else { resource })
        } else {
            format!("the metadata says it is {resource}, not {url}: a client must refuse to get a token for it")
        },
        Value::Null,
    ));
    let servers: Vec<String> = prm["authorization_servers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let Some(issuer) = servers.first() else {
        steps.push(step(
            "authorization server metadata",
            false,
            "the metadata names no authorization server".into(),
            Value::Null,
        ));
        return json!({"steps": steps, "needed": true});
    };
    let metadata = match mcp::net::oauth::issuer_metadata(fetcher, issuer).await {
        Ok(doc) => {
            steps.push(step(
                "authorization server metadata",
                true,
                format!("{issuer} describes itself"),
                json!({"urls": mcp::net::oauth::metadata_urls(issuer), "document": doc}),
            ));
            Value::Object(doc)
        }
        Err(e) => {
            steps.push(step(
                "authorization server metadata",
                false,
                e,
                json!({"urls": mcp::net::oauth::metadata_urls(issuer)}),
            ));
            return json!({"steps": steps, "needed": true});
        }
    };
    let pkce = metadata["code_challenge_methods_supported"].as_array().is_some_and(|m| m.iter().any(|v| v == "S256"));
    steps.push(step(
        "PKCE",
        pkce,
        if pkce {
            "S256 is supported".into()
        } else {
            "the metadata does not list S256: MCP clients must refuse to go on".into()
        },
        Value::Null,
    ));
    steps.push(registration.step(&metadata));
    json!({"steps": steps, "needed": true})
}

/// How this client is known to authorization servers (from the command line and the entry).
pub struct Registration {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// A Client ID Metadata Document URL.
    pub metadata_url: Option<String>,
}

impl Registration {
    fn step(&self, metadata: &Value) -> Value {
        let cimd = metadata["client_id_metadata_document_supported"] == true;
        let dcr = metadata["registration_endpoint"].as_str();
        let (ok, said) = match (&self.client_id, &self.metadata_url, cimd, dcr) {
            (Some(id), ..) => (true, format!("the pre-registered client {id}")),
            (None, Some(url), true, _) => (true, format!("the Client ID Metadata Document {url} as client id")),
            (None, _, _, Some(endpoint)) => (true, format!("dynamic registration at {endpoint}")),
            (None, _, true, None) => {
                (false, "the server takes Client ID Metadata Documents: pass --client-metadata-url".into())
            }
            _ => (false, "no way to register: pass --client-id (the server offers no dynamic registration)".into()),
        };
        step(
            "client registration",
            ok,
            said,
            json!({"client_id_metadata_document_supported": cimd, "registration_endpoint": dcr}),
        )
    }
}

/// What the inspector needs for an HTTP server's authorization: the discovery's inputs, and
/// the client's own authorizer (its Authorize button runs `mcp login`'s flow with it).
pub struct Authorization {
    /// The server's URL.
    pub url: String,
    /// Makes the discovery's requests (the CA files of `--cacert`).
    pub fetcher: Fetcher,
    /// How the client registers.
    pub registration: Registration,
    /// The authorizer the connection uses.
    pub oauth: std::sync::Arc<mcp::client::auth::OAuth>,
}

impl Authorization {
    /// The discovery, step by step.
    pub async fn steps(&self) -> Value {
        let registration = Registration {
            client_id: self.registration.client_id.clone(),
            metadata_url: self.registration.metadata_url.clone(),
        };
        steps(&self.url, &self.fetcher, registration).await
    }

    /// Authorizes now (a browser opens, or the page shows the URL), and says what was granted:
    /// issuer, client, scopes, expiry; never the token.
    pub async fn login(&self) -> Value {
        match self.oauth.login(&self.url).await {
            Ok(summary) => json!({"authorized": {
                "issuer": summary.issuer, "resource": summary.resource, "client_id": summary.client_id,
                "scopes": summary.scopes, "expires_at": summary.expires_at, "refreshable": summary.refreshable,
            }}),
            Err(e) => json!({"error": e.to_string()}),
        }
    }
}
