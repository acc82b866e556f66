//! PostgreSQL: a small pool of connections as a role that may only `SELECT` the served tables
//! (checked at start: a role that can write, create temporary tables or objects, or is a
//! superuser is refused). Every session is `READ ONLY` with its own `statement_timeout` and
//! `lock_timeout` from the moment it connects, and every request is one prepared statement;
//! nothing here ever sends model text as SQL.
//!
//! Search walks the same grams as SQLite (`crm.search_grams`, see [`crate::grams`]) and uses
//! `LIKE '%key%'` (the key's `%`, `_` and `\` escaped) on `pg_trgm` GIN indexes over the same key
//! columns for substrings of 3+ characters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{inside_cursor, kana_walk_gram, prefix_end, walk_cursors, Step, StoreError, MAX_BODY_BYTES};
use crate::model::{self, Company, Customer, CustomerHit, Interaction, InteractionSummary};
use crate::query::{InteractionsBefore, Search, SearchAfter};

/// The most connections open at once.
const MAX_CONNECTIONS: usize = 8;

/// A time as the tools show it.
macro_rules! utc {
    ($col:literal) => {
        concat!("to_char(", $col, " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
    };
}

/// The page of a statement that ranks every hit: after the cursor `($3, $4, $5)`, at most `$6`.
macro_rules! page {
    () => {
        " (rank, name_len, id) > ($3::int, $4::int, $5::bigint) ORDER BY rank, name_len, id LIMIT $6::bigint"
    };
}

/// A row equal to the query (`$1`) or its kana alternative (`$2`).
macro_rules! exact {
    () => {
        "($1::text IN (c.name_key, c.kana_key, c.latin_key, c.latin_rev_key, c.email_key) OR c.kana_key = $2::text)"
    };
}

/// A row with a key starting with the query, or a reading starting with the kana alternative.
macro_rules! starts {
    () => {
        "(starts_with(c.name_key, $1::text) OR starts_with(c.kana_key, $1::text)
          OR starts_with(c.latin_key, $1::text) OR starts_with(c.latin_rev_key, $1::text)
          OR starts_with(c.email_key, $1::text) OR starts_with(c.kana_key, $2::text))"
    };
}

/// The substring test: `$5` (a `LIKE` pattern of the key) in any key, or `$6` (of the kana
/// alternative) in the reading.
macro_rules! inside {
    () => {
        "(c.name_key LIKE $5::text OR c.kana_key LIKE $5::text OR c.latin_key LIKE $5::text
          OR c.latin_rev_key LIKE $5::text OR c.email_key LIKE $5::text OR c.kana_key LIKE $6::text)"
    };
}

/// The hit columns of a search statement (`u`: the ids and ranks).
macro_rules! hits_of {
    ($ids:expr) => {
        concat!(
            "SELECT c.id, c.name, c.name_kana, c.email, co.name AS company, c.name_len, u.rank FROM (",
            $ids,
            ") u JOIN crm.customers c ON c.id = u.id LEFT JOIN crm.companies co ON co.id = c.company_id"
        )
    };
}

/// The exact hits on one key column, in page order after `($3, $4)`, at most `$5`.
macro_rules! exact_on {
    ($column:literal, $value:literal) => {
        concat!(
            "(SELECT id, 0 AS rank FROM crm.customers WHERE ",
            $column,
            " = ",
            $value,
            "::text AND (name_len, id) > ($3::int, $4::bigint) ORDER BY name_len, id LIMIT $5::bigint)"
        )
    };
}

/// The prefix hits found by walking the grams `(kind, gram)` after `($6, $7)`, at most `$10`
/// gram rows, each checked with `$check` and left out when exact.
macro_rules! prefix_walk {
    ($kind:literal, $gram:literal, $check:expr) => {
        concat!(
            "(SELECT g.id, 1 AS rank FROM (SELECT name_len, id FROM crm.search_grams WHERE kind = ",
            $kind,
            " AND gram = ",
            $gram,
            "::text AND (name_len, id) > ($6::int, $7::bigint) ORDER BY name_len, id LIMIT $10::bigint) g
             JOIN crm.customers c ON c.id = g.id WHERE ",
            $check,
            " AND NOT ",
            exact!(),
            " ORDER BY g.name_len, g.id LIMIT $5::bigint)"
        )
    };
}

