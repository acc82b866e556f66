//! Signing keys and tokens made in the test, and a small HTTP server publishing the keys (JWKS,
//! issuer metadata) and answering introspection, so the resource server is tested over real
//! sockets with tokens of every kind of wrong.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// An ES256 key pair.
pub struct Key {
    pub kid: String,
    pair: rcgen::KeyPair,
}

impl Key {
    pub fn new(kid: &str) -> Key {
        Key { kid: kid.into(), pair: rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap() }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        let raw = self.pair.public_key_raw(); // 0x04 || x || y
        json!({"kty": "EC", "crv": "P-256", "x": b64(&raw[1..33]), "y": b64(&raw[33..65]), "kid": self.kid, "alg": "ES256", "use": "sig"})
    }

    /// The public key in PEM (what an HS256 forgery uses as its secret).
    pub fn public_pem(&self) -> String {
        self.pair.public_key_pem()
    }

    /// A token with `claims`, signed by this key and naming `kid`.
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        header.typ = Some("at+jwt".into());
        let key = EncodingKey::from_ec_pem(self.pair.serialize_pem().as_bytes()).unwrap();
        jsonwebtoken::encode(&header, claims, &key).unwrap()
    }

    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

/// What the key server publishes and counts.
pub struct Issuer {
    pub url: String,
    pub keys: Arc<Mutex<Vec<Value>>>,
    pub jwks_fetches: Arc<AtomicUsize>,
    /// The audience of the active opaque token `opaque-good`.
    pub audience: Arc<Mutex<String>>,
}

impl Issuer {
    /// Starts the server: `/.well-known/oauth-authorization-server`, `/jwks`, `/introspect`
    /// (client `rs` with secret `rs-secret`; the opaque token `opaque-good` is active).
    pub async fn start(keys: Vec<Value>) -> Issuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let keys = Arc::new(Mutex::new(keys));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let audience = Arc::new(Mutex::new(String::new()));
        let state = (url.clone(), keys.clone(), jwks_fetches.clone(), audience.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let state = state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| answer(state.clone(), request));
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        Issuer { url, keys, jwks_fetches, audience }
    }

    pub fn fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }
}

type State = (String, Arc<Mutex<Vec<Value>>>, Arc<AtomicUsize>, Arc<Mutex<String>>);

async fn answer(
    state: State,
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    let (url, keys, fetches, audience) = state;
    let path = request.uri().path().to_owned();
    let authorization = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let reply = match path.as_str() {
        "/.well-known/oauth-authorization-server" => {
            json!({"issuer": url, "jwks_uri": format!("{url}/jwks"), "introspection_endpoint": format!("{url}/introspect")})
        }
        "/jwks" => {
            fetches.fetch_add(1, Ordering::SeqCst);
            json!({"keys": *keys.lock().unwrap()})
        }
        "/introspect" => {
            let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("rs:rs-secret"));
            if authorization.as_deref() != Some(&expected) {
                let mut r = http::Response::new(Full::new(Bytes::from_static(b"{\"error\":\"invalid_client\"}")));
                *r.status_mut() = http::StatusCode::UNAUTHORIZED;
                return Ok(r);
            }
            let form = String::from_utf8_lossy(&body).into_owned();
            let token = form.split('&').find_map(|kv| kv.strip_prefix("token=")).unwrap_or_default().to_owned();
            let audience = audience.lock().unwrap().clone();
            introspection(&url, &token, &audience)
        }
        _ => {
            let mut r = http::Response::new(Full::new(Bytes::new()));
            *r.status_mut() = http::StatusCode::NOT_FOUND;
            return Ok(r);
        }
    };
    let mut r = http::Response::new(Full::new(Bytes::from(reply.to_string())));
    r.headers_mut().insert("content-type", http::HeaderValue::from_static("application/json"));
    Ok(r)
}

/// `opaque-good` is active for `audience`, `opaque-other` for another resource; the rest is not.
fn introspection(url: &str, token: &str, audience: &str) -> Value {
    match token {
        "opaque-good" | "opaque-other" => {
            let aud = if token == "opaque-good" { audience.to_owned() } else { "https://elsewhere.example/mcp".into() };
            json!({"active": true, "sub": "carol", "client_id": "c1", "scope": "mcp:basic", "iss": url, "aud": aud, "exp": now() + 600, "token_type": "Bearer"})
        }
        _ => json!({"active": false}),
    }
}
