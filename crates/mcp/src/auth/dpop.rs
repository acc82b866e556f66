//! DPoP on the resource server (RFC 9449 §4.3 and §7): a token bound to a key (`cnf.jkt`) is
//! accepted only with the `DPoP` scheme and a fresh proof signed by that key, for this method
//! and URL and this token; a proof is accepted once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{DecodingKey, Validation};
use serde_json::{json, Value};
use sha2::Digest as _;

/// The algorithms a proof may use.
pub(crate) const ALGORITHMS: [&str; 4] = ["ES256", "ES384", "RS256", "PS256"];

/// How far a proof's `iat` may be from now.
const WINDOW: u64 = 300;

fn b64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The JWK SHA-256 thumbprint (RFC 7638) of a public key.
pub(crate) fn thumbprint(jwk: &Value) -> Option<String> {
    let text = |k: &str| jwk.get(k).and_then(Value::as_str);
    let canonical = match text("kty")? {
        "EC" => json!({"crv": text("crv")?, "kty": "EC", "x": text("x")?, "y": text("y")?}),
        "RSA" => json!({"e": text("e")?, "kty": "RSA", "n": text("n")?}),
        "OKP" => json!({"crv": text("crv")?, "kty": "OKP", "x": text("x")?}),
        _ => return None,
    };
    // serde_json writes object keys in sorted order and without spaces: RFC 7638's form.
    Some(b64url(&sha2::Sha256::digest(canonical.to_string().as_bytes())))
}

/// Proofs seen, by `jti`, while they could still be replayed.
#[derive(Default)]
pub(crate) struct ReplayCache {
    seen: Mutex<HashMap<String, Instant>>,
}

impl ReplayCache {
    /// Records `jti`; `false` if it was seen already.
    fn first_use(&self, jti: &str) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let keep = Duration::from_secs(2 * WINDOW);
        if seen.len() > 100_000 {
            seen.retain(|_, at| at.elapsed() < keep);
            if seen.len() > 100_000 {
                seen.clear();
            }
        }
        seen.insert(jti.to_owned(), Instant::now()).is_none()
    }
}

/// Checks the `DPoP` proof of a request carrying `token`, bound to the key `jkt`.
pub(crate) fn check_proof(
    proof: &str,
    method: &str,
    url: &str,
    token: &str,
    jkt: &str,
    replays: &ReplayCache,
) -> Result<(), String> {
    let header = jsonwebtoken::decode_header(proof).map_err(|e| format!("the DPoP proof is not a JWT: {e}"))?;
    if header.typ.as_deref() != Some("dpop+jwt") {
        return Err("the DPoP proof's typ is not dpop+jwt".into());
    }
    let alg = format!("{:?}", header.alg);
    if !ALGORITHMS.contains(&alg.as_str()) {
        return Err(format!("the DPoP proof's algorithm {alg} is not accepted"));
    }
    let jwk = header.jwk.ok_or("the DPoP proof carries no jwk")?;
    let jwk_json = serde_json::to_value(&jwk).map_err(|e| e.to_string())?;
    if jwk_json.get("d").is_some() {
        return Err("the DPoP proof's jwk is a private key".into());
    }
    if thumbprint(&jwk_json).as_deref() != Some(jkt) {
        return Err("the DPoP proof is signed by another key than the token is bound to".into());
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("the DPoP proof's key is unusable: {e}"))?;
    let mut validation = Validation::new(header.alg);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let claims = jsonwebtoken::decode::<Value>(proof, &key, &validation)
        .map_err(|_| "the DPoP proof's signature does not verify".to_owned())?
        .claims;
    let text = |k: &str| claims.get(k).and_then(Value::as_str);
    if !text("htm").is_some_and(|m| m.eq_ignore_ascii_case(method)) {
        return Err("the DPoP proof is for another HTTP method".into());
    }
    if text("htu").map(crate::auth::canonical_resource) != Some(crate::auth::canonical_resource(url)) {
        return Err("the DPoP proof is for another URL".into());
    }
    let iat = claims.get("iat").and_then(Value::as_u64).ok_or("the DPoP proof has no iat")?;
    if iat.abs_diff(now()) > WINDOW {
        return Err("the DPoP proof is too old (or from the future)".into());
    }
    if text("ath") != Some(b64url(&sha2::Sha256::digest(token.as_bytes())).as_str()) {
        return Err("the DPoP proof is for another access token (ath)".into());
    }
    let jti = text("jti").filter(|j| !j.is_empty()).ok_or("the DPoP proof has no jti")?;
    if !replays.first_use(jti) {
        return Err("the DPoP proof was used before".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7638_thumbprint() {
        // RFC 7638 §3.1.
        let jwk = json!({"kty": "RSA", "e": "AQAB", "alg": "RS256", "kid": "2011-04-29",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"});
        assert_eq!(thumbprint(&jwk).as_deref(), Some("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"));
    }
}
