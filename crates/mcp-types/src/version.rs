//! Protocol revisions and their eras.
//!
//! Legacy revisions (2024-11-05 to 2025-11-25) open with `initialize`; modern ones (2026-07-28
//! and later) carry the version on every request in `_meta`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A protocol revision string such as `"2025-11-25"`. An open set: a peer may send anything.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProtocolVersion(pub String);

impl ProtocolVersion {
    /// `2024-11-05`: the first revision (HTTP+SSE transport).
    pub const V2024_11_05: &'static str = "2024-11-05";
    /// `2025-03-26`: Streamable HTTP, batching, OAuth.
    pub const V2025_03_26: &'static str = "2025-03-26";
    /// `2025-06-18`: structured output, elicitation; no more batching.
    pub const V2025_06_18: &'static str = "2025-06-18";
    /// `2025-11-25`: the last revision with `initialize`.
    pub const V2025_11_25: &'static str = "2025-11-25";
    /// `2026-07-28`: stateless, per-request `_meta`.
    pub const V2026_07_28: &'static str = "2026-07-28";

    /// Every revision this crate models, newest first.
    pub const ALL: [&'static str; 5] =
        [Self::V2026_07_28, Self::V2025_11_25, Self::V2025_06_18, Self::V2025_03_26, Self::V2024_11_05];
    /// The revisions negotiated through `initialize`, newest first.
    pub const LEGACY: [&'static str; 4] = [Self::V2025_11_25, Self::V2025_06_18, Self::V2025_03_26, Self::V2024_11_05];
    /// The revisions carried per request in `_meta`, newest first.
    pub const MODERN: [&'static str; 1] = [Self::V2026_07_28];
    /// The newest revision.
    pub const LATEST: &'static str = Self::V2026_07_28;
    /// The newest legacy revision.
    pub const LATEST_LEGACY: &'static str = Self::V2025_11_25;

    /// The version as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this revision is modern (stateless, no `initialize`).
    pub fn is_modern(&self) -> bool {
        is_modern(&self.0)
    }
}

/// Whether a revision string names a modern (stateless) revision: 2026-07-28 or later.
/// Dates compare as strings, so any later date counts as modern.
pub fn is_modern(version: &str) -> bool {
    version >= ProtocolVersion::V2026_07_28
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ProtocolVersion {
    fn from(s: &str) -> Self {
        ProtocolVersion(s.to_owned())
    }
}
