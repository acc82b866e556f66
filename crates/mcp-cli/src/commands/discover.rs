//! `mcp discover`: what the server is and speaks (its era, protocol versions, info,
//! capabilities and instructions).

use mcp::client::Client;
use serde_json::{json, Value};

/// The server's description, as the handshake gave it.
pub(crate) fn discover(client: &Client) -> Value {
    let d = client.description();
    json!({
        "protocolVersion": d.protocol_version,
        "era": if d.modern { "2026-07-28 (stateless)" } else { "legacy (initialize)" },
        "supportedVersions": d.supported_versions,
        "serverInfo": d.server_info,
        "capabilities": d.capabilities,
        "instructions": d.instructions,
    })
}
