//! Token verification behind a trait: JWTs against the issuer's JWKS, opaque tokens through RFC
//! 7662 introspection, or both. Verifiers check the signature, the issuer and the times; the
//! audience is checked by the layer, whatever the verifier.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mcp_types::JsonObject;
use serde_json::Value;

use crate::net::fetch::Fetcher;
pub use crate::net::oauth::{issuer_metadata, metadata_urls};
use crate::server::identity::Verified;
use futures_util::future::BoxFuture;

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenError {
    /// The token is bad (signature, issuer, time, format): 401 `invalid_token`.
    Invalid(String),
    /// The verifier could not decide (its JWKS or introspection endpoint is unreachable): 503.
    Unavailable(String),
}

/// Decides whether an access token is valid.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token`; the audience is the caller's to check.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>>;
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `aud` as a list (a string or an array of strings).
fn audience(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// `scope` (space-separated) or `scp` (an array or a string).
fn scopes(claims: &JsonObject) -> Vec<String> {
    match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

fn verified_from(claims: JsonObject) -> Verified {
    let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_owned);
    Verified {
        subject: text("sub").unwrap_or_default(),
        client_id: text("client_id").or_else(|| text("azp")),
        scopes: scopes(&claims),
        issuer: text("iss"),
        audience: audience(claims.get("aud")),
        expires_at: claims.get("exp").and_then(Value::as_u64),
        claims,
    }
}

/// Where a JWKS comes from.
#[derive(Debug, Clone)]
pub enum JwksSource {
    /// This URL.
    Url(String),
    /// The `jwks_uri` of the issuer's metadata (RFC 8414, then OpenID discovery).
    Issuer(String),
    /// These keys (tests, or keys given in configuration).
    Static(JwkSet),
}

/// The keys of an issuer, fetched on first use, kept for an hour, and fetched again at once when a
/// token names a key that is not there (such fetches at most once per cool-down, so tokens naming
/// unknown `kid`s cannot make us flood the issuer).
pub struct JwksCache {
    source: JwksSource,
    fetcher: Fetcher,
    keys: RwLock<Option<(Arc<JwkSet>, Instant)>>,
    /// One fetch at a time.
    fetching: tokio::sync::Mutex<()>,
    /// When a token naming an unknown key last made us fetch.
    last_forced: std::sync::Mutex<Option<Instant>>,
    ttl: Duration,
    cooldown: Duration,
}

impl JwksCache {
    /// A cache of `source`'s keys.
    pub fn new(source: JwksSource, fetcher: Fetcher) -> JwksCache {
        let keys = match &source {
            JwksSource::Static(set) => Some((Arc::new(set.clone()), Instant::now())),
            _ => None,
        };
        JwksCache {
            source,
            fetcher,
            keys: RwLock::new(keys),
            fetching: tokio::sync::Mutex::new(()),
            last_forced: std::sync::Mutex::new(None),
            ttl: Duration::from_secs(3600),
            cooldown: Duration::from_secs(10),
        }
    }

    /// The cool-down between two fetches forced by unknown keys (default 10 s).
    pub fn with_cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    fn cached(&self) -> Option<(Arc<JwkSet>, Instant)> {
        self.keys.read().unwrap().clone()
    }

    /// The key `kid` (or the only key, when the token names none).
    async fn key(&self, kid: Option<&str>) -> Result<Jwk, TokenError> {
        let asked = Instant::now();
        let stale = match self.cached() {
            Some((set, at)) => match pick(&set, kid) {
                Some(key) if at.elapsed() < self.ttl => return Ok(key),
                Some(_) => false,
                None => true,
            },
            None => false,
        };
        if matches!(self.source, JwksSource::Static(_)) {
            return self.cached().and_then(|(set, _)| pick(&set, kid)).ok_or_else(|| unknown_key(kid));
        }
        if stale && self.last_forced.lock().unwrap().is_some_and(|t| t.elapsed() < self.cooldown) {
            return Err(unknown_key(kid));
        }
        let _turn = self.fetching.lock().await;
        // Another request may have fetched while we waited.
        if let Some((set, at)) = self.cached() {
            if at >= asked {
                return pick(&set, kid).ok_or_else(|| unknown_key(kid));
            }
        }
        if stale {
            *self.last_forced.lock().unwrap() = Some(Instant::now());
        }
        let set = match self.fetch().await {
            Ok(set) => Arc::new(set),
            Err(e) => {
                // Keys past their hour still verify while the issuer cannot be reached.
                let known = self.cached().and_then(|(set, _)| pick(&set, kid));
                return known.ok_or(e);
            }
        };
        *self.keys.write().unwrap() = Some((set.clone(), Instant::now()));
        pick(&set, kid).ok_or_else(|| unknown_key(kid))
    }

    async fn fetch(&self) -> Result<JwkSet, TokenError> {
        let url = match &self.source {
            JwksSource::Url(url) => url.clone(),
            JwksSource::Issuer(issuer) => jwks_uri(&self.fetcher, issuer).await?,
            JwksSource::Static(set) => return Ok(set.clone()),
        };
        let answer = self.fetcher.get(&url, &[]).await.map_err(TokenError::Unavailable)?;
        if !answer.status.is_success() {
            return Err(TokenError::Unavailable(format!("the JWKS at {url} answered {}", answer.status)));
        }
        serde_json::from_slice(&answer.body)
            .map_err(|e| TokenError::Unavailable(format!("the JWKS at {url} is malformed: {e}")))
    }
}

fn unknown_key(kid: Option<&str>) -> TokenError {
    TokenError::Invalid(match kid {
        Some(kid) => format!("the token is signed with key {kid:?}, which the issuer does not publish"),
        None => "the token names no key and the issuer publishes several".into(),
    })
}

fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

async fn jwks_uri(fetcher: &Fetcher, issuer: &str) -> Result<String, TokenError> {
    let metadata = issuer_metadata(fetcher, issuer).await.map_err(TokenError::Unavailable)?;
    metadata
        .get("jwks_uri")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| TokenError::Unavailable(format!("the metadata of {issuer} has no jwks_uri")))
}

