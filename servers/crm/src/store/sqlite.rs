//! SQLite: the file is built once (`create`, a read-write connection, then an atomic rename)
//! and served through connections opened read-only with `query_only` on, each statement under a
//! deadline (a progress handler interrupts it).
//!
//! Search walks the grams of `search_grams` in page order (see [`crate::grams`]), and, for
//! substrings of 3 characters or more, an FTS5 table with the trigram tokenizer over the key
//! columns (a quoted phrase, so FTS5 operators in user text are text).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use super::{inside_cursor, kana_walk_gram, prefix_end, walk_cursors, Step, StoreError, MAX_BODY_BYTES};
use crate::dataset::{CustomerKeys, Dataset};
use crate::model::{self, Company, Customer, CustomerHit, Interaction, InteractionSummary};
use crate::normalize::KEY_VERSION;
use crate::query::{InteractionsBefore, Search, SearchAfter};

/// Bumped whenever the schema or its indexes change: a database of another version is built
/// again (the demo's cache file is named after it).
pub const SCHEMA_VERSION: &str = "4";

/// The schema, written by `create`.
const SCHEMA: &str = "
CREATE TABLE crm_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE companies(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, name_kana TEXT NOT NULL, domain TEXT NOT NULL);
CREATE TABLE customers(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, name_kana TEXT NOT NULL, name_latin TEXT NOT NULL,
    email TEXT NOT NULL, phone TEXT NOT NULL, company_id INTEGER REFERENCES companies(id),
    owner TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    name_key TEXT NOT NULL, kana_key TEXT NOT NULL, latin_key TEXT NOT NULL,
    latin_rev_key TEXT NOT NULL, email_key TEXT NOT NULL, name_len INTEGER NOT NULL);
CREATE TABLE interactions(
    id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
    occurred_at TEXT NOT NULL, channel TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX interactions_by_customer ON interactions(customer_id, occurred_at DESC, id DESC);
CREATE INDEX customers_name_key ON customers(name_key, name_len, id);
CREATE INDEX customers_kana_key ON customers(kana_key, name_len, id);
CREATE INDEX customers_latin_key ON customers(latin_key, name_len, id);
CREATE INDEX customers_latin_rev_key ON customers(latin_rev_key, name_len, id);
CREATE INDEX customers_email_key ON customers(email_key, name_len, id);
CREATE INDEX customers_by_len ON customers(name_len, id);
CREATE TABLE search_grams(
    kind INTEGER NOT NULL, gram TEXT NOT NULL, name_len INTEGER NOT NULL, id INTEGER NOT NULL,
    PRIMARY KEY(kind, gram, name_len, id)) WITHOUT ROWID;
CREATE VIRTUAL TABLE customers_fts USING fts5(
    name_key, kana_key, latin_key, latin_rev_key, email_key,
    content='customers', content_rowid='id', tokenize='trigram');
";

/// The page of a statement that ranks every hit: after the cursor `(?3, ?4, ?5)`, at most `?6`.
macro_rules! page {
    () => {
        "(rank, name_len, id) > (?3, ?4, ?5) ORDER BY rank, name_len, id LIMIT ?6"
    };
}

/// A row equal to the query (`?1`) or its kana alternative (`?2`).
macro_rules! exact {
    () => {
        "(?1 IN (c.name_key, c.kana_key, c.latin_key, c.latin_rev_key, c.email_key) OR c.kana_key = ?2)"
    };
}

/// A row with a key starting with the query, or a reading starting with the kana alternative.
macro_rules! starts {
    () => {
        "(substr(c.name_key, 1, length(?1)) = ?1 OR substr(c.kana_key, 1, length(?1)) = ?1
          OR substr(c.latin_key, 1, length(?1)) = ?1 OR substr(c.latin_rev_key, 1, length(?1)) = ?1
          OR substr(c.email_key, 1, length(?1)) = ?1 OR substr(c.kana_key, 1, length(?2)) = ?2)"
    };
}