/// [`super::Step::Walk`]: `$1`/`$2` key and kana alternative, `$3`/`$4` the exact hits' cursor,
/// `$5` the row count, `$6`/`$7` the prefix hits' cursor, `$8`/`$9` the grams walked, `$10` the
/// most gram rows walked (NULL: all).
const WALK: &str = concat!(
    hits_of!(concat!(
        exact_on!("name_key", "$1"),
        " UNION ",
        exact_on!("kana_key", "$1"),
        " UNION ",
        exact_on!("latin_key", "$1"),
        " UNION ",
        exact_on!("latin_rev_key", "$1"),
        " UNION ",
        exact_on!("email_key", "$1"),
        " UNION ",
        exact_on!("kana_key", "$2"),
        " UNION ",
        prefix_walk!("1", "$8", starts!()),
        " UNION ",
        prefix_walk!("2", "$9", "starts_with(c.kana_key, $2::text)")
    )),
    " ORDER BY u.rank, c.name_len, c.id LIMIT $5::bigint"
);

/// [`super::Step::Ranges`]: exact and prefix hits from the btree ranges (`$7`, `$8`: the ends of
/// the key ranges; the key columns use the "C" collation, so ranges are code-point ranges
/// whatever the database's).
const RANGES: &str = concat!(
    "SELECT * FROM (
  SELECT c.id, c.name, c.name_kana, c.email, co.name AS company, c.name_len,
    CASE WHEN ",
    exact!(),
    " THEN 0 ELSE 1 END AS rank
  FROM crm.customers c LEFT JOIN crm.companies co ON co.id = c.company_id
  WHERE (c.name_key >= $1 AND c.name_key < $7) OR (c.kana_key >= $1 AND c.kana_key < $7)
     OR (c.latin_key >= $1 AND c.latin_key < $7) OR (c.latin_rev_key >= $1 AND c.latin_rev_key < $7)
     OR (c.email_key >= $1 AND c.email_key < $7) OR (c.kana_key >= $2 AND c.kana_key < $8::text)
) AS hit WHERE",
    page!()
);

/// [`super::Step::Address`]: an e-mail address among the e-mail keys (`$3`: the range's end).
const ADDRESS: &str = concat!(
    "SELECT * FROM (
  SELECT c.id, c.name, c.name_kana, c.email, co.name AS company, c.name_len,
    CASE WHEN c.email_key = $1::text THEN 0 ELSE 1 END AS rank
  FROM crm.customers c LEFT JOIN crm.companies co ON co.id = c.company_id
  WHERE c.email_key >= $1::text AND c.email_key < $2::text
) AS hit WHERE",
    page!()
);

/// [`super::Step::InsideIndexed`]: substring hits from the trigram indexes (`$7`, `$8`: `LIKE`
/// patterns of the key and the kana alternative).
const INSIDE_INDEXED: &str = concat!(
    "SELECT * FROM (
  SELECT c.id, c.name, c.name_kana, c.email, co.name AS company, c.name_len, 2 AS rank
  FROM crm.customers c LEFT JOIN crm.companies co ON co.id = c.company_id
  WHERE (c.name_key LIKE $7 OR c.kana_key LIKE $7 OR c.latin_key LIKE $7 OR c.latin_rev_key LIKE $7
     OR c.email_key LIKE $7 OR c.kana_key LIKE $8::text) AND NOT ",
    starts!(),
    ") AS hit WHERE",
    page!()
);

/// [`super::Step::InsideWalk`]: the next `$8` customers after `($3, $4)`, their substring hits,
/// at most `$7`.
const INSIDE_WALK: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.email, co.name AS company, c.name_len, 2 AS rank
FROM (SELECT id FROM crm.customers WHERE (name_len, id) > ($3::int, $4::bigint) ORDER BY name_len, id
      LIMIT $8::bigint) w
