//! Where the records live: SQLite (a file opened read-only) or PostgreSQL (a role that can only
//! `SELECT`). Both answer the same four questions with the same keys and the same order; errors
//! leave here as [`StoreError`], which never carries SQL text or a connection string.

pub mod sqlite;

#[cfg(feature = "postgres")]
pub mod postgres;

use std::time::Duration;

use crate::grams::{INSIDE_CHARS, PREFIX_CHARS};
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
    /// exact and prefix hits first, then, only when they do not fill the page, substring hits.
    /// Every step walks an index in page order and stops when the page is full (see
    /// [`crate::grams`]); a step that could walk far is bounded, and followed, when it found too
    /// little, by the statement that looks the rest up in an index instead.
    pub async fn search(
        &self,
        search: &Search,
        after: SearchAfter,
        limit: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        let take = limit + 1;
        let mut hits = if after.rank < 2 { self.exact_and_prefix(search, after, take).await? } else { Vec::new() };
        // A whole e-mail address that matched is looked up, not searched for inside others: its
        // exact and prefix hits come from the index and nothing is scanned (one that matched
        // nothing is still searched for as part of others).
        let address_found = search.is_email_address() && !hits.is_empty();
        if hits.len() < take as usize && !address_found {
            let after = if after.rank < 2 { SearchAfter { rank: 1, name_len: i32::MAX, id: i64::MAX } } else { after };
            let more = take - hits.len() as u32;
            hits.extend(self.inside(search, after, more).await?);
        }
        Ok(hits)
    }

    /// Ranks 0 and 1.
    async fn exact_and_prefix(
        &self,
        search: &Search,
        after: SearchAfter,
        take: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        if search.is_email_address() {
            // A whole address is looked up among the e-mail addresses alone (only they hold an
            // `@`): the address itself, then those that start with it.
            return self.step(Step::Address, search, after, take).await;
        }
        let long = search.key_chars() > PREFIX_CHARS
            || search.kana.as_deref().is_some_and(|k| k.chars().count() > PREFIX_CHARS);
        let walk_rows = long.then_some(WALK_ROWS);
        let hits = self.step(Step::Walk { walk_rows }, search, after, take).await?;
        if long && hits.len() < take as usize {
            // The walk checked the first rows sharing the query's first characters and found too
            // few: the key ranges, which hold only the rows starting with the whole query, are
            // small.
            return self.step(Step::Ranges, search, after, take).await;
        }
        Ok(hits)
    }

    /// Rank 2.
    async fn inside(&self, search: &Search, after: SearchAfter, take: u32) -> Result<Vec<CustomerHit>, StoreError> {
        if search.key_chars() > INSIDE_CHARS {
            let walked = self.step(Step::InsideWalk { rows: WALK_ROWS }, search, after, take).await?;
            if walked.len() == take as usize {
                return Ok(walked);
            }
            return self.step(Step::InsideIndexed, search, after, take).await;
        }
        let step = if self.dense(search).await? { Step::ShortScan } else { Step::ShortGrams };
        self.step(step, search, after, take).await
    }

    /// Whether the 1- or 2-character query (or its kana alternative) is held by so many
    /// customers that walking them in page order finds a page soon.
    async fn dense(&self, search: &Search) -> Result<bool, StoreError> {
        let kana = search.kana.as_deref().unwrap_or(&search.key);
        if kana.chars().count() > INSIDE_CHARS {
            return Ok(true);
        }
        match self {
            Store::Sqlite(s) => s.dense(&search.key, kana).await,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.dense(&search.key, kana).await,
        }
    }

    async fn step(
        &self,
        step: Step,
        search: &Search,
        after: SearchAfter,
        take: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        match self {
            Store::Sqlite(s) => s.search_step(step, search, after, take).await,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.search_step(step, search, after, take).await,
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

/// Rows a bounded walk reads before the search turns to an index.
pub const WALK_ROWS: i64 = 256;

/// One statement of a search; each backend writes it in its own SQL, with the same results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Exact hits (rank 0) from the key indexes, and prefix hits (rank 1) by walking the prefix
    /// grams in page order, at most `walk_rows` of them (all when `None`).
    Walk {
        /// The bound, for a query longer than the grams (the rest of it is checked per row).
        walk_rows: Option<i64>,
    },
    /// Ranks 0 and 1 from the btree ranges of the keys, gathered and sorted.
    Ranges,
    /// A whole e-mail address: ranks 0 and 1 from the range of the e-mail keys alone.
    Address,
    /// Substring hits (rank 2) among the next `rows` customers in page order.
    InsideWalk {
        /// How many customers to look at.
        rows: i64,
    },
    /// Substring hits of 3+ characters from the trigram index, gathered and sorted.
    InsideIndexed,
    /// Substring hits of 1–2 characters, walking the customers in page order until the page is
    /// full (for a dense gram).
    ShortScan,
    /// Substring hits of 1–2 characters from the inside grams (for a rare gram).
    ShortGrams,
}

/// Where each branch of [`Step::Walk`] starts: exact hits after `exact`, prefix hits after
/// `prefix` (name length, id).
pub fn walk_cursors(after: SearchAfter) -> ((i32, i64), (i32, i64)) {
    let start = (-1, i64::MIN);
    match after.rank {
        r if r < 0 => (start, start),
        0 => ((after.name_len, after.id), start),
        _ => ((i32::MAX, i64::MAX), (after.name_len, after.id)),
    }
}

/// Where a substring step starts (name length, id).
pub fn inside_cursor(after: SearchAfter) -> (i32, i64) {
    if after.rank < 2 {
        (-1, i64::MIN)
    } else {
        (after.name_len, after.id)
    }
}

/// The kana alternative's gram for the walk, or a gram no row has when there is none.
pub fn kana_walk_gram(search: &Search) -> String {
    search.kana.as_deref().map(|k| crate::grams::prefix_gram(k).to_owned()).unwrap_or_default()
}

/// The end of the range of keys that start with `key`: `key` followed by U+10FFFF, which sorts
/// after every character in code-point order (SQLite's BINARY, PostgreSQL's "C" collation).
pub fn prefix_end(key: &str) -> String {
    format!("{key}\u{10FFFF}")
}