/// Verifies JWT access tokens: signature by a key of the issuer's JWKS, an algorithm from the
/// allow-list (never `none`, never HMAC), `iss`, and `exp` (required) and `nbf` within the leeway.
pub struct JwtVerifier {
    issuer: String,
    keys: JwksCache,
    algorithms: Vec<Algorithm>,
    leeway: u64,
}

impl JwtVerifier {
    /// A verifier for tokens of `issuer`, with keys from `keys`.
    pub fn new(issuer: impl Into<String>, keys: JwksCache) -> JwtVerifier {
        use Algorithm::*;
        JwtVerifier {
            issuer: issuer.into(),
            keys,
            algorithms: vec![RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA],
            leeway: 30,
        }
    }

    /// The accepted algorithms (asymmetric ones only: HMAC algorithms are ignored).
    pub fn algorithms(mut self, algorithms: &[Algorithm]) -> Self {
        self.algorithms = algorithms
            .iter()
            .copied()
            .filter(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
            .collect();
        self
    }

    /// The clock skew allowed on `exp` and `nbf`, in seconds (default 30).
    pub fn leeway(mut self, seconds: u64) -> Self {
        self.leeway = seconds;
        self
    }

    async fn check(&self, token: &str) -> Result<Verified, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| TokenError::Invalid(format!("not a JWT: {e}")))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::Invalid(format!("the token's algorithm {:?} is not accepted", header.alg)));
        }
        let jwk = self.keys.key(header.kid.as_deref()).await?;
        if let Some(alg) = jwk.common.key_algorithm {
            if format!("{alg:?}") != format!("{:?}", header.alg) {
                return Err(TokenError::Invalid(format!("the key is for {alg:?}, the token says {:?}", header.alg)));
            }
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| TokenError::Invalid(format!("unusable key: {e}")))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.validate_aud = false; // the layer checks the audience, for every verifier
        validation.set_issuer(&[&self.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        let data = jsonwebtoken::decode::<JsonObject>(token, &key, &validation)
            .map_err(|e| TokenError::Invalid(describe(&e)))?;
        Ok(verified_from(data.claims))
    }
}

fn describe(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind::*;
    match e.kind() {
        ExpiredSignature => "the token has expired".into(),
        ImmatureSignature => "the token is not valid yet (nbf)".into(),
        InvalidIssuer => "the token is from another issuer".into(),
        InvalidSignature => "the token's signature does not verify".into(),
        MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
        other => format!("the token is invalid: {other:?}"),
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>> {
        Box::pin(self.check(token))
    }
}

/// Verifies opaque tokens with RFC 7662 introspection, authenticating as a client of the AS.
pub struct IntrospectionVerifier {
    endpoint: String,
    client_id: String,
    client_secret: String,
    fetcher: Fetcher,
    /// `iss` the answers must carry, when they carry one.
    issuer: Option<String>,
}

impl IntrospectionVerifier {
    /// Introspects at `endpoint` as `client_id` with `client_secret` (HTTP Basic).
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        fetcher: Fetcher,
    ) -> Self {
        IntrospectionVerifier {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            fetcher,
            issuer: None,
        }
    }

    /// Requires the answers' `iss`, when present, to be `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    async fn check(&self, token: &str) -> Result<Verified, TokenError> {
        use base64::Engine as _;
        let credentials = format!(
            "{}:{}",
            crate::net::fetch::form_encode(&self.client_id),
            crate::net::fetch::form_encode(&self.client_secret)
        );
        let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
        let form = [("token", token), ("token_type_hint", "access_token")];
        let answer = self
            .fetcher
            .post_form(&self.endpoint, &form, &[("authorization", basic)])
            .await
            .map_err(TokenError::Unavailable)?;
        if !answer.status.is_success() {
            return Err(TokenError::Unavailable(format!("introspection answered {}", answer.status)));
        }
        let Ok(Value::Object(claims)) = answer.json() else {
            return Err(TokenError::Unavailable("introspection answered something other than a JSON object".into()));
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Invalid("the token is not active".into()));
        }
        if let (Some(expected), Some(stated)) = (&self.issuer, claims.get("iss").and_then(Value::as_str)) {
            if expected != stated {
                return Err(TokenError::Invalid("the token is from another issuer".into()));
            }
        }
        if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
            if exp + 30 < now() {
                return Err(TokenError::Invalid("the token has expired".into()));
            }
        }
        Ok(verified_from(claims))
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>> {
        Box::pin(self.check(token))
    }
}