JOIN crm.customers c ON c.id = w.id LEFT JOIN crm.companies co ON co.id = c.company_id
WHERE ",
    inside!(),
    " AND NOT ",
    starts!(),
    " ORDER BY c.name_len, c.id LIMIT $7::bigint"
);

/// [`super::Step::ShortScan`]: the customers walked in page order (`customers_by_len`) until the
/// page is full. `$3`, `$4`: the cursor; `$5`, `$6`: `LIKE` patterns; `$7`: the row count.
const SHORT_SCAN: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.email, co.name AS company, c.name_len, 2 AS rank
FROM crm.customers c LEFT JOIN crm.companies co ON co.id = c.company_id
WHERE (c.name_len, c.id) > ($3::int, $4::bigint) AND ",
    inside!(),
    " AND NOT ",
    starts!(),
    " ORDER BY c.name_len, c.id LIMIT $7::bigint"
);

/// [`super::Step::ShortGrams`]: the few customers the inside grams list for `$1` and `$2`.
const SHORT_GRAMS: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.email, co.name AS company, c.name_len, 2 AS rank
FROM (SELECT DISTINCT id FROM crm.search_grams WHERE kind = 3 AND gram IN ($1::text, $2::text)) g
JOIN crm.customers c ON c.id = g.id LEFT JOIN crm.companies co ON co.id = c.company_id
WHERE (c.name_len, c.id) > ($3::int, $4::bigint) AND ",
    inside!(),
    " AND NOT ",
    starts!(),
    " ORDER BY c.name_len, c.id LIMIT $7::bigint"
);

/// Whether `$1` or `$2` is a dense gram.
const DENSE: &str = "SELECT count(*) FROM crm.search_grams WHERE kind = 4 AND gram IN ($1::text, $2::text)";

