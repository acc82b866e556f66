//! Keys the client signs with: a DPoP key (RFC 9449; ES256, made by the client and kept with
//! the token it is bound to) and the client's own key for `private_key_jwt` (RFC 7523), given as
//! PEM.

use std::fmt;

use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

use super::pkce::{b64url, random_text};
use super::AuthError;

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A DPoP key pair (P-256).
#[derive(Clone)]
pub struct DpopKey {
    pkcs8: Vec<u8>,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DpopKey(<private>)")
    }
}

impl DpopKey {
    /// A new key.
    pub fn generate() -> Result<DpopKey, AuthError> {
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map_err(|_| AuthError::Config("could not make a DPoP key".into()))?;
        Ok(DpopKey { pkcs8: pkcs8.as_ref().to_vec() })
    }

    /// A key kept earlier (PKCS#8, base64url).
    pub fn from_stored(text: &str) -> Option<DpopKey> {
        use base64::Engine as _;
        let pkcs8 = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).ok()?;
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &SystemRandom::new()).ok()?;
        Some(DpopKey { pkcs8 })
    }

    /// The key to keep (PKCS#8, base64url).
    pub fn to_stored(&self) -> String {
        b64url(&self.pkcs8)
    }

    fn pair(&self) -> EcdsaKeyPair {
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &self.pkcs8, &SystemRandom::new())
            .expect("a key made by this module")
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        let pair = self.pair();
        let point = pair.public_key().as_ref(); // 0x04 || x || y
        json!({"kty": "EC", "crv": "P-256", "x": b64url(&point[1..33]), "y": b64url(&point[33..65])})
    }

    /// A proof for one request: method, URL (without query or fragment), the server's nonce if
    /// it gave one, and the access token it goes with (as `ath`) when calling a resource.
    pub fn proof(&self, method: &str, url: &str, nonce: Option<&str>, access_token: Option<&str>) -> String {
        use sha2::Digest as _;
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()});
        let mut claims = json!({"jti": random_text(16), "htm": method, "htu": htu, "iat": now()});
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        if let Some(token) = access_token {
            claims["ath"] = json!(b64url(&sha2::Sha256::digest(token.as_bytes())));
        }
        let input = format!("{}.{}", b64url(header.to_string().as_bytes()), b64url(claims.to_string().as_bytes()));
        let signature = self.pair().sign(&SystemRandom::new(), input.as_bytes()).expect("ECDSA signing");
        format!("{input}.{}", b64url(signature.as_ref()))
    }
}

/// The client's key for `private_key_jwt`.
#[derive(Clone)]
pub struct SigningKey {
    pem: String,
    algorithm: jsonwebtoken::Algorithm,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({:?}, <private>)", self.algorithm)
    }
}

impl SigningKey {
    /// A PEM private key and the algorithm to sign with (`ES256`, `ES384`, `RS256`, `PS256`...).
    pub fn from_pem(pem: &str, algorithm: &str) -> Result<SigningKey, AuthError> {
        let algorithm: jsonwebtoken::Algorithm =
            algorithm.parse().map_err(|_| AuthError::Config(format!("unknown signing algorithm {algorithm:?}")))?;
        let key = SigningKey { pem: pem.to_owned(), algorithm };
        key.encoding_key()?;
        Ok(key)
    }

    /// The algorithm's name.
    pub fn algorithm(&self) -> String {
        format!("{:?}", self.algorithm)
    }

    fn encoding_key(&self) -> Result<jsonwebtoken::EncodingKey, AuthError> {
        use jsonwebtoken::Algorithm::*;
        let pem = self.pem.as_bytes();
        let key = match self.algorithm {
            ES256 | ES384 => jsonwebtoken::EncodingKey::from_ec_pem(pem),
            RS256 | RS384 | RS512 | PS256 | PS384 | PS512 => jsonwebtoken::EncodingKey::from_rsa_pem(pem),
            EdDSA => jsonwebtoken::EncodingKey::from_ed_pem(pem),
            _ => return Err(AuthError::Config("private_key_jwt needs an asymmetric algorithm".into())),
        };
        key.map_err(|e| AuthError::Config(format!("the client's private key cannot be read: {e}")))
    }

    /// A client assertion (RFC 7523 §3): issued by and about `client_id`, for `audience` (the
    /// authorization server's issuer), valid for five minutes, used once.
    pub fn assertion(&self, client_id: &str, audience: &str) -> Result<String, AuthError> {
        let claims = json!({"iss": client_id, "sub": client_id, "aud": audience, "iat": now(), "exp": now() + 300, "jti": random_text(16)});
        let header = jsonwebtoken::Header::new(self.algorithm);
        jsonwebtoken::encode(&header, &claims, &self.encoding_key()?)
            .map_err(|e| AuthError::Config(format!("could not sign the client assertion: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dpop_proof_verifies_with_its_own_jwk() {
        let key = DpopKey::generate().unwrap();
        let proof = key.proof("POST", "https://as.example/token?x=1", Some("n1"), Some("tok"));
        let parts: Vec<&str> = proof.split('.').collect();
        use base64::Engine as _;
        let decode = |p: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(p).unwrap();
        let header: Value = serde_json::from_slice(&decode(parts[0])).unwrap();
        let claims: Value = serde_json::from_slice(&decode(parts[1])).unwrap();
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(claims["htu"], "https://as.example/token", "no query in htu");
        assert_eq!(claims["nonce"], "n1");
        assert!(claims["ath"].is_string());
        let jwk = &header["jwk"];
        let mut point = vec![4u8];
        point.extend(decode(jwk["x"].as_str().unwrap()));
        point.extend(decode(jwk["y"].as_str().unwrap()));
        let public = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point);
        public.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &decode(parts[2])).expect("verifies");
        let again = DpopKey::from_stored(&key.to_stored()).unwrap();
        assert_eq!(again.jwk(), key.jwk());
    }
}
