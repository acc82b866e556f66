//! Sealed `requestState` for 2026-07-28 multi round-trip requests.
//!
//! The state carries the answers of earlier rounds, so a handler that asks twice finds both
//! answers on the second retry without the server keeping anything. It is attacker-controlled,
//! so it is HMAC-SHA256 sealed, bound to the request (method, name and arguments) and to an
//! expiry; a state that fails any check is rejected with -32602.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use mcp_types::{ErrorObject, JsonObject};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The secret that seals states (replaceable while serving: a cluster node adopts the shared
/// key at start-up, after the router may have been cloned). Without a random source it has no
/// key (never a guessable one): no state is sealed or opened then.
#[derive(Clone)]
pub(crate) struct StateKey(std::sync::Arc<std::sync::RwLock<Option<[u8; 32]>>>);

impl StateKey {
    pub fn new(key: [u8; 32]) -> Self {
        StateKey(std::sync::Arc::new(std::sync::RwLock::new(Some(key))))
    }

    /// A key from the OS's random source (none when it fails: the server's start says so).
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        let key = crate::util::random::fill(&mut key).ok().map(|()| key);
        StateKey(std::sync::Arc::new(std::sync::RwLock::new(key)))
    }

    /// Replaces the key: states sealed with the old one no longer open.
    #[cfg_attr(not(all(feature = "cli", feature = "redis")), allow(dead_code))] // --store redis
    pub fn set(&self, key: [u8; 32]) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(key);
    }

    fn mac(&self) -> Result<Hmac<Sha256>, ErrorObject> {
        let key = (*self.0.read().unwrap_or_else(|e| e.into_inner())).ok_or_else(|| {
            ErrorObject::internal("no requestState key: the system's random source failed when the server started")
        })?;
        Ok(Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length"))
    }
}

#[derive(Serialize, Deserialize)]
struct Payload {
    /// Fingerprint of the request: method, name or URI, arguments.
    fp: String,
    /// Expiry, Unix seconds.
    exp: u64,
    /// Answers so far, by input key.
    ans: JsonObject,
}

/// A digest that identifies a request's method and parameters (minus the retry fields).
pub(crate) fn fingerprint(method: &str, target: &str, arguments: &serde_json::Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(method.as_bytes());
    hasher.update([0]);
    hasher.update(target.as_bytes());
    hasher.update([0]);
    hasher.update(arguments.to_string().as_bytes());
    URL_SAFE_NO_PAD.encode(&hasher.finalize()[..16])
}

/// Seals the answers known so far into a state string.
pub(crate) fn seal(key: &StateKey, fp: String, answers: JsonObject, ttl: Duration) -> Result<String, ErrorObject> {
    let exp = now() + ttl.as_secs();
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&Payload { fp, exp, ans: answers }).unwrap_or_default());
    let mut mac = key.mac()?;
    mac.update(body.as_bytes());
    let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    Ok(format!("{body}.{tag}"))
}

/// Opens a state: checks its seal, that it belongs to this request, and that it has not expired.
pub(crate) fn open(key: &StateKey, fp: &str, state: &str) -> Result<JsonObject, ErrorObject> {
    let invalid = |why: &str| {
        ErrorObject::invalid_params(format!("requestState {why}: retry the original request without requestState"))
    };
    let (body, tag) = state.split_once('.').ok_or_else(|| invalid("is malformed"))?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid("is malformed"))?;
    let mut mac = key.mac()?;
    mac.update(body.as_bytes());
    mac.verify_slice(&tag).map_err(|_| invalid("was not issued by this server or was altered"))?;
    let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| invalid("is malformed"))?;
    let payload: Payload = serde_json::from_slice(&bytes).map_err(|_| invalid("is malformed"))?;
    if payload.fp != fp {
        return Err(invalid("belongs to a different request"));
    }
    if payload.exp < now() {
        return Err(invalid("has expired"));
    }
    Ok(payload.ans)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seals_and_detects_tampering_and_mismatch() {
        let key = StateKey::random();
        let fp = fingerprint("tools/call", "t", &json!({"a": 1}));
        let mut answers = JsonObject::new();
        answers.insert("elicitation-0".into(), json!({"action": "accept"}));
        let state = seal(&key, fp.clone(), answers.clone(), Duration::from_secs(60)).unwrap();
        assert_eq!(open(&key, &fp, &state).unwrap(), answers);
        let other = fingerprint("tools/call", "t", &json!({"a": 2}));
        assert!(open(&key, &other, &state).is_err());
        let mut forged = state.clone();
        forged.replace_range(0..1, if forged.starts_with('A') { "B" } else { "A" });
        assert!(open(&key, &fp, &forged).is_err());
        assert!(open(&StateKey::random(), &fp, &state).is_err());
        assert!(open(&key, &fp, "garbage").is_err());
        let expired = seal(&key, fp.clone(), answers, Duration::ZERO).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        assert!(open(&key, &fp, &expired).is_err());
    }
}