const CUSTOMER: &str = concat!(
    "SELECT c.id, c.name, c.name_kana, c.name_latin, c.email, c.phone, c.owner, ",
    utc!("c.created_at"),
    ", ",
    utc!("c.updated_at"),
    ", co.id, co.name, co.domain,
       (SELECT count(*) FROM crm.interactions i WHERE i.customer_id = c.id),
       (SELECT ",
    utc!("max(i.occurred_at)"),
    " FROM crm.interactions i WHERE i.customer_id = c.id)
     FROM crm.customers c LEFT JOIN crm.companies co ON co.id = c.company_id WHERE c.id = $1::bigint"
);

const INTERACTIONS: &str = concat!(
    "SELECT id, ",
    utc!("occurred_at"),
    ", channel, subject, left(body, $5::int), char_length(body)::bigint FROM crm.interactions
     WHERE customer_id = $1::bigint AND occurred_at >= $2::text::timestamptz
       AND (occurred_at, id) < ($3::text::timestamptz, $4::bigint)
     ORDER BY occurred_at DESC, id DESC LIMIT $6::bigint"
);

const INTERACTION: &str = concat!(
    "SELECT id, customer_id, ",
    utc!("occurred_at"),
    ", channel, subject, left(body, $2::int) FROM crm.interactions WHERE id = $1::bigint"
);

/// What the serving role may do beyond reading, checked before serving.
const ROLE_CHECK: &str = "
SELECT current_user::text, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls,
  has_database_privilege(current_database(), 'TEMPORARY'),
  has_schema_privilege('crm', 'CREATE'),
  has_schema_privilege('public', 'CREATE'),
  bool_or(has_table_privilege(t, 'INSERT') OR has_table_privilege(t, 'UPDATE') OR has_table_privilege(t, 'DELETE')
          OR has_table_privilege(t, 'TRUNCATE') OR has_table_privilege(t, 'REFERENCES')
          OR has_table_privilege(t, 'TRIGGER')),
  bool_and(has_table_privilege(t, 'SELECT')),
  EXISTS (SELECT FROM pg_database d, aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a
          WHERE d.datname = current_database() AND a.grantee = 0 AND a.privilege_type = 'TEMPORARY'),
  EXISTS (SELECT FROM pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
          WHERE n.nspname = 'public' AND a.grantee = 0 AND a.privilege_type = 'CREATE')
FROM pg_roles r, unnest(ARRAY['crm.customers', 'crm.companies', 'crm.interactions', 'crm.search_grams']) AS t
WHERE r.rolname = current_user AND (t <> 'crm.search_grams' OR to_regclass(t) IS NOT NULL)
GROUP BY 1, 2, 3, 4, 5";

/// The version of the search keys the data was written with, and of the tables' layout.
const KEY_VERSION_CHECK: &str = "SELECT (SELECT value FROM crm.meta WHERE key = 'key_version'),
    (SELECT value FROM crm.meta WHERE key = 'schema_version')";

/// Bumped whenever the tables or their indexes change: data written for another layout is
/// refused until `crm-mcp init` loads it again.
pub const SCHEMA_VERSION: &str = "2";

struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

struct Inner {
    config: Config,
    tls: MakeRustlsConnect,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
    timeout: Duration,
}

/// A PostgreSQL database, served through a read-only role.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

/// `LIKE '%text%'` with the text's own `\`, `%` and `_` escaped (PostgreSQL's escape is `\`).
pub fn contains_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// The TLS client configuration: the system's roots, plus `CRM_DATABASE_CA` (a PEM file) if set.
pub fn tls() -> Result<MakeRustlsConnect, String> {
    let extra: Vec<std::path::PathBuf> = std::env::var_os("CRM_DATABASE_CA").map(Into::into).into_iter().collect();
    let config = mcp::tls::client_config(&extra).map_err(|e| format!("TLS set-up: {e}"))?;
    Ok(MakeRustlsConnect::new((*config).clone()))
}

/// Parses a connection URL without ever echoing it.
pub fn parse_url(url: &str) -> Result<Config, String> {
    url.trim().parse::<Config>().map_err(|_| {
        "the PostgreSQL URL is not valid (postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=...)".to_owned()
    })
}

/// Connects once, as the configuration says, and runs the connection on the runtime.
pub async fn connect(config: &Config, tls: &MakeRustlsConnect) -> Result<Client, String> {
    let (client, connection) = config.connect(tls.clone()).await.map_err(|e| describe(&e))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// [`connect`], then the session's own `statement_timeout` and `lock_timeout`: every statement
/// of the session, its preparation (which waits for table locks) and the checks at start
/// included, is cancelled by the server after `timeout`, whatever the role's defaults.
pub async fn connect_timed(config: &Config, tls: &MakeRustlsConnect, timeout: Duration) -> Result<Client, String> {
    let client = connect(config, tls).await?;
    let ms = timeout.as_millis().max(1);
    client
        .batch_execute(&format!(
            "SET statement_timeout = {ms}; SET lock_timeout = {ms}; SET default_transaction_read_only = on"
        ))
        .await
        .map_err(|e| describe(&e))?;
    Ok(client)
}

/// How long past the server's own timeout the server waits for a statement before it cancels
/// it itself (a stalled network, a server that does not answer).
const BACKSTOP: Duration = Duration::from_secs(2);

/// An error in words, without the SQL or the connection string: the server's message and
/// SQLSTATE, or what failed on the way.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
    }
}

