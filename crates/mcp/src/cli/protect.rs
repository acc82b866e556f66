//! The options that protect a server: OAuth (`--auth-*`), the audit log, rate limits, timeouts
//! and size caps; and what they install on the router.

use std::path::PathBuf;
#[cfg(feature = "auth")]
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

#[cfg(feature = "auth")]
use crate::auth::{
    EitherVerifier, IntrospectionVerifier, JwksCache, JwksSource, JwtVerifier, ResourceServer, TokenVerifier,
};
#[cfg(feature = "auth")]
use crate::net::fetch::Fetcher;
use crate::server::middleware::{AuditLog, ConcurrencyLimit, RateLimit, ResponseSizeLimit, Timeout};
use crate::server::Router;

/// The environment variable holding the introspection client's secret (instead of a file).
#[cfg(feature = "auth")]
pub const CLIENT_SECRET_ENV: &str = "MCP_AUTH_CLIENT_SECRET";

/// OAuth: requests over HTTP need an access token of this issuer, for this server.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(next_help_heading = "Authorization (HTTP)")]
pub struct AuthArgs {
    /// Require access tokens issued by this authorization server (its metadata gives the keys)
    #[arg(long, value_name = "URL")]
    pub auth_issuer: Option<String>,
    /// The canonical URL of this server, the audience tokens must name (default: the URL served)
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_resource: Option<String>,
    /// Take the issuer's signing keys from this JWKS URL instead of its metadata
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_jwks: Option<String>,
    /// Check opaque tokens with this RFC 7662 introspection endpoint (JWTs are still checked
    /// against the keys); needs --auth-client-id
    #[arg(long, value_name = "URL", requires_all = ["auth_issuer", "auth_client_id"])]
    pub auth_introspection: Option<String>,
    /// The client id this server introspects as
    #[arg(long, value_name = "ID", requires = "auth_introspection")]
    pub auth_client_id: Option<String>,
    /// A file holding that client's secret (or set MCP_AUTH_CLIENT_SECRET)
    #[arg(long, value_name = "PATH", requires = "auth_introspection")]
    pub auth_client_secret_file: Option<PathBuf>,
    /// A scope every request needs (repeatable), besides those of each tool
    #[arg(long = "auth-scope", value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scopes: Vec<String>,
}

/// Bounds on requests, and the audit log: on every transport.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(next_help_heading = "Limits and audit")]
pub struct LimitArgs {
    /// Write one JSON line per request to this file (`-` for stderr): time, request id, caller,
    /// method, name, duration, outcome. Never tokens
    #[arg(long, value_name = "PATH|-")]
    pub audit_log: Option<String>,
    /// Also record each request's arguments in the audit log
    #[arg(long, requires = "audit_log")]
    pub audit_arguments: bool,
    /// At most N requests per second per account (`N/s`, `N/m` or `N/h`); past it a request is
    /// told when to retry (HTTP 429 with Retry-After)
    #[arg(long, value_name = "N/s", value_parser = parse_rate)]
    pub rate_limit: Option<Rate>,
    /// The burst a rate limit allows (default: one second's worth)
    #[arg(long, value_name = "N", requires = "rate_limit", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_burst: Option<u32>,
    /// Stop a request after this long (`30s`, `500ms`, `2m`); a tool says so in an error result
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<Duration>,
    /// At most N requests handled at once; the rest wait their turn
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent: Option<u32>,
    /// The largest result sent, in bytes (`512K`, `4M`); a larger tool result becomes an error
    /// result naming the limit
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_response_bytes: Option<usize>,
}

/// Requests per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub f64);

impl Eq for Rate {}

fn parse_rate(text: &str) -> Result<Rate, String> {
    let (count, per) = text.split_once('/').unwrap_or((text, "s"));
    let seconds = match per {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        _ => return Err(format!("{text:?}: write N/s, N/m or N/h")),
    };
    match count.trim().parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(Rate(n / seconds)),
        _ => Err(format!("{text:?}: the count must be a positive number")),
    }
}

/// `30`, `30s`, `500ms`, `2m`, `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().map_err(|_| format!("{text:?}: write a duration such as 30s, 500ms or 2m"))?;
    let seconds = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("{text:?}: the unit must be ms, s, m or h")),
    };
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(format!("{text:?}: the duration must be positive"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `4096`, `512K`, `4M`, `1G` (powers of 1024).
fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (number, factor) = match text.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&text[..text.len() - 1], 1 << 10),
        Some('M') => (&text[..text.len() - 1], 1 << 20),
        Some('G') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    match number.trim().parse::<usize>() {
        Ok(n) if n > 0 => n.checked_mul(factor).ok_or_else(|| format!("{text:?} is too large")),
        _ => Err(format!("{text:?}: write a positive size such as 65536, 512K or 4M")),
    }
}

