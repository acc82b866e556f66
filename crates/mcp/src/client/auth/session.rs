//! [`OAuth`]: the tokens for one MCP server, how they are used on each request, renewed, and
//! obtained again when the server refuses them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;

use super::agent::UserAgent;
use super::challenge::Challenge;
use super::discovery::{self, Discovered};
use super::flows::{self, Context};
use super::keys::DpopKey;
use super::register::{self, Registered};
use super::store::{Store, StoreFile, StoredToken};
use super::token::{Endpoint, Tokens};
use super::{AuthError, Authorizer, Credentials, Grant, OAuthConfig, Refusal};
use crate::net::fetch::Fetcher;
use crate::net::oauth::canonical_resource;

/// Re-authorizations for more scope, per operation, before giving up: with the first
/// authorization, three attempts in all.
const MAX_STEP_UPS: u32 = 2;

/// Tokens in use, and what renewing them takes.
#[derive(Clone)]
struct Current {
    tokens: Tokens,
    issuer: String,
    resource: String,
    token_endpoint: String,
    client: Registered,
    dpop: Option<DpopKey>,
}

#[derive(Default)]
struct Session {
    server_url: String,
    current: Option<Current>,
    /// Bumped whenever the tokens change.
    generation: u64,
    /// The store was read for this server.
    loaded: bool,
    /// The resource server's last DPoP nonce.
    rs_nonce: Option<String>,
    /// The scopes asked for last.
    requested: Vec<String>,
    step_ups: HashMap<String, u32>,
    /// Registrations made or found in this process, by issuer.
    clients: HashMap<String, Registered>,
    /// The generation a refresh produced last: refused too, it is not refreshed again.
    refreshed: Option<u64>,
    /// The server has offered the DPoP scheme.
    rs_dpop: bool,
}

/// OAuth for one MCP server: an [`Authorizer`] for [`ClientOptions::auth`](crate::client::ClientOptions).
pub struct OAuth {
    config: OAuthConfig,
    agent: Option<Arc<dyn UserAgent>>,
    fetcher: Fetcher,
    store: Option<Store>,
    session: Mutex<Session>,
    /// One flow or refresh at a time.
    flow: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").field("config", &self.config).finish_non_exhaustive()
    }
}

/// What a login obtained, for the user to read (no secrets).
#[derive(Debug, Clone)]
pub struct LoginSummary {
    /// The authorization server.
    pub issuer: String,
    /// The resource the token is for.
    pub resource: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When it expires.
    pub expires_at: Option<u64>,
    /// Whether it can be renewed without the user.
    pub refreshable: bool,
}