impl PgStore {
    /// Connects and checks that the role can only read.
    pub async fn open(config: Config, timeout: Duration) -> Result<PgStore, String> {
        let tls = tls()?;
        let client = connect_timed(&config, &tls, timeout).await?;
        let row = client.query_opt(ROLE_CHECK, &[]).await.map_err(|e| {
            format!("the database has no crm tables this role can see ({}); run crm-mcp init first", describe(&e))
        })?;
        let row = row.ok_or("the connecting role is not in pg_roles")?;
        let role: String = row.get(0);
        let powers = [
            (1, "is a superuser"),
            (2, "may create roles"),
            (3, "may create databases"),
            (4, "bypasses row security"),
            (5, "may create temporary tables"),
            (6, "may create objects in schema crm"),
            (7, "may create objects in schema public"),
            (8, "may write to the crm tables"),
        ];
        // What every role holds through PUBLIC's default grants (TEMPORARY on a database, CREATE
        // on schema public before PostgreSQL 15) is not this role's doing, and crm-mcp init does
        // not take it from everyone: it is said, and the server serves, every statement of it in
        // a READ ONLY transaction, which forbids any CREATE.
        let through_public = |i: usize| (i == 5 && row.get::<_, bool>(10)) || (i == 7 && row.get::<_, bool>(11));
        for (i, what) in powers.iter().filter(|(i, _)| row.get::<_, bool>(*i) && through_public(*i)) {
            let fix = if *i == 5 {
                "REVOKE TEMPORARY ON DATABASE <db> FROM PUBLIC"
            } else {
                "REVOKE CREATE ON SCHEMA public FROM PUBLIC"
            };
            eprintln!(
                "crm-mcp: note: the role {what} through PUBLIC's default grant; its statements run READ ONLY, \
                       which forbids that. A database owner may close it for everyone: {fix}"
            );
        }
        let wrong: Vec<&str> = powers
            .iter()
            .filter(|(i, _)| row.get::<_, bool>(*i) && !through_public(*i))
            .map(|(_, what)| *what)
            .collect();
        if !wrong.is_empty() {
            return Err(format!(
                "refusing to serve as role {role:?}: it {}. Connect as the read-only role crm-mcp init creates \
                 (crm_mcp_ro), which may only SELECT the crm tables.",
                wrong.join(", ")
            ));
        }
        if !row.get::<_, bool>(9) {
            return Err(format!("role {role:?} may not read every crm table; run crm-mcp init (it grants SELECT)"));
        }
        let version = client.query_opt(KEY_VERSION_CHECK, &[]).await.map_err(|e| {
            format!(
                "cannot read crm.meta as role {role:?} ({}): the search keys' version cannot be checked; \
                 GRANT SELECT ON crm.meta TO {role} (crm-mcp init grants it)",
                describe(&e)
            )
        })?;
        let (version, layout): (Option<String>, Option<String>) =
            version.map_or((None, None), |r| (r.get(0), r.get(1)));
        if version.as_deref() != Some(crate::normalize::KEY_VERSION) {
            return Err(format!(
                "the crm data was written with other search keys (version {}, this server reads {}): load it \
                 again with crm-mcp init",
                version.as_deref().unwrap_or("none"),
                crate::normalize::KEY_VERSION
            ));
        }
        if layout.as_deref() != Some(SCHEMA_VERSION) {
            return Err(format!(
                "the crm tables were laid out by another version of crm-mcp (layout {}, this server reads {}): \
                 load the data again with crm-mcp init (DROP SCHEMA crm CASCADE first)",
                layout.as_deref().unwrap_or("none"),
                SCHEMA_VERSION
            ));
        }
        let inner = Inner {
            config,
            tls,
            idle: Mutex::new(vec![Conn { client, statements: HashMap::new() }]),
            permits: Semaphore::new(MAX_CONNECTIONS),
            timeout,
        };
        Ok(PgStore { inner: Arc::new(inner) })
    }

    async fn checkout(&self) -> Result<Conn, StoreError> {
        let idle = self.inner.idle.lock().ok().and_then(|mut idle| {
            while let Some(conn) = idle.pop() {
                if !conn.client.is_closed() {
                    return Some(conn);
                }
            }
            None
        });
        if let Some(conn) = idle {
            return Ok(conn);
        }
        match connect_timed(&self.inner.config, &self.inner.tls, self.inner.timeout).await {
            Ok(client) => Ok(Conn { client, statements: HashMap::new() }),
            Err(e) => {
                eprintln!("crm-mcp: cannot connect to PostgreSQL: {e}");
                Err(StoreError::Unavailable)
            }
        }
    }

