//! SQLite: the file is built once (`create`, a read-write connection, then an atomic rename)
//! and served through connections opened read-only with `query_only` on, each statement under a
//! deadline (a progress handler interrupts it).
//!
//! Search runs on an FTS5 table with the trigram tokenizer over the key columns when the query
//! key has 3 characters or more (a quoted phrase, so FTS5 operators in user text are text), and
//! by scanning the key columns with `instr` for 1–2 characters, which trigrams cannot index.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use super::{prefix_end, StoreError, Tier, MAX_BODY_BYTES};
use crate::dataset::{CustomerKeys, Dataset};
use crate::model::{self, Company, Customer, CustomerHit, Interaction, InteractionSummary};
use crate::normalize::KEY_VERSION;
use crate::query::{InteractionsBefore, Search, SearchAfter};

/// Bumped whenever the schema or its indexes change: a database of another version is built
/// again (the demo's cache file is named after it).
pub const SCHEMA_VERSION: &str = "3";

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
CREATE INDEX customers_name_key ON customers(name_key);
CREATE INDEX customers_kana_key ON customers(kana_key);
CREATE INDEX customers_latin_key ON customers(latin_key);
CREATE INDEX customers_latin_rev_key ON customers(latin_rev_key);
CREATE INDEX customers_email_key ON customers(email_key);
CREATE INDEX customers_by_len ON customers(name_len, id);
CREATE VIRTUAL TABLE customers_fts USING fts5(
    name_key, kana_key, latin_key, latin_rev_key, email_key,
    content='customers', content_rowid='id', tokenize='trigram');
";

/// The hit columns and their rank: 0 when a key equals the query, 1 when one starts with it.
/// `?1` is the key, `?2` the kana alternative (the key again when there is none).
const HIT_SELECT: &str = "
SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len,
  CASE WHEN ?1 IN (c.name_key, c.kana_key, c.latin_key, c.latin_rev_key, c.email_key) OR c.kana_key = ?2 THEN 0
       WHEN substr(c.name_key, 1, length(?1)) = ?1 OR substr(c.kana_key, 1, length(?1)) = ?1
         OR substr(c.latin_key, 1, length(?1)) = ?1 OR substr(c.latin_rev_key, 1, length(?1)) = ?1
         OR substr(c.email_key, 1, length(?1)) = ?1 OR substr(c.kana_key, 1, length(?2)) = ?2 THEN 1
       ELSE 2 END AS rank
FROM customers c LEFT JOIN companies co ON co.id = c.company_id";

const PAGE: &str = "(rank, name_len, id) > (?3, ?4, ?5) ORDER BY rank, name_len, id LIMIT ?6";

/// Exact and prefix hits, from the btree indexes on the key columns (`?7`, `?8`: the key and
/// the kana alternative followed by U+10FFFF, the range's end).
const PREFIX_FILTER: &str = "WHERE (c.name_key >= ?1 AND c.name_key < ?7) OR (c.kana_key >= ?1 AND c.kana_key < ?7)
    OR (c.latin_key >= ?1 AND c.latin_key < ?7) OR (c.latin_rev_key >= ?1 AND c.latin_rev_key < ?7)
    OR (c.email_key >= ?1 AND c.email_key < ?7) OR (c.kana_key >= ?2 AND c.kana_key < ?8)";

/// Substring hits of a 1- or 2-character key, which no trigram indexes: the customers walked in
/// page order (`customers_by_len`) until the page is full, so a common character stops after a
/// few rows. `?3`, `?4`: the cursor's name length and id; `?5`: the row count. Rows an exact or
/// prefix match already gave are left out here.
const SHORT_SUBSTRING: &str = "
SELECT c.id, c.name, c.name_kana, c.email, co.name, c.name_len, 2
FROM customers c LEFT JOIN companies co ON co.id = c.company_id
WHERE (c.name_len, c.id) > (?3, ?4)
  AND (instr(c.name_key, ?1) OR instr(c.kana_key, ?1) OR instr(c.latin_key, ?1)
       OR instr(c.latin_rev_key, ?1) OR instr(c.email_key, ?1) OR instr(c.kana_key, ?2))
  AND NOT (substr(c.name_key, 1, length(?1)) = ?1 OR substr(c.kana_key, 1, length(?1)) = ?1
       OR substr(c.latin_key, 1, length(?1)) = ?1 OR substr(c.latin_rev_key, 1, length(?1)) = ?1
       OR substr(c.email_key, 1, length(?1)) = ?1 OR substr(c.kana_key, 1, length(?2)) = ?2)
ORDER BY c.name_len, c.id LIMIT ?5";

fn search_sql(tier: Tier, indexed: bool) -> String {
    let filter = match (tier, indexed) {
        (Tier::Prefix, _) => PREFIX_FILTER,
        (Tier::Substring, true) => "WHERE c.id IN (SELECT rowid FROM customers_fts WHERE customers_fts MATCH ?7)",
        (Tier::Substring, false) => return SHORT_SUBSTRING.to_owned(),
    };
    let only = if tier == Tier::Substring { "rank = 2 AND" } else { "" };
    // `name_len` is both a column of `c` and of the hit; the outer query sees the hit's.
    format!("SELECT * FROM ({HIT_SELECT} {filter}) AS hit WHERE {only} {PAGE}")
}

/// An FTS5 phrase: the text between double quotes, its own quotes doubled, so that `OR`, `NEAR`,
/// `*`, `:` or quotes in user input are matched as text.
fn phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
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

    /// One tier of [`super::Store::search`].
    pub async fn search_tier(
        &self,
        tier: Tier,
        search: &Search,
        after: SearchAfter,
        take: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        let indexed = search.key_chars() >= 3;
        let key = search.key.clone();
        let kana = search.kana.clone().unwrap_or_else(|| key.clone());
        let last = match tier {
            Tier::Prefix => prefix_end(&key),
            Tier::Substring => fts_query(search),
        };
        let kana_end = prefix_end(&kana);
        self.run(move |conn| {
            let mut stmt = conn.prepare_cached(&search_sql(tier, indexed))?;
            let take = i64::from(take);
            let mut rows = match (tier, indexed) {
                (Tier::Prefix, _) => {
                    stmt.query(params![key, kana, after.rank, after.name_len, after.id, take, last, kana_end])?
                }
                (Tier::Substring, true) => {
                    stmt.query(params![key, kana, after.rank, after.name_len, after.id, take, last])?
                }
                (Tier::Substring, false) => {
                    let (len, id) = if after.rank < 2 { (-1, i64::MIN) } else { (after.name_len, after.id) };
                    stmt.query(params![key, kana, len, id, take])?
                }
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
