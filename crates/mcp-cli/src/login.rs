//! OAuth on the command line: the options, the authorizer every HTTP command uses (stored
//! tokens, refreshed when needed, a browser flow when allowed), and `mcp login`, `mcp logout`,
//! `mcp auth status`, `mcp auth token`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use mcp::client::auth::{Browser, Grant, OAuth, OAuthConfig, SigningKey, Store};
use serde_json::{json, Value};

use crate::target::OAuthEntry;

/// The environment variable holding a pre-registered client's secret.
pub const CLIENT_SECRET_ENV: &str = "MCP_CLIENT_SECRET";

/// How `mcp` authorizes to HTTP servers that ask for OAuth.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Authorization (HTTP servers behind OAuth)")]
pub struct AuthOptions {
    /// A pre-registered OAuth client id (else the client registers itself, or uses --client-metadata-url)
    #[arg(long, global = true, value_name = "ID")]
    pub client_id: Option<String>,
    /// A file holding that client's secret (or set MCP_CLIENT_SECRET)
    #[arg(long, global = true, value_name = "PATH")]
    pub client_secret_file: Option<PathBuf>,
    /// This client's Client ID Metadata Document URL (https), used as its id where accepted
    #[arg(long, global = true, value_name = "URL")]
    pub client_metadata_url: Option<String>,
    /// Ask for this scope (repeatable) instead of the ones the server names
    #[arg(long = "scope", global = true, value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// Use http://localhost:PORT/callback as the redirect URI (a client registered with it)
    #[arg(long, global = true, value_name = "PORT")]
    pub callback_port: Option<u16>,
    /// Do not open a browser: print the authorization URL instead
    #[arg(long, global = true)]
    pub no_browser: bool,
    /// Never start an authorization: use stored tokens (refreshed when needed), else exit 3
    #[arg(long, global = true)]
    pub stored_auth_only: bool,
    /// Authenticate as the client itself (client_credentials) instead of as a person
    #[arg(long, global = true, requires = "client_id")]
    pub client_credentials: bool,
    /// The client's private key (PEM) for private_key_jwt
    #[arg(long, global = true, value_name = "PEM", requires = "client_id")]
    pub client_key: Option<PathBuf>,
    /// The algorithm of --client-key
    #[arg(long, global = true, value_name = "ALG", default_value = "ES256")]
    pub client_key_alg: String,
    /// Where tokens are kept (default: $MCP_AUTH_FILE, else ~/.config/mcp/oauth.json)
    #[arg(long, global = true, value_name = "PATH")]
    pub auth_file: Option<PathBuf>,
}

impl AuthOptions {
    /// The store file.
    pub fn store(&self) -> Store {
        Store::at(self.auth_file.clone().unwrap_or_else(Store::default_path))
    }

