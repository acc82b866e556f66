//! Where the records live: SQLite (a file opened read-only) or PostgreSQL (a role that can only
//! `SELECT`). Both answer the same four questions with the same keys and the same order; errors
//! leave here as [`StoreError`], which never carries SQL text or a connection string.

pub mod sqlite;

#[cfg(feature = "postgres")]
pub mod postgres;

use std::time::Duration;

use crate::model::{Customer, CustomerHit, Interaction, InteractionSummary};
use crate::query::{InteractionsBefore, Search, SearchAfter};

pub use crate::model::MAX_BODY_BYTES;

/// Why the database did not answer, in words a model can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The statement ran past the server's timeout and was cancelled.
    Timeout(Duration),
    /// The database cannot be reached right now.
    Unavailable,
    /// Anything else; the detail (an SQLSTATE or SQLite code, never the SQL) went to the log.
    Failed,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Timeout(limit) => write!(
                f,
                "The database took longer than {} ms and the search was cancelled; try a longer, more specific \
                 query, or try again later.",
                limit.as_millis()
            ),
            StoreError::Unavailable => {
                f.write_str("The customer database cannot be reached right now; try again in a moment.")
            }
            StoreError::Failed => f.write_str("The customer database failed to answer; the server's log has details."),
        }
    }
}

impl std::error::Error for StoreError {}

/// A store failure reaches the model as a tool error, in the words above.
impl From<StoreError> for mcp::server::ToolError {
    fn from(e: StoreError) -> Self {
        mcp::server::ToolError::new(e.to_string())
    }
}

/// A customer database, opened for reading.
pub enum Store {
    /// An SQLite file.
    Sqlite(sqlite::SqliteStore),
    /// A PostgreSQL database.
    #[cfg(feature = "postgres")]
    Postgres(postgres::PgStore),
}

impl Store {
    /// Up to `limit + 1` hits after `after` (one more than asked, to know whether a page follows):
    /// exact and prefix hits first, from btree ranges on the keys, and only when they do not fill
    /// the page, substring hits (trigram index for 3+ characters, a scan for 1–2).
    pub async fn search(
        &self,
        search: &Search,
        after: SearchAfter,
        limit: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        let take = limit + 1;
        let mut hits =
            if after.rank < 2 { self.search_tier(Tier::Prefix, search, after, take).await? } else { Vec::new() };
        // A whole e-mail address that matched is looked up, not searched for inside others: its
        // exact and prefix hits come from the index and nothing is scanned (one that matched
        // nothing is still searched for as part of others).
        let address_found = search.is_email_address() && !hits.is_empty();
        if hits.len() < take as usize && !address_found {
            let after = if after.rank < 2 { SearchAfter { rank: 1, name_len: i32::MAX, id: i64::MAX } } else { after };
            let more = take - hits.len() as u32;
            hits.extend(self.search_tier(Tier::Substring, search, after, more).await?);
        }
        Ok(hits)
    }

    async fn search_tier(
        &self,
        tier: Tier,
        search: &Search,
        after: SearchAfter,
        take: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        match self {
            Store::Sqlite(s) => s.search_tier(tier, search, after, take).await,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.search_tier(tier, search, after, take).await,
        }
    }

    /// The customer `id`, if any.
    pub async fn customer(&self, id: i64) -> Result<Option<Customer>, StoreError> {
        match self {
            Store::Sqlite(s) => s.customer(id).await,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.customer(id).await,
        }
    }

    /// Up to `limit + 1` of the customer's interactions, newest first, since a time and before a
    /// cursor.
    pub async fn interactions(
        &self,
        customer_id: i64,
        since: Option<String>,
        before: Option<InteractionsBefore>,
        limit: u32,
    ) -> Result<Vec<InteractionSummary>, StoreError> {
        match self {
            Store::Sqlite(s) => s.interactions(customer_id, since, before, limit).await,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.interactions(customer_id, since, before, limit).await,
        }
    }

    /// The interaction `id`, whole (its body cut at [`MAX_BODY_BYTES`]).
    pub async fn interaction(&self, id: i64) -> Result<Option<Interaction>, StoreError> {
        match self {
            Store::Sqlite(s) => s.interaction(id).await,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.interaction(id).await,
        }
    }

    /// Every customer id and every interaction id, ascending (for completion).
    pub async fn ids(&self) -> Result<(Vec<i64>, Vec<i64>), StoreError> {
        match self {
            Store::Sqlite(s) => s.ids().await,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.ids().await,
        }
    }

    /// "SQLite" or "PostgreSQL".
    pub fn backend(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "SQLite (the file is opened read-only)",
            #[cfg(feature = "postgres")]
            Store::Postgres(_) => "PostgreSQL (a role that may only SELECT these tables)",
        }
    }
}

/// The two passes of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Keys equal to the query or starting with it (ranks 0 and 1).
    Prefix,
    /// Keys containing it elsewhere (rank 2).
    Substring,
}

/// The end of the range of keys that start with `key`: `key` followed by U+10FFFF, which sorts
/// after every character in code-point order (SQLite's BINARY, PostgreSQL's "C" collation).
pub fn prefix_end(key: &str) -> String {
    format!("{key}\u{10FFFF}")
}
