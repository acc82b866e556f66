//! The engine's parts below the server: framing of JSON lines, raw parameters read in place,
//! the outbox every message leaves through, the in-flight table, a connection's session state,
//! text streamed into a message as it is sent (`splice`), and the file-descriptor plumbing of
//! stdio. Nothing here knows about a router; the connection
//! loop that drives one is `server::connection`, and the client drives the same parts.

pub mod fd;
pub(crate) mod inflight;
pub mod lines;
pub(crate) mod memory;
pub mod outbox;
pub(crate) mod raw;
pub mod session;
pub mod splice;