impl OAuth {
    /// OAuth as `config` says, with `agent` for the authorization code flow (none: that flow is
    /// not possible here, and a server that needs it is an [`AuthError::Required`]).
    pub fn new(config: OAuthConfig, agent: Option<Arc<dyn UserAgent>>) -> Result<OAuth, AuthError> {
        let fetcher = Fetcher::new(&config.ca_files).map_err(|e| AuthError::Config(e.to_string()))?;
        let store = config.store.clone().map(Store::at);
        Ok(OAuth {
            config,
            agent,
            fetcher,
            store,
            session: Mutex::new(Session::default()),
            flow: tokio::sync::Mutex::new(()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn load_store(&self) -> StoreFile {
        match self.store.as_ref().map(Store::load) {
            Some(Ok(file)) => file,
            Some(Err(e)) => {
                tracing::warn!("the token store cannot be read: {e}");
                StoreFile::default()
            }
            None => StoreFile::default(),
        }
    }

    /// The registration known for `issuer`: this process's, the store's, or the configured one.
    fn known_client(&self, issuer: &str, client_id: Option<&str>) -> Option<Registered> {
        let matches = |r: &Registered| r.issuer == issuer && client_id.is_none_or(|id| id == r.client_id);
        if let Some(found) = self.lock().clients.get(issuer).filter(|r| matches(r)) {
            return Some(found.clone());
        }
        if let Some(found) = self.load_store().clients.get(issuer).filter(|r| matches(r)) {
            return Some(found.clone());
        }
        let configured = self.config.client_id.as_deref()?;
        if client_id.is_some_and(|id| id != configured) {
            return None;
        }
        Some(Registered {
            issuer: issuer.to_owned(),
            client_id: configured.to_owned(),
            client_secret: self.config.client_secret.clone(),
            auth_method: if self.config.client_secret.is_some() { "client_secret_basic".into() } else { "none".into() },
            redirect_uris: Vec::new(),
            how: "pre-registered".into(),
        })
    }

    /// The tokens in use, read from the store on first need.
    fn current(&self) -> Option<Current> {
        let url = {
            let s = self.lock();
            if s.loaded || s.current.is_some() {
                return s.current.clone();
            }
            s.server_url.clone()
        };
        if url.is_empty() {
            return None;
        }
        let stored = self.load_store().token_for(&url).cloned();
        let current = stored.and_then(|t| self.restore(t));
        let mut s = self.lock();
        s.loaded = true;
        if s.current.is_none() {
            s.current = current;
            if s.current.is_some() {
                s.generation += 1;
            }
        }
        s.current.clone()
    }

    fn restore(&self, stored: StoredToken) -> Option<Current> {
        let client = self.known_client(&stored.issuer, Some(&stored.client_id)).unwrap_or(Registered {
            issuer: stored.issuer.clone(),
            client_id: stored.client_id.clone(),
            client_secret: None,
            auth_method: "none".into(),
            redirect_uris: Vec::new(),
            how: "stored".into(),
        });
        let dpop = match &stored.dpop_key {
            Some(text) => Some(DpopKey::from_stored(text)?),
            None => None,
        };
        Some(Current {
            tokens: stored.tokens,
            issuer: stored.issuer,
            resource: stored.resource,
            token_endpoint: stored.token_endpoint,
            client,
            dpop,
        })
    }

    /// Keeps `current` in use and in the store (whose lock the caller may already hold).
    fn keep(&self, current: Current, file: Option<StoreFile>) {
        let url = {
            let mut s = self.lock();
            s.current = Some(current.clone());
            s.generation += 1;
            s.clients.insert(current.issuer.clone(), current.client.clone());
            s.server_url.clone()
        };
        let Some(store) = &self.store else { return };
        let mut file = file.unwrap_or_else(|| self.load_store());
        if matches!(current.client.how.as_str(), "dynamic" | "metadata-document") {
            file.clients.insert(current.issuer.clone(), current.client.clone());
        }
        file.put_token(StoredToken {
            server_url: canonical_resource(&url),
            resource: current.resource.clone(),
            issuer: current.issuer.clone(),
            client_id: current.client.client_id.clone(),
            token_endpoint: current.token_endpoint.clone(),
            tokens: current.tokens.clone(),
            dpop_key: current.dpop.as_ref().map(DpopKey::to_stored),
        });
        if let Err(e) = store.save(&file) {
            tracing::warn!("the token store cannot be written: {e}");
        }
    }

    fn headers(&self, current: &Current, method: &str, url: &str) -> Credentials {
        let generation = self.lock().generation;
        let token = &current.tokens.access_token;
        let mut headers = Vec::new();
        match (&current.dpop, current.tokens.token_type.as_str()) {
            (Some(key), "DPoP") => {
                let nonce = self.lock().rs_nonce.clone();
                headers.push(("authorization".to_owned(), format!("DPoP {token}")));
                headers.push(("dpop".to_owned(), key.proof(method, url, nonce.as_deref(), Some(token))));
            }
            _ => headers.push(("authorization".to_owned(), format!("Bearer {token}"))),
        }
        Credentials { headers, generation }
    }

    /// Tokens another process stored for `url` while this one waited to authorize (`before`:
    /// the access token stored when it began to wait), if fresh.
    fn tokens_from_sibling(&self, url: &str, before: Option<&str>) -> Option<Current> {
        let file = self.load_store();
        let stored = file.token_for(url)?.clone();
        if before == Some(stored.tokens.access_token.as_str()) || stored.tokens.needs_refresh() {
            return None;
        }
        let sibling = self.restore(stored)?;
        tracing::debug!("another process authorized meanwhile: using its tokens");
        self.keep(sibling.clone(), Some(file));
        Some(sibling)
    }

    /// Renews the tokens. Under the store's lock: another process may have renewed them while
    /// this one waited, and then those are used (a rotated refresh token works once).
    async fn refresh(&self, current: &Current) -> Result<Current, AuthError> {
        let lock = match &self.store {
            Some(store) => Some(store.lock().await.map_err(|e| AuthError::Config(e.to_string()))?),
            None => None,
        };
        let file = self.store.as_ref().map(|_| self.load_store());
        let url = self.lock().server_url.clone();
        let mut base = current.clone();
        if let Some(stored) = file.as_ref().and_then(|f| f.token_for(&url)).filter(|t| t.issuer == current.issuer) {
            if stored.tokens.access_token != current.tokens.access_token {
                if let Some(sibling) = self.restore(stored.clone()) {
                    if !sibling.tokens.needs_refresh() {
                        tracing::debug!("another process renewed the tokens");
                        self.keep(sibling.clone(), file);
                        return Ok(sibling);
                    }
                    base = sibling;
                }
            }
        }
        let endpoint = Endpoint {
            fetcher: &self.fetcher,
            url: &base.token_endpoint,
            issuer: &base.issuer,
            client: &base.client,
            signing_key: self.config.signing_key.as_ref(),
            dpop: base.dpop.as_ref(),
        };
        let answer = flows::refresh(&endpoint, &base.resource, &base.tokens).await?;
        let result = match answer {
            Ok(tokens) => {
                let fresh = Current { tokens, ..base };
                self.keep(fresh.clone(), file);
                let mut s = self.lock();
                s.refreshed = Some(s.generation);
                Ok(fresh)
            }
            Err(failure) if failure.error == "invalid_grant" => {
                // The refresh token is spent or revoked: drop it, keep the rest.
                let mut spent = base;
                spent.tokens.refresh_token = None;
                self.keep(spent, file);
                Err(failure.into_error("the refresh"))
            }
            Err(failure) => Err(failure.into_error("the refresh")),
        };
        drop(lock);
        result
    }

    /// The scopes to ask for: the user's, else the challenge's, else the resource's;
    /// `offline_access` added when the authorization server offers it to a user flow.
    fn scopes_for(
        &self,
        challenge: Option<&Challenge>,
        discovered: &Discovered,
        union: Option<Vec<String>>,
    ) -> Vec<String> {
        let mut scopes = match union {
            Some(union) => union,
            None if !self.config.scopes.is_empty() => self.config.scopes.clone(),
            None => match challenge.map(Challenge::scopes).filter(|s| !s.is_empty()) {
                Some(scopes) => scopes,
                None => discovered.resource_scopes.clone(),
            },
        };
        let offered = discovered.server.scopes_supported.iter().any(|s| s == "offline_access");
        if offered
            && matches!(self.config.grant, Grant::AuthorizationCode)
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".into());
        }
        scopes
    }

    /// The client to use at `server` with `redirect_uri`: configured, known, a metadata
    /// document, or registered now.
    async fn client_for(
        &self,
        server: &discovery::ServerMetadata,
        redirect_uri: Option<&str>,
    ) -> Result<Registered, AuthError> {
        if let Some(configured) = register::configured(&self.config, server) {
            return Ok(configured);
        }
        if let Some(known) = self.known_client(&server.issuer, None).filter(|k| k.fits(redirect_uri)) {
            return Ok(known);
        }
        if let Some(document) = register::metadata_document(&self.config, server) {
            return Ok(document);
        }
        let registered = register::dynamic(&self.fetcher, &self.config, server, redirect_uri).await?;
        self.lock().clients.insert(server.issuer.clone(), registered.clone());
        Ok(registered)
    }

    /// Gets new tokens for the server, after `challenge` (a `401`), or with `union` scopes
    /// (a step-up).
    /// `rs_dpop`: the server's challenges name the DPoP scheme. Tokens are bound to a DPoP key
    /// only when both the authorization server and the MCP server take them.
    async fn obtain(
        &self,
        challenge: Option<&Challenge>,
        union: Option<Vec<String>>,
        rs_dpop: bool,
    ) -> Result<Current, AuthError> {
        if !self.config.interactive {
            return Err(AuthError::Required(self.login_hint()));
        }
        let url = self.lock().server_url.clone();
        let version = mcp_types::version::ProtocolVersion::LATEST;
        let discovered = discovery::discover(&self.fetcher, &url, challenge, version, |issuer| {
            self.known_client(issuer, None).is_some()
        })
        .await?;
        let scopes = self.scopes_for(challenge, &discovered, union);
        let server = &discovered.server;
        let both = server.dpop_algs.iter().any(|a| a == "ES256") && (rs_dpop || discovered.resource_dpop);
        let dpop = match self.config.dpop && both {
            true => Some(DpopKey::generate()?),
            false => None,
        };
        // A person authorizes once however many processes (bridges a host started together)
        // need it: the second waits for the first's flow and uses its tokens.
        let _authorizing = match (&self.store, &self.config.grant) {
            (Some(store), Grant::AuthorizationCode) => {
                let before = self.load_store().token_for(&url).map(|t| t.tokens.access_token.clone());
                let held = store.lock_for_authorization().await.map_err(|e| AuthError::Config(e.to_string()))?;
                if let Some(sibling) = self.tokens_from_sibling(&url, before.as_deref()) {
                    return Ok(sibling);
                }
                Some(held)
            }
            _ => None,
        };
        let (tokens, client) = match &self.config.grant {
            Grant::AuthorizationCode => {
                let agent = self.agent.clone().ok_or_else(|| AuthError::Required(self.login_hint()))?;
                let port = self
                    .known_client(&server.issuer, None)
                    .and_then(|c| c.redirect_uris.first().and_then(|u| port_of(u)));
                let redirect = agent.prepare(port).await?;
                let redirect_uri = redirect.uri();
                let client = self.client_for(server, Some(&redirect_uri)).await?;
                let cx = self.context(&discovered, &client, &scopes, dpop.as_ref());
                (flows::authorization_code(&cx, redirect).await?, client)
            }
            grant => {
                let client = self.client_for(server, None).await?;
                let cx = self.context(&discovered, &client, &scopes, dpop.as_ref());
                (flows::machine(&cx, grant).await?, client)
            }
        };
        let dpop = dpop.filter(|_| tokens.token_type == "DPoP");
        let current = Current {
            tokens,
            issuer: server.issuer.clone(),
            resource: discovered.resource.clone(),
            token_endpoint: server.token_endpoint.clone(),
            client,
            dpop,
        };
        self.lock().requested = scopes;
        let _lock = match &self.store {
            Some(store) => Some(store.lock().await.map_err(|e| AuthError::Config(e.to_string()))?),
            None => None,
        };
        self.keep(current.clone(), None);
        Ok(current)
    }

    fn context<'a>(
        &'a self,
        discovered: &'a Discovered,
        client: &'a Registered,
        scopes: &'a [String],
        dpop: Option<&'a DpopKey>,
    ) -> Context<'a> {
        Context {
            fetcher: &self.fetcher,
            server: &discovered.server,
            client,
            resource: &discovered.resource,
            scopes,
            signing_key: self.config.signing_key.as_ref(),
            dpop,
        }
    }

    fn login_hint(&self) -> String {
        let url = self.lock().server_url.clone();
        format!("{url} needs authorization: run `mcp login {url}`")
    }

    /// Logs in to the MCP server at `url` now (what `mcp login` does): asks the server without a
    /// token to learn its challenge, then obtains tokens.
    pub async fn login(&self, url: &str) -> Result<LoginSummary, AuthError> {
        self.attach(url);
        let challenges = self.probe(url).await?;
        let _turn = self.flow.lock().await;
        let current = self.obtain(bearer(&challenges), None, offers_dpop(&challenges)).await?;
        Ok(LoginSummary {
            issuer: current.issuer,
            resource: current.resource,
            client_id: current.client.client_id,
            scopes: current.tokens.scopes.clone(),
            expires_at: current.tokens.expires_at,
            refreshable: current.tokens.refresh_token.is_some(),
        })
    }

    /// The challenges the server answers a request without a token with (none: no 401). The
    /// request is a GET of the endpoint, whose answer's body is not read: no JSON-RPC message
    /// goes out before `initialize` (a server could take it for a session's start), and an
    /// endpoint that needs no authorization answers it with a 4xx or a stream that is dropped.
    /// A server that guards only POST is authorized later, on its first 401.
    async fn probe(&self, url: &str) -> Result<Vec<Challenge>, AuthError> {
        let accept = ("accept", "text/event-stream".to_owned());
        let (status, headers) = self.fetcher.get_head(url, &[accept]).await.map_err(AuthError::Unreachable)?;
        if status != http::StatusCode::UNAUTHORIZED {
            return Ok(Vec::new());
        }
        let challenges: Vec<&str> =
            headers.get_all(http::header::WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()).collect();
        let mut parsed = super::challenge::parse_all(challenges);
        if parsed.is_empty() {
            parsed.push(Challenge { scheme: "bearer".into(), ..Challenge::default() });
        }
        Ok(parsed)
    }

    /// Gets tokens before the first request when none are held, a person must take part, and
    /// the server asks for them (a flow in a browser takes longer than a request may wait).
    async fn preflight_now(&self) -> Result<(), AuthError> {
        let person = matches!(self.config.grant, Grant::AuthorizationCode)
            && self.agent.as_ref().is_some_and(|a| a.involves_a_person());
        if !person || self.current().is_some() || !self.config.interactive {
            return Ok(());
        }
        let url = self.lock().server_url.clone();
        let challenges = match self.probe(&url).await {
            Ok(challenges) if !challenges.is_empty() => challenges,
            _ => return Ok(()),
        };
        let _turn = self.flow.lock().await;
        if self.current().is_some() {
            return Ok(());
        }
        self.obtain(bearer(&challenges), None, offers_dpop(&challenges)).await.map(|_| ())
    }

    /// Forgets this server's tokens, here and in the store.
    pub fn logout(&self, url: &str) -> bool {
        self.lock().current = None;
        let Some(store) = &self.store else { return false };
        let mut file = self.load_store();
        let removed = file.remove_for(url);
        if removed {
            let _ = store.save(&file);
        }
        removed
    }

    /// Binds this to the server at `url` (the HTTP transport does it on connect).
    pub fn attach(&self, url: &str) {
        let mut s = self.lock();
        if s.server_url != url {
            *s = Session { server_url: url.to_owned(), clients: std::mem::take(&mut s.clients), ..Session::default() };
        }
    }

    async fn on_refused(&self, refusal: &Refusal, generation: u64) -> Result<bool, AuthError> {
        let dpop_nonce =
            refusal.challenges.iter().any(|c| c.scheme == "dpop" && c.get("error") == Some("use_dpop_nonce"));
        if dpop_nonce {
            if let Some(nonce) = &refusal.dpop_nonce {
                let mut s = self.lock();
                if s.rs_nonce.as_deref() != Some(nonce) {
                    s.rs_nonce = Some(nonce.clone());
                    return Ok(true);
                }
            }
        }
        let rs_dpop = {
            let mut s = self.lock();
            s.rs_dpop |= offers_dpop(&refusal.challenges);
            s.rs_dpop
        };
        let bearer = bearer(&refusal.challenges).cloned();
        let _turn = self.flow.lock().await;
        if self.lock().generation != generation {
            return Ok(true); // renewed while this request was out
        }
        match refusal.status {
            401 => {
                let refreshed = self.lock().refreshed == Some(generation);
                let renewable = |c: &Current| c.tokens.refresh_token.is_some() && generation > 0 && !refreshed;
                if let Some(current) = self.current().filter(renewable) {
                    if self.refresh(&current).await.is_ok() {
                        return Ok(true);
                    }
                }
                self.obtain(bearer.as_ref(), None, rs_dpop).await?;
                Ok(true)
            }
            403 if bearer.as_ref().and_then(|c| c.get("error")) == Some("insufficient_scope") => {
                let challenge = bearer.expect("checked above");
                let count = {
                    let mut s = self.lock();
                    let count = s.step_ups.entry(refusal.operation.clone()).or_insert(0);
                    *count += 1;
                    *count
                };
                if count > MAX_STEP_UPS {
                    return Err(AuthError::Refused(format!(
                        "the server still refuses {} after {} authorizations (it wants the scopes {}): the account may not be allowed them",
                        refusal.operation,
                        MAX_STEP_UPS + 1,
                        challenge.get("scope").unwrap_or("more")
                    )));
                }
                let mut union = self.lock().requested.clone();
                if union.is_empty() {
                    union = self.current().map(|c| c.tokens.scopes).unwrap_or_default();
                }
                for scope in challenge.scopes() {
                    if !union.contains(&scope) {
                        union.push(scope);
                    }
                }
                self.obtain(Some(&challenge), Some(union), rs_dpop).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn credentials_for(&self, method: &str, url: &str) -> Result<Credentials, AuthError> {
        let Some(mut current) = self.current() else { return Ok(Credentials::default()) };
        if current.tokens.needs_refresh() && current.tokens.refresh_token.is_some() {
            let _turn = self.flow.lock().await;
            let latest = self.current().unwrap_or(current.clone());
            current = if latest.tokens.needs_refresh() {
                match self.refresh(&latest).await {
                    Ok(fresh) => fresh,
                    Err(e) if !latest.tokens.expired() => {
                        tracing::warn!("{e}: using the current token while it lasts");
                        latest
                    }
                    Err(_) => return Ok(Credentials::default()),
                }
            } else {
                latest
            };
        }
        if current.tokens.expired() {
            return Ok(Credentials { headers: Vec::new(), generation: self.lock().generation });
        }
        Ok(self.headers(&current, method, url))
    }
}

/// The challenge to follow: the Bearer one, else the DPoP one.
fn bearer(challenges: &[Challenge]) -> Option<&Challenge> {
    challenges.iter().find(|c| c.scheme == "bearer").or_else(|| challenges.iter().find(|c| c.scheme == "dpop"))
}

/// Whether the server's challenges offer the DPoP scheme.
fn offers_dpop(challenges: &[Challenge]) -> bool {
    challenges.iter().any(|c| c.scheme == "dpop")
}

fn port_of(uri: &str) -> Option<u16> {
    let authority = uri.split("://").nth(1)?.split('/').next()?;
    authority.rsplit_once(':')?.1.parse().ok()
}

impl Authorizer for OAuth {
    fn attach(&self, server_url: &str) {
        OAuth::attach(self, server_url);
    }

    fn preflight(&self) -> BoxFuture<'_, Result<(), AuthError>> {
        Box::pin(self.preflight_now())
    }

    fn credentials<'a>(&'a self, method: &'a str, url: &'a str) -> BoxFuture<'a, Result<Credentials, AuthError>> {
        Box::pin(self.credentials_for(method, url))
    }

    fn refused<'a>(
        &'a self,
        _url: &'a str,
        refusal: &'a Refusal,
        generation: u64,
    ) -> BoxFuture<'a, Result<bool, AuthError>> {
        Box::pin(self.on_refused(refusal, generation))
    }
}