impl LimitArgs {
    /// Adds the layers these options ask for, outermost first: the audit log (so refusals are
    /// logged too), the rate limit, the timeout, the concurrency cap, the size cap.
    /// The rate limit counts on the shared store when there is one.
    pub fn install(&self, router: &Router, shared: &super::store::SharedStore) -> std::io::Result<()> {
        match self.audit_log.as_deref() {
            None => {}
            Some("-") => router.add_layer(AuditLog::to_stderr().with_arguments(self.audit_arguments)),
            Some(path) => {
                router.add_layer(AuditLog::to_file(std::path::Path::new(path))?.with_arguments(self.audit_arguments))
            }
        }
        if let Some(Rate(rate)) = self.rate_limit {
            let burst = self.rate_burst.map_or(rate.max(1.0), f64::from);
            match shared {
                super::store::SharedStore::Memory => router.add_layer(RateLimit::new(rate, burst)),
                #[cfg(feature = "redis")]
                super::store::SharedStore::Redis(redis) => {
                    router.add_layer(crate::redis::RedisRateLimit::new((**redis).clone(), rate, burst))
                }
            }
        }
        if let Some(limit) = self.request_timeout {
            router.add_layer(Timeout::new(limit));
        }
        if let Some(n) = self.max_concurrent {
            router.add_layer(ConcurrencyLimit::new(n as usize));
        }
        if let Some(max) = self.max_response_bytes {
            router.add_layer(ResponseSizeLimit::new(max));
        }
        Ok(())
    }
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message)
}

impl AuthArgs {
    /// Whether authorization is asked for.
    pub fn enabled(&self) -> bool {
        self.auth_issuer.is_some()
    }

    /// Built without the `auth` feature: `--auth-*` is refused with the reason, not ignored.
    #[cfg(not(feature = "auth"))]
    pub fn refuse_without_auth(&self) -> std::io::Result<()> {
        if self.enabled() {
            return Err(invalid(
                "this server was built without OAuth support (feature `auth`): --auth-issuer needs it".into(),
            ));
        }
        Ok(())
    }

    /// The resource server these options describe (`None` without `--auth-issuer`), the minimum
    /// scopes added to `router`.
    #[cfg(feature = "auth")]
    pub fn resource_server(&self, router: &Router) -> std::io::Result<Option<ResourceServer>> {
        let Some(issuer) = self.auth_issuer.as_deref() else { return Ok(None) };
        crate::net::fetch::check_url(issuer).map_err(|e| invalid(format!("--auth-issuer: {e}")))?;
        let fetcher = Fetcher::new(&[])?;
        let source = match &self.auth_jwks {
            Some(url) => {
                crate::net::fetch::check_url(url).map_err(|e| invalid(format!("--auth-jwks: {e}")))?;
                JwksSource::Url(url.clone())
            }
            None => JwksSource::Issuer(issuer.to_owned()),
        };
        let jwt: Arc<dyn TokenVerifier> = Arc::new(JwtVerifier::new(issuer, JwksCache::new(source, fetcher.clone())));
        let verifier: Arc<dyn TokenVerifier> = match &self.auth_introspection {
            None => jwt,
            Some(endpoint) => {
                crate::net::fetch::check_url(endpoint).map_err(|e| invalid(format!("--auth-introspection: {e}")))?;
                let client_id = self.auth_client_id.clone().unwrap_or_default();
                let secret = self.client_secret()?;
                let opaque = IntrospectionVerifier::new(endpoint, client_id, secret, fetcher).issuer(issuer);
                Arc::new(EitherVerifier::new(jwt, Arc::new(opaque)))
            }
        };
        let scopes: Vec<&str> = self.auth_scopes.iter().map(String::as_str).collect();
        router.add_required_scopes(&scopes);
        let mut server = ResourceServer::from_arc(verifier)
            .authorization_server(issuer)
            .resource_name(router.implementation_info().name.clone());
        if let Some(resource) = &self.auth_resource {
            crate::net::fetch::check_url(resource).map_err(|e| invalid(format!("--auth-resource: {e}")))?;
            server = server.resource(resource);
        }
        Ok(Some(server))
    }

    /// The introspection client's secret: from its file, else the environment.
    #[cfg(feature = "auth")]
    fn client_secret(&self) -> std::io::Result<String> {
        if let Some(path) = &self.auth_client_secret_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| invalid(format!("--auth-client-secret-file {}: {e}", path.display())))?;
            return Ok(text.trim_end_matches(['\n', '\r']).to_owned());
        }
        std::env::var(CLIENT_SECRET_ENV).map_err(|_| {
            invalid(format!(
                "--auth-introspection needs the client's secret: --auth-client-secret-file, or {CLIENT_SECRET_ENV}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_durations_and_sizes() {
        assert_eq!(parse_rate("10/s"), Ok(Rate(10.0)));
        assert_eq!(parse_rate("120/m"), Ok(Rate(2.0)));
        assert_eq!(parse_rate("5"), Ok(Rate(5.0)));
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("ten/s").is_err());
        assert!(parse_rate("5/d").is_err());
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_size("512K"), Ok(512 * 1024));
        assert_eq!(parse_size("4M"), Ok(4 << 20));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("-1").is_err());
        assert!(parse_size("0").is_err());
    }
}
