//! PKCE (RFC 7636, S256 only) and the `state` of an authorization request: random values made
//! fresh for every flow, never shared between flows or processes.

use base64::Engine as _;
use sha2::Digest as _;

/// URL-safe base64 without padding.
pub(crate) fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `n` random bytes, base64url.
pub(crate) fn random_text(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    crate::util::random::fill_or_panic(&mut bytes); // never a guessable value
    b64url(&bytes)
}

/// A code verifier and its S256 challenge.
pub(crate) struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair (a 43-character verifier: 256 random bits).
    pub fn new() -> Pkce {
        let verifier = random_text(32);
        let challenge = b64url(&sha2::Sha256::digest(verifier.as_bytes()));
        Pkce { verifier, challenge }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_rfc_7636_s256_of_the_verifier() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(b64url(&sha2::Sha256::digest(verifier.as_bytes())), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let a = Pkce::new();
        let b = Pkce::new();
        assert_eq!(a.verifier.len(), 43);
        assert_ne!(a.verifier, b.verifier, "every flow has its own verifier");
    }
}