/// JWTs to one verifier, anything else to another (an issuer whose access tokens are JWTs for
/// some resources and opaque for others).
pub struct EitherVerifier {
    jwt: Arc<dyn TokenVerifier>,
    opaque: Arc<dyn TokenVerifier>,
}

impl EitherVerifier {
    /// JWT-shaped tokens (three dot-separated parts) to `jwt`, the rest to `opaque`.
    pub fn new(jwt: Arc<dyn TokenVerifier>, opaque: Arc<dyn TokenVerifier>) -> Self {
        EitherVerifier { jwt, opaque }
    }
}

impl TokenVerifier for EitherVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>> {
        if token.split('.').count() == 3 {
            self.jwt.verify(token)
        } else {
            self.opaque.verify(token)
        }
    }
}

/// A verified token as the layer uses it: the caller, and whether its audience is ours.
#[derive(Clone)]
pub(crate) struct Accepted {
    pub identity: super::Identity,
    pub audience_ok: bool,
}

/// Verified tokens, kept until they expire (at most `max` of them, and at most `cap`), so a
/// token is not verified again on every request.
///
/// Keyed by a keyed hash of the token (SipHash with this process's random key), and a hit is
/// confirmed by comparing the whole token in constant time with the one its identity holds: a
/// lookup neither compares a presented token byte by byte with a stored one (whose timing could
/// tell how much of a prefix matched) nor pays for a SHA-256 of it, the key this cache once had,
/// which cost more than the rest of the auth layer. Two tokens of the same hash simply take
/// turns in one place.
pub(crate) struct TokenCache {
    entries: RwLock<HashMap<u64, (Accepted, Instant)>>,
    hasher: std::hash::RandomState,
    max: usize,
    cap: Duration,
}

impl TokenCache {
    pub fn new(max: usize, cap: Duration) -> Self {
        TokenCache { entries: RwLock::new(HashMap::new()), hasher: Default::default(), max, cap }
    }

    fn key(&self, token: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, token)
    }

    pub fn get(&self, token: &str) -> Option<Accepted> {
        let entries = self.entries.read().unwrap();
        let (accepted, until) = entries.get(&self.key(token))?;
        let same = same_in_constant_time(accepted.identity.dangerous_raw_token().as_bytes(), token.as_bytes());
        (same && Instant::now() < *until).then(|| accepted.clone())
    }

    /// Keeps `accepted`, the verdict on the token its identity holds.
    pub fn put(&self, accepted: Accepted) {
        let expires = accepted.identity.expires_at();
        let left = expires.map_or(self.cap, |exp| Duration::from_secs(exp.saturating_sub(now())));
        let until = Instant::now() + left.min(self.cap);
        let key = self.key(accepted.identity.dangerous_raw_token());
        let mut entries = self.entries.write().unwrap();
        if entries.len() >= self.max {
            let now = Instant::now();
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= self.max {
                entries.clear(); // a flood of distinct tokens: start over rather than grow
            }
        }
        entries.insert(key, (accepted, until));
    }
}

/// Whether `a` and `b` are the same bytes, in a time that depends on their length only.
fn same_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    fn accepted(token: &str, subject: &str) -> Accepted {
        let verified = Verified {
            subject: subject.into(),
            client_id: None,
            scopes: vec![],
            issuer: Some("https://as".into()),
            audience: vec![],
            expires_at: None,
            claims: Default::default(),
        };
        Accepted { identity: super::super::Identity::new(Arc::new(verified), Arc::from(token)), audience_ok: true }
    }

    #[test]
    fn a_cached_token_is_found_by_its_whole_text_only() {
        let cache = TokenCache::new(8, Duration::from_secs(60));
        cache.put(accepted("a.b.c", "alice"));
        cache.put(accepted("a.b.d", "bob"));
        assert_eq!(cache.get("a.b.c").unwrap().identity.subject(), "alice");
        assert_eq!(cache.get("a.b.d").unwrap().identity.subject(), "bob");
        assert!(cache.get("a.b.").is_none());
        assert!(cache.get("a.b.cc").is_none());
        // Two tokens under one key (forced here): the other one's verdict is never given.
        let key = cache.key("x.y.z");
        cache
            .entries
            .write()
            .unwrap()
            .insert(key, (accepted("a.b.c", "alice"), Instant::now() + Duration::from_secs(60)));
        assert!(cache.get("x.y.z").is_none());
    }

    #[test]
    fn tokens_are_compared_whole() {
        assert!(same_in_constant_time(b"abc", b"abc"));
        assert!(!same_in_constant_time(b"abc", b"abd"));
        assert!(!same_in_constant_time(b"abc", b"ab"));
        assert!(same_in_constant_time(b"", b""));
    }
}