/// The exact hits on one key column, in page order after `(?3, ?4)`, at most `?5`.
macro_rules! exact_on {
    ($column:literal, $value:literal) => {
        concat!(
            "SELECT id, 0 AS rank FROM (SELECT id FROM customers WHERE ",
            $column,
            " = ",
            $value,
            " AND (name_len, id) > (?3, ?4) ORDER BY name_len, id LIMIT ?5)"
        )
    };
}

/// The prefix hits found by walking the grams `(?kind, ?gram)` after `(?6, ?7)`, at most `?10`
/// gram rows, each checked with `$check` and left out when exact.
macro_rules! prefix_walk {
    ($kind:literal, $gram:literal, $check:expr) => {
        concat!(
            "SELECT id, 1 AS rank FROM (SELECT g.id FROM (SELECT name_len, id FROM search_grams WHERE kind = ",
            $kind,
            " AND gram = ",
            $gram,
            " AND (name_len, id) > (?6, ?7) ORDER BY name_len, id LIMIT ?10) g JOIN customers c ON c.id = g.id
             WHERE ",
            $check,
            " AND NOT ",
            exact!(),
            " ORDER BY g.name_len, g.id LIMIT ?5)"
        )
    };
}

/// [`super::Step::Walk`]: `?1`/`?2` key and kana alternative, `?3`/`?4` the exact hits' cursor,
/// `?5` the row count, `?6`/`?7` the prefix hits' cursor, `?8`/`?9` the grams walked (the key's
/// and the alternative's first characters), `?10` the most gram rows walked (-1: all).
const WALK: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len, u.rank FROM (",
    exact_on!("name_key", "?1"),
    " UNION ",
    exact_on!("kana_key", "?1"),
    " UNION ",
    exact_on!("latin_key", "?1"),
    " UNION ",
    exact_on!("latin_rev_key", "?1"),
    " UNION ",
    exact_on!("email_key", "?1"),
    " UNION ",
    exact_on!("kana_key", "?2"),
    " UNION ",
    prefix_walk!("1", "?8", starts!()),
    " UNION ",
    prefix_walk!("2", "?9", "substr(c.kana_key, 1, length(?2)) = ?2"),
    ") u JOIN customers c ON c.id = u.id LEFT JOIN companies co ON co.id = c.company_id
    ORDER BY u.rank, c.name_len, c.id LIMIT ?5"
);

/// The substring test of [`super::Step::InsideWalk`] and the short steps: `?1` in any key, or
/// `$kana` in the reading.
macro_rules! inside {
    ($kana:literal) => {
        concat!(
            "(instr(c.name_key, ?1) OR instr(c.kana_key, ?1) OR instr(c.latin_key, ?1)
          OR instr(c.latin_rev_key, ?1) OR instr(c.email_key, ?1) OR instr(c.kana_key, ",
            $kana,
            "))"
        )
    };
}

/// [`super::Step::InsideWalk`]: the next `?6` customers after `(?3, ?4)`, their substring hits
/// (`?7`: the kana alternative when the trigram index would search it, else the key), at most `?5`.
const INSIDE_WALK: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len, 2
FROM (SELECT id FROM customers WHERE (name_len, id) > (?3, ?4) ORDER BY name_len, id LIMIT ?6) w
JOIN customers c ON c.id = w.id LEFT JOIN companies co ON co.id = c.company_id
WHERE ",
    inside!("?7"),
    " AND NOT ",
    starts!(),
    " ORDER BY c.name_len, c.id LIMIT ?5"
);

/// [`super::Step::ShortScan`]: the customers walked in page order (`customers_by_len`) until the
/// page is full, so a common character stops after a few rows. `?3`, `?4`: the cursor; `?5`:
/// the row count. Rows an exact or prefix match already gave are left out here.
const SHORT_SCAN: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len, 2
FROM customers c LEFT JOIN companies co ON co.id = c.company_id
WHERE (c.name_len, c.id) > (?3, ?4) AND ",
    inside!("?2"),
    " AND NOT ",
    starts!(),
    " ORDER BY c.name_len, c.id LIMIT ?5"
);