    fn secret(&self, entry: &OAuthEntry) -> Result<Option<String>, String> {
        if let Some(path) = self.client_secret_file.as_ref().or(entry.client_secret_file.as_ref()) {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("--client-secret-file {}: {e}", path.display()))?;
            return Ok(Some(text.trim_end_matches(['\n', '\r']).to_owned()));
        }
        Ok(std::env::var(CLIENT_SECRET_ENV).ok().filter(|s| !s.is_empty()))
    }

    /// The OAuth configuration: these options over the server entry's `oauth` settings.
    pub fn config(&self, entry: &OAuthEntry, cacerts: &[PathBuf], interactive: bool) -> Result<OAuthConfig, String> {
        let client_id = self.client_id.clone().or(entry.client_id.clone());
        let signing_key = match &self.client_key {
            Some(path) => {
                let pem = std::fs::read_to_string(path).map_err(|e| format!("--client-key {}: {e}", path.display()))?;
                Some(SigningKey::from_pem(&pem, &self.client_key_alg).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        let scopes = if self.scopes.is_empty() { entry.scopes.clone() } else { self.scopes.clone() };
        Ok(OAuthConfig {
            client_secret: if client_id.is_some() { self.secret(entry)? } else { None },
            client_id,
            client_metadata_url: self.client_metadata_url.clone().or(entry.client_metadata_url.clone()),
            scopes,
            grant: if self.client_credentials || entry.client_credentials {
                Grant::ClientCredentials
            } else {
                Grant::AuthorizationCode
            },
            signing_key,
            store: Some(self.store().path().to_owned()),
            client_name: "mcp (mcp-rs command line)".into(),
            interactive: interactive && !self.stored_auth_only,
            ca_files: cacerts.to_vec(),
            ..OAuthConfig::default()
        })
    }

    /// The authorizer of a command: a browser flow when allowed.
    pub fn authorizer(&self, entry: &OAuthEntry, cacerts: &[PathBuf]) -> Result<OAuth, String> {
        self.authorizer_showing(entry, cacerts, |_| {})
    }

    /// [`AuthOptions::authorizer`], also telling `show` each authorization URL a person must
    /// open (the inspector puts it on its page).
    pub fn authorizer_showing(
        &self,
        entry: &OAuthEntry,
        cacerts: &[PathBuf],
        show: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<OAuth, String> {
        let config = self.config(entry, cacerts, true)?;
        let open = !self.no_browser;
        let mut browser = Browser::new(open, move |url: &str| {
            if open {
                eprintln!("mcp: authorize in your browser (opening it); if it does not open, visit:\n  {url}");
            } else {
                eprintln!("mcp: to authorize, open this URL in a browser:\n  {url}");
            }
            show(url);
        });
        if let Some(port) = self.callback_port.or(entry.callback_port) {
            browser = browser.fixed_port(port);
        }
        OAuth::new(config, Some(Arc::new(browser))).map_err(|e| e.to_string())
    }
}

fn when(expires_at: Option<u64>) -> Value {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    match expires_at {
        None => json!(null),
        Some(at) if at <= now => json!("expired"),
        Some(at) => json!(format!("in {}", human_seconds(at - now))),
    }
}

fn human_seconds(s: u64) -> String {
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{} h", s / 3600),
    }
}

/// `mcp login URL`.
pub async fn login(options: &AuthOptions, url: &str, entry: &OAuthEntry, cacerts: &[PathBuf]) -> Result<Value, String> {
    let oauth = options.authorizer(entry, cacerts)?;
    let summary = oauth.login(url).await.map_err(|e| e.to_string())?;
    Ok(json!({
        "loggedIn": url,
        "issuer": summary.issuer,
        "resource": summary.resource,
        "clientId": summary.client_id,
        "scopes": summary.scopes,
        "expires": when(summary.expires_at),
        "refreshable": summary.refreshable,
        "store": options.store().path(),
    }))
}

/// `mcp logout [URL] [--all]`.
pub fn logout(options: &AuthOptions, url: Option<&str>, all: bool) -> Result<Value, String> {
    let store = options.store();
    let mut file = store.load().map_err(|e| e.to_string())?;
    let removed = match (url, all) {
        (_, true) => {
            let n = file.tokens.len();
            file.tokens.clear();
            file.clients.clear();
            n
        }
        (Some(url), false) => usize::from(file.remove_for(url)),
        (None, false) => {
            return Err("logout from which server? name it (--url, --config/--server, or URL), or --all".into())
        }
    };
    store.save(&file).map_err(|e| e.to_string())?;
    Ok(json!({"loggedOut": removed, "store": store.path()}))
}

/// `mcp auth status`: what is stored, never a secret.
pub fn status(options: &AuthOptions) -> Result<Value, String> {
    let store = options.store();
    let file = store.load().map_err(|e| e.to_string())?;
    let servers: Vec<Value> = file
        .tokens
        .iter()
        .map(|t| {
            let how = file.clients.get(&t.issuer).filter(|c| c.client_id == t.client_id).map(|c| c.how.clone());
            json!({
                "server": t.server_url,
                "issuer": t.issuer,
                "clientId": t.client_id,
                "registration": how.unwrap_or_else(|| "pre-registered".into()),
                "scopes": t.tokens.scopes,
                "tokenType": t.tokens.token_type,
                "expires": when(t.tokens.expires_at),
                "refreshable": t.tokens.refresh_token.is_some(),
            })
        })
        .collect();
    Ok(json!({"store": store.path(), "servers": servers}))
}

/// `mcp auth token URL`: the access token (refreshed when due), for another tool to use.
pub async fn token(options: &AuthOptions, url: &str, entry: &OAuthEntry, cacerts: &[PathBuf]) -> Result<Value, String> {
    use mcp::client::auth::Authorizer as _;
    let oauth = options.authorizer(entry, cacerts)?;
    oauth.attach(url);
    let credentials = oauth.credentials("POST", url).await.map_err(|e| e.to_string())?;
    let header = credentials.headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.clone());
    let Some(header) = header else {
        return Err(format!("no token stored for {url}: run `mcp login {url}`"));
    };
    let token = header.split_once(' ').map_or(header.as_str(), |(_, t)| t).to_owned();
    Ok(json!({"accessToken": token}))
}
