//! Random bytes from the operating system, and the one policy for when it cannot give them:
//! nothing goes on with zeros or a weaker source. A server's command line checks the source
//! before it serves, and refuses to start, saying why ([`check`]); past that, what needs random
//! bytes and cannot get them fails: a request gets a JSON-RPC error naming the cause.

use std::fmt;

/// The operating system's random source failed.
#[derive(Debug, Clone)]
pub struct Unavailable(String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the system's random source failed ({}): no unguessable id or key can be made", self.0)
    }
}

impl std::error::Error for Unavailable {}

impl From<Unavailable> for std::io::Error {
    fn from(e: Unavailable) -> Self {
        std::io::Error::other(e.to_string())
    }
}

impl From<Unavailable> for mcp_types::ErrorObject {
    fn from(e: Unavailable) -> Self {
        mcp_types::ErrorObject::internal(e.to_string())
    }
}

/// Fills `bytes` from the operating system's random source.
pub fn fill(bytes: &mut [u8]) -> Result<(), Unavailable> {
    getrandom::fill(bytes).map_err(|e| Unavailable(e.to_string()))
}

/// `n` random bytes as lowercase hex (`2n` characters).
pub fn hex(n: usize) -> Result<String, Unavailable> {
    let mut bytes = vec![0u8; n];
    fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether the random source works: what a server asks before it serves (`Err` says why it
/// will not).
pub fn check() -> std::io::Result<()> {
    let mut probe = [0u8; 16];
    fill(&mut probe).map_err(|e| std::io::Error::other(format!("{e}; this server will not serve without it")))
}

/// Random bytes where no error can be returned (a key made with the router): a failure is a
/// panic saying so, never zeros. A handler's panic is answered with a JSON-RPC error.
pub(crate) fn fill_or_panic(bytes: &mut [u8]) {
    if let Err(e) = fill(bytes) {
        panic!("{e}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_twice_as_long_and_differs() {
        let (a, b) = (super::hex(16).unwrap(), super::hex(16).unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        super::check().unwrap();
    }
}