/// [`super::Step::ShortGrams`]: the few customers the inside grams list for `?1` and `?2`.
const SHORT_GRAMS: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len, 2
FROM (SELECT DISTINCT id FROM search_grams WHERE kind = 3 AND gram IN (?1, ?2)) g
JOIN customers c ON c.id = g.id LEFT JOIN companies co ON co.id = c.company_id
WHERE (c.name_len, c.id) > (?3, ?4) AND ",
    inside!("?2"),
    " AND NOT ",
    starts!(),
    " ORDER BY c.name_len, c.id LIMIT ?5"
);

/// Whether `?1` or `?2` is a dense gram.
const DENSE: &str = "SELECT count(*) FROM search_grams WHERE kind = 4 AND gram IN (?1, ?2)";

/// [`super::Step::Ranges`]: exact and prefix hits from the btree ranges of the key columns
/// (`?7`, `?8`: the key and the kana alternative followed by U+10FFFF, the range's end).
const RANGES: &str = concat!(
    "SELECT * FROM (",
    "
SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len,
  CASE WHEN ",
    exact!(),
    " THEN 0 ELSE 1 END AS rank
FROM customers c LEFT JOIN companies co ON co.id = c.company_id",
    " WHERE (c.name_key >= ?1 AND c.name_key < ?7) OR (c.kana_key >= ?1 AND c.kana_key < ?7)
    OR (c.latin_key >= ?1 AND c.latin_key < ?7) OR (c.latin_rev_key >= ?1 AND c.latin_rev_key < ?7)
    OR (c.email_key >= ?1 AND c.email_key < ?7) OR (c.kana_key >= ?2 AND c.kana_key < ?8)) AS hit WHERE ",
    page!()
);

/// [`super::Step::Address`]: an e-mail address among the e-mail keys (`?7`: the range's end).
const ADDRESS: &str = concat!(
    "SELECT * FROM (
SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len, CASE WHEN c.email_key = ?1 THEN 0 ELSE 1 END AS rank
FROM customers c LEFT JOIN companies co ON co.id = c.company_id
WHERE c.email_key >= ?1 AND c.email_key < ?7) AS hit WHERE ",
    page!()
);

/// [`super::Step::InsideIndexed`]: substring hits of 3+ characters from the FTS5 trigram index
/// (`?7`: the FTS5 query).
const INSIDE_INDEXED: &str = concat!(
    "SELECT * FROM (",
    "
SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len, 2 AS rank
FROM customers c LEFT JOIN companies co ON co.id = c.company_id
WHERE c.id IN (SELECT rowid FROM customers_fts WHERE customers_fts MATCH ?7) AND NOT ",
    starts!(),
    ") AS hit WHERE ",
    page!()
);

/// An FTS5 phrase: the text between double quotes, its own quotes doubled, so that `OR`, `NEAR`,
/// `*`, `:` or quotes in user input are matched as text.
fn phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// The kana alternative the trigram index searches (3+ characters), or the key.
fn indexed_kana(search: &Search) -> &str {
    search.kana.as_deref().filter(|k| k.chars().count() >= 3).unwrap_or(&search.key)
}

fn fts_query(search: &Search) -> String {
    let mut q = phrase(&search.key);
    if let Some(kana) = search.kana.as_deref().filter(|k| k.chars().count() >= 3) {
        q.push_str(" OR kana_key : ");
        q.push_str(&phrase(kana));
    }
    q
}