    fn error(&self, e: &tokio_postgres::Error) -> StoreError {
        match e.code() {
            Some(code)
                if *code == tokio_postgres::error::SqlState::QUERY_CANCELED
                    || *code == tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE =>
            {
                StoreError::Timeout(self.inner.timeout)
            }
            Some(code) => {
                eprintln!("crm-mcp: PostgreSQL error, SQLSTATE {}", code.code());
                StoreError::Failed
            }
            None if e.is_closed() => StoreError::Unavailable,
            None => {
                eprintln!("crm-mcp: PostgreSQL: {}", describe(e));
                StoreError::Unavailable
            }
        }
    }

    /// Runs the prepared statement `sql` on a read-only session under its timeouts, with a
    /// client-side backstop.
    async fn query(&self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let _permit = self.inner.permits.acquire().await.map_err(|_| StoreError::Unavailable)?;
        let mut conn = self.checkout().await?;
        let cancel = conn.client.cancel_token();
        let limit = self.inner.timeout + BACKSTOP;
        let result = match tokio::time::timeout(limit, run(&mut conn, sql, params)).await {
            Ok(result) => result,
            Err(_) => {
                // The server's own timeout did not end it: ask it to cancel, and drop the
                // connection (its state is unknown).
                eprintln!("crm-mcp: a statement outlived its timeout by {BACKSTOP:?}; cancelled by the client");
                let tls = self.inner.tls.clone();
                tokio::spawn(async move { cancel.cancel_query(tls).await });
                return Err(StoreError::Timeout(self.inner.timeout));
            }
        };
        if !conn.client.is_closed() && result.is_ok() {
            if let Ok(mut idle) = self.inner.idle.lock() {
                idle.push(conn);
            }
        }
        result.map_err(|e| self.error(&e))
    }

    /// Whether `key` or `kana` is a dense gram.
    pub async fn dense(&self, key: &str, kana: &str) -> Result<bool, StoreError> {
        let rows = self.query(DENSE, &[&key, &kana]).await?;
        Ok(rows.first().is_some_and(|r| r.get::<_, i64>(0) > 0))
    }

    /// One statement of [`super::Store::search`].
    pub async fn search_step(
        &self,
        step: Step,
        search: &Search,
        after: SearchAfter,
        take: u32,
    ) -> Result<Vec<CustomerHit>, StoreError> {
        let key = &search.key;
        let kana = search.kana.clone().unwrap_or_else(|| key.clone());
        let take = i64::from(take);
        let (exact, prefix) = walk_cursors(after);
        let (len, id) = inside_cursor(after);
        let (pattern, kana_pattern) = (contains_pattern(key), contains_pattern(&kana));
        let rows = match step {
            Step::Walk { walk_rows } => {
                let (gram, kana_gram) = (crate::grams::prefix_gram(key), kana_walk_gram(search));
                self.query(
                    WALK,
                    &[key, &kana, &exact.0, &exact.1, &take, &prefix.0, &prefix.1, &gram, &kana_gram, &walk_rows],
                )
                .await?
            }
            Step::Ranges => {
                let (end, kana_end) = (prefix_end(key), prefix_end(&kana));
                self.query(RANGES, &[key, &kana, &after.rank, &after.name_len, &after.id, &take, &end, &kana_end])
                    .await?
            }
            Step::Address => {
                let end = prefix_end(key);
                self.query(ADDRESS, &[key, &end, &after.rank, &after.name_len, &after.id, &take]).await?
            }
            Step::InsideIndexed => {
                self.query(
                    INSIDE_INDEXED,
                    &[key, &kana, &after.rank, &after.name_len, &after.id, &take, &pattern, &kana_pattern],
                )
                .await?
            }
            Step::InsideWalk { rows } => {
                self.query(INSIDE_WALK, &[key, &kana, &len, &id, &pattern, &kana_pattern, &take, &rows]).await?
            }
            Step::ShortScan => self.query(SHORT_SCAN, &[key, &kana, &len, &id, &pattern, &kana_pattern, &take]).await?,
            Step::ShortGrams => {
                self.query(SHORT_GRAMS, &[key, &kana, &len, &id, &pattern, &kana_pattern, &take]).await?
            }
        };
        Ok(rows.iter().map(hit).collect())
    }

