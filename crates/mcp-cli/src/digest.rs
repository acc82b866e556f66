//! The fingerprint of a JSON value: SHA-256 of its serialized text (keys sorted, as
//! `serde_json` keeps them), in hex. The gateway's audit log and the doctor's pin file use it.

/// SHA-256 of `value`'s JSON text, in lower-case hex.
pub fn json_sha256(value: &serde_json::Value) -> String {
    use sha2::Digest as _;
    let canonical = serde_json::to_vec(value).unwrap_or_default();
    sha2::Sha256::digest(&canonical).iter().map(|b| format!("{b:02x}")).collect()
}