/// Writes a new database at `path` from `data` (into a temporary file renamed at the end, so a
/// failure leaves nothing half-written). Refuses to touch an existing non-empty file.
pub fn create(path: &Path, data: &Dataset) -> Result<(), String> {
    if std::fs::metadata(path).map(|m| m.len() > 0).unwrap_or(false) {
        return Err(format!(
            "{} already exists; crm-mcp init only writes a new database (remove the file first).",
            path.display()
        ));
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let result = write(&tmp, data).map_err(|e| format!("cannot write {}: {e}", path.display()));
    match result.and_then(|()| std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn write(path: &Path, data: &Dataset) -> rusqlite::Result<()> {
    let mut conn = Connection::open(path)?;
    conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;
    let tx = conn.transaction()?;
    tx.execute_batch(SCHEMA)?;
    tx.execute(
        "INSERT INTO crm_meta VALUES ('key_version', ?1), ('schema_version', ?2)",
        [KEY_VERSION, SCHEMA_VERSION],
    )?;
    {
        let mut company = tx.prepare("INSERT INTO companies VALUES (?1, ?2, ?3, ?4)")?;
        for c in &data.companies {
            company.execute(params![c.id, c.name, c.name_kana, c.domain])?;
        }
        let mut customer =
            tx.prepare("INSERT INTO customers VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)")?;
        for c in &data.customers {
            let k = CustomerKeys::of(c);
            customer.execute(params![
                c.id,
                c.name,
                c.name_kana,
                c.name_latin,
                c.email,
                c.phone,
                c.company_id,
                c.owner,
                c.created_at,
                c.updated_at,
                k.name,
                k.kana,
                k.latin,
                k.latin_family_first,
                k.email,
                k.name_len
            ])?;
        }
        let mut interaction = tx.prepare("INSERT INTO interactions VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
        for i in &data.interactions {
            interaction.execute(params![i.id, i.customer_id, i.occurred_at, i.channel, i.subject, i.body])?;
        }
    }
    {
        let keys: Vec<(i64, CustomerKeys)> = data.customers.iter().map(|c| (c.id, CustomerKeys::of(c))).collect();
        let mut gram = tx.prepare("INSERT INTO search_grams VALUES (?1, ?2, ?3, ?4)")?;
        for row in crate::grams::rows(&keys) {
            gram.execute(params![row.kind as i32, row.gram, row.name_len, row.id])?;
        }
    }
    tx.execute_batch("INSERT INTO customers_fts(customers_fts) VALUES ('rebuild');")?;
    tx.commit()?;
    conn.execute_batch("VACUUM; ANALYZE;")?;
    Ok(())
}

struct Inner {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    timeout: Duration,
}

/// An SQLite database, served read-only.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

/// Connections kept open between requests.
const IDLE_CONNECTIONS: usize = 4;

fn open_read_only(path: &Path) -> Result<Connection, String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    conn.execute_batch("PRAGMA query_only = 1;").map_err(|e| e.to_string())?;
    conn.set_prepared_statement_cache_capacity(16);
    Ok(conn)
}

impl SqliteStore {
    /// Opens the database at `path` for reading; checks it was written by `crm-mcp init` with
    /// this version's search keys.
    pub fn open(path: &Path, timeout: Duration) -> Result<SqliteStore, String> {
        let conn = open_read_only(path)?;
        let version: Option<String> = conn
            .query_row(
                "SELECT group_concat(value, '.') FROM (SELECT value FROM crm_meta \
                 WHERE key IN ('key_version', 'schema_version') ORDER BY key)",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|_| format!("{} is not a crm-mcp database (create one with crm-mcp init)", path.display()))?
            .flatten();
        if version.as_deref() != Some(format!("{KEY_VERSION}.{SCHEMA_VERSION}").as_str()) {
            return Err(format!(
                "{} was written with other search keys (version {}); build it again with crm-mcp init",
                path.display(),
                version.as_deref().unwrap_or("none")
            ));
        }
        let inner = Inner { path: path.to_owned(), idle: Mutex::new(vec![conn]), timeout };
        Ok(SqliteStore { inner: Arc::new(inner) })
    }

    /// Runs `f` on a pooled read-only connection, on the blocking pool, under the deadline.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = self.inner.clone();
        let job = move || {
            let idle = inner.idle.lock().ok().and_then(|mut idle| idle.pop());
            let mut conn = match idle {
                Some(conn) => conn,
                None => open_read_only(&inner.path).map_err(|e| {
                    eprintln!("crm-mcp: {e}");
                    StoreError::Unavailable
                })?,
            };
            let deadline = Instant::now() + inner.timeout;
            if conn.progress_handler(4_000, Some(move || Instant::now() > deadline)).is_err() {
                return Err(StoreError::Failed);
            }
            let result = f(&conn);
            let _ = conn.progress_handler(0, None::<fn() -> bool>);
            if let Ok(mut idle) = inner.idle.lock() {
                if idle.len() < IDLE_CONNECTIONS {
                    idle.push(conn);
                }
            }
            result.map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::OperationInterrupted) => StoreError::Timeout(inner.timeout),
                _ => {
                    eprintln!(
                        "crm-mcp: SQLite error: {}",
                        e.sqlite_error_code().map_or("other".into(), |c| format!("{c:?}"))
                    );
                    StoreError::Failed
                }
            })
        };
        tokio::task::spawn_blocking(job).await.map_err(|_| StoreError::Failed)?
    }

    /// Whether `key` or `kana` is a dense gram.
    pub async fn dense(&self, key: &str, kana: &str) -> Result<bool, StoreError> {
        let (key, kana) = (key.to_owned(), kana.to_owned());
        self.run(move |conn| conn.prepare_cached(DENSE)?.query_row(params![key, kana], |r| r.get::<_, i64>(0)))
            .await
            .map(|n| n > 0)
    }

    /// One statement of [`super::Store::search`].
    pub async fn search_step(
        &self,
        step: Step,
        search: &Search,
        after: SearchAfter,
        take: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        let key = search.key.clone();
        let kana = search.kana.clone().unwrap_or_else(|| key.clone());
        let take = i64::from(take);
        let (exact, prefix) = walk_cursors(after);
        let inside_at = inside_cursor(after);
        let gram = crate::grams::prefix_gram(&key).to_owned();
        let kana_gram = kana_walk_gram(search);
        let (key_end, kana_end, fts, indexed_kana) =
            (prefix_end(&key), prefix_end(&kana), fts_query(search), indexed_kana(search).to_owned());
        self.run(move |conn| {
            let sql = match step {
                Step::Walk { .. } => WALK,
                Step::Ranges => RANGES,
                Step::Address => ADDRESS,
                Step::InsideWalk { .. } => INSIDE_WALK,
                Step::InsideIndexed => INSIDE_INDEXED,
                Step::ShortScan => SHORT_SCAN,
                Step::ShortGrams => SHORT_GRAMS,
            };
            let mut stmt = conn.prepare_cached(sql)?;
            let mut rows = match step {
                Step::Walk { walk_rows } => stmt.query(params![
                    key,
                    kana,
                    exact.0,
                    exact.1,
                    take,
                    prefix.0,
                    prefix.1,
                    gram,
                    kana_gram,
                    walk_rows.unwrap_or(-1)
                ])?,
                Step::Ranges => {
                    stmt.query(params![key, kana, after.rank, after.name_len, after.id, take, key_end, kana_end])?
                }
                Step::Address => stmt.query(params![key, kana, after.rank, after.name_len, after.id, take, key_end])?,
                Step::InsideWalk { rows } => {
                    stmt.query(params![key, kana, inside_at.0, inside_at.1, take, rows, indexed_kana])?
                }
                Step::InsideIndexed => {
                    stmt.query(params![key, kana, after.rank, after.name_len, after.id, take, fts])?
                }
                Step::ShortScan | Step::ShortGrams => stmt.query(params![key, kana, inside_at.0, inside_at.1, take])?,
            };
            let mut hits = Vec::new();
            while let Some(row) = rows.next()? {
                hits.push(CustomerHit::from_columns(
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                ));
            }
            Ok(hits)
        })
        .await
    }

    /// See [`super::Store::customer`].
    pub async fn customer(&self, id: i64) -> Result<Option<Customer>, StoreError> {
        self.run(move |conn| {
            let sql = "SELECT c.id, c.name, c.name_kana, c.name_latin, c.email, c.phone, c.owner, c.created_at,
                        c.updated_at, co.id, co.name, co.domain,
                        (SELECT count(*) FROM interactions i WHERE i.customer_id = c.id),
                        (SELECT max(occurred_at) FROM interactions i WHERE i.customer_id = c.id)
                       FROM customers c LEFT JOIN companies co ON co.id = c.company_id WHERE c.id = ?1";
            conn.prepare_cached(sql)?
                .query_row([id], |r| {
                    let company_id: Option<i64> = r.get(9)?;
                    let text = |i: usize| -> rusqlite::Result<Option<String>> { Ok(model::known(r.get(i)?)) };
                    Ok(Customer {
                        id: r.get(0)?,
                        name: r.get(1)?,
                        name_kana: text(2)?,
                        name_latin: text(3)?,
                        email: r.get(4)?,
                        phone: r.get(5)?,
                        owner: r.get(6)?,
                        created_at: r.get(7)?,
                        updated_at: r.get(8)?,
                        company: match company_id {
                            Some(cid) => Some(Company { id: cid, name: r.get(10)?, domain: r.get(11)? }),
                            None => None,
                        },
                        interaction_count: r.get(12)?,
                        last_interaction_at: r.get(13)?,
                        interactions_uri: model::customer_interactions_uri(id),
                    })
                })
                .optional()
        })
        .await
    }

    /// See [`super::Store::interactions`].
    pub async fn interactions(
        &self,
        customer_id: i64,
        since: Option<String>,
        before: Option<InteractionsBefore>,
        limit: u32,
    ) -> Result<Vec<InteractionSummary>, StoreError> {
        self.run(move |conn| {
            let sql = "SELECT id, occurred_at, channel, subject, substr(body, 1, ?5), length(body) FROM interactions
                       WHERE customer_id = ?1 AND occurred_at >= ?2 AND (occurred_at, id) < (?3, ?4)
                       ORDER BY occurred_at DESC, id DESC LIMIT ?6";
            let (at, id) = before.map_or(("9999".to_owned(), i64::MAX), |b| (b.occurred_at, b.id));
            let since = since.unwrap_or_default();
            let snippet_chars = model::SNIPPET_CHARS as i64 + 1;
            let mut stmt = conn.prepare_cached(sql)?;
            let rows =
                stmt.query_map(params![customer_id, since, at, id, snippet_chars, i64::from(limit) + 1], |r| {
                    Ok(InteractionSummary::from_columns(
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        &r.get::<_, String>(4)?,
                        r.get(5)?,
                    ))
                })?;
            rows.collect()
        })
        .await
    }

    /// See [`super::Store::interaction`].
    pub async fn interaction(&self, id: i64) -> Result<Option<Interaction>, StoreError> {
        self.run(move |conn| {
            let sql = "SELECT id, customer_id, occurred_at, channel, subject, substr(body, 1, ?2)
                       FROM interactions WHERE id = ?1";
            conn.prepare_cached(sql)?
                .query_row(params![id, MAX_BODY_BYTES as i64 + 1], |r| {
                    Ok(Interaction::from_columns(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
                })
                .optional()
        })
        .await
    }

    /// See [`super::Store::ids`].
    pub async fn ids(&self) -> Result<(Vec<i64>, Vec<i64>), StoreError> {
        self.run(|conn| {
            let all =
                |sql: &str| -> rusqlite::Result<Vec<i64>> { conn.prepare(sql)?.query_map([], |r| r.get(0))?.collect() };
            Ok((all("SELECT id FROM customers ORDER BY id")?, all("SELECT id FROM interactions ORDER BY id")?))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_keep_operators_as_text() {
        assert_eq!(phrase("a\"b"), "\"a\"\"b\"");
        assert_eq!(phrase("x OR y*"), "\"x OR y*\"");
    }
}