    /// See [`super::Store::customer`].
    pub async fn customer(&self, id: i64) -> Result<Option<Customer>, StoreError> {
        let rows = self.query(CUSTOMER, &[&id]).await?;
        Ok(rows.first().map(|r| {
            let text = |i: usize| model::known(r.get(i));
            Customer {
                id: r.get(0),
                name: r.get(1),
                name_kana: text(2),
                name_latin: text(3),
                email: r.get(4),
                phone: r.get(5),
                owner: r.get(6),
                created_at: r.get(7),
                updated_at: r.get(8),
                company: r.get::<_, Option<i64>>(9).map(|cid| Company { id: cid, name: r.get(10), domain: r.get(11) }),
                interaction_count: r.get(12),
                last_interaction_at: r.get(13),
                interactions_uri: model::customer_interactions_uri(id),
            }
        }))
    }

    /// See [`super::Store::interactions`].
    pub async fn interactions(
        &self,
        customer_id: i64,
        since: Option<String>,
        before: Option<InteractionsBefore>,
        limit: u32,
    ) -> Result<Vec<InteractionSummary>, StoreError> {
        let since = since.unwrap_or_else(|| "1970-01-01T00:00:00Z".into());
        let (at, last) = before.map_or(("9999-12-31T23:59:59Z".to_owned(), i64::MAX), |b| (b.occurred_at, b.id));
        let chars = model::SNIPPET_CHARS as i32 + 1;
        let take = i64::from(limit) + 1;
        let rows = self.query(INTERACTIONS, &[&customer_id, &since, &at, &last, &chars, &take]).await?;
        Ok(rows
            .iter()
            .map(|r| InteractionSummary::from_columns(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
            .collect())
    }

    /// See [`super::Store::interaction`].
    pub async fn interaction(&self, id: i64) -> Result<Option<Interaction>, StoreError> {
        let chars = MAX_BODY_BYTES as i32 + 1;
        let rows = self.query(INTERACTION, &[&id, &chars]).await?;
        Ok(rows.first().map(|r| Interaction::from_columns(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))))
    }

    /// See [`super::Store::ids`].
    pub async fn ids(&self) -> Result<(Vec<i64>, Vec<i64>), StoreError> {
        let customers = self.query("SELECT id FROM crm.customers ORDER BY id", &[]).await?;
        let interactions = self.query("SELECT id FROM crm.interactions ORDER BY id", &[]).await?;
        let ids = |rows: Vec<Row>| rows.iter().map(|r| r.get(0)).collect();
        Ok((ids(customers), ids(interactions)))
    }
}

/// A row of a search statement as a hit.
fn hit(r: &Row) -> CustomerHit {
    CustomerHit::from_columns(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6))
}

async fn prepared(conn: &mut Conn, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
    if let Some(statement) = conn.statements.get(sql) {
        return Ok(statement.clone());
    }
    let statement = conn.client.prepare(sql).await?;
    conn.statements.insert(sql, statement.clone());
    Ok(statement)
}

/// Runs `sql`, prepared once per connection. The session is `READ ONLY` and bounded by its
/// timeouts since it connected ([`connect_timed`]): each statement is its own read-only
/// transaction, one round trip.
async fn run(
    conn: &mut Conn,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, tokio_postgres::Error> {
    let statement = prepared(conn, sql).await?;
    conn.client.query(&statement, params).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("100%_"), "%100\\%\\_%");
        assert_eq!(contains_pattern("a\\b"), "%a\\\\b%");
        assert_eq!(contains_pattern("山田"), "%山田%");
    }
}
