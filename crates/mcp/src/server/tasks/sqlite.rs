//! Task records in one SQLite file (feature `sqlite`): results and failures survive a restart,
//! and a task that was running when the process died reads as failed, never as still working.
//!
//! One row per task: the indexed columns a query needs, and the whole record as JSON. The file
//! uses WAL with `synchronous=NORMAL`: a committed change survives the process being killed.
//! Queries run on tokio's blocking pool, never on the reactor.

use std::path::Path;
use std::sync::{Arc, Mutex};

use mcp_types::tasks::TaskStatus;
use rusqlite::{params, Connection, OptionalExtension};

use super::record::{now_ms, TaskRecord};
use super::store::{failed_by_restart, StoreError, StoreFuture, TaskStore};

/// A store in an SQLite file.
pub struct SqliteStore {
    db: Arc<Mutex<Connection>>,
}

fn error(e: impl std::fmt::Display) -> StoreError {
    StoreError::new(format!("SQLite: {e}"))
}

const SCHEMA: &str = "
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    CREATE TABLE IF NOT EXISTS mcp_tasks (
        id         TEXT PRIMARY KEY,
        owner      TEXT NOT NULL,
        tool       TEXT NOT NULL,
        status     TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER,
        record     TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS mcp_tasks_by_owner ON mcp_tasks (owner, created_ms);
";

fn status_text(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
    }
}

impl SqliteStore {
    /// Opens (or creates) the store in `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let db = Connection::open(path).map_err(|e| StoreError::new(format!("cannot open {}: {e}", path.display())))?;
        db.busy_timeout(std::time::Duration::from_secs(5)).map_err(error)?;
        db.execute_batch(SCHEMA).map_err(error)?;
        Ok(SqliteStore { db: Arc::new(Mutex::new(db)) })
    }

    /// Runs `f` on the connection, off the reactor.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let db = self.db.clone();
        Box::pin(async move {
            let run = move || {
                let mut guard = db.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                f(&mut guard)
            };
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => handle.spawn_blocking(run).await.map_err(error)?,
                Err(_) => run(),
            }
        })
    }
}

fn write(db: &Connection, task: &TaskRecord, insert: bool) -> Result<(), StoreError> {
    let record = serde_json::to_string(task).map_err(error)?;
    let expires = task.ttl_ms.map(|ttl| task.created_ms.saturating_add(ttl) as i64);
    let sql = if insert {
        "INSERT INTO mcp_tasks (id, owner, tool, status, created_ms, expires_ms, record) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    } else {
        "UPDATE mcp_tasks SET owner = ?2, tool = ?3, status = ?4, created_ms = ?5, expires_ms = ?6, record = ?7 WHERE id = ?1"
    };
    let args =
        params![task.id, task.owner, task.tool, status_text(task.status), task.created_ms as i64, expires, record];
    db.execute(sql, args).map_err(error)?;
    Ok(())
}

fn parse(record: String) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(&record).map_err(|e| error(format!("a stored task is damaged: {e}")))
}

impl TaskStore for SqliteStore {
    fn insert(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        self.with(move |db| write(db, &task, true))
    }

    fn get(&self, id: &str) -> StoreFuture<'_, Option<TaskRecord>> {
        let id = id.to_owned();
        self.with(move |db| {
            let now = now_ms() as i64;
            let record: Option<String> = db
                .query_row(
                    "SELECT record FROM mcp_tasks WHERE id = ?1 AND (expires_ms IS NULL OR expires_ms > ?2)",
                    params![id, now],
                    |row| row.get(0),
                )
                .optional()
                .map_err(error)?;
            record.map(parse).transpose()
        })
    }

    fn put(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        self.with(move |db| write(db, &task, false))
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        tool: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        let (owner, tool, after) = (owner.to_owned(), tool.map(str::to_owned), after.map(str::to_owned));
        self.with(move |db| {
            let now = now_ms() as i64;
            // Position after the cursor's task: (created_ms, id) order.
            let from: (i64, String) = match &after {
                Some(id) => db
                    .query_row("SELECT created_ms, id FROM mcp_tasks WHERE id = ?1", params![id], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()
                    .map_err(error)?
                    .unwrap_or((i64::MIN, String::new())),
                None => (i64::MIN, String::new()),
            };
            let mut query = db
                .prepare(
                    "SELECT record FROM mcp_tasks WHERE owner = ?1 AND (?2 IS NULL OR tool = ?2)
                     AND (expires_ms IS NULL OR expires_ms > ?3) AND (created_ms > ?4 OR (created_ms = ?4 AND id > ?5))
                     ORDER BY created_ms, id LIMIT ?6",
                )
                .map_err(error)?;
            let rows = query
                .query_map(params![owner, tool, now, from.0, from.1, limit as i64], |row| row.get::<_, String>(0))
                .map_err(error)?;
            rows.map(|r| r.map_err(error).and_then(parse)).collect()
        })
    }

    fn sweep(&self, now_ms: u64, keep: usize) -> StoreFuture<'_, usize> {
        self.with(move |db| {
            let tx = db.transaction().map_err(error)?;
            let mut gone = tx
                .execute(
                    "DELETE FROM mcp_tasks WHERE expires_ms IS NOT NULL AND expires_ms <= ?1",
                    params![now_ms as i64],
                )
                .map_err(error)?;
            let count: i64 = tx.query_row("SELECT COUNT(*) FROM mcp_tasks", [], |r| r.get(0)).map_err(error)?;
            let excess = count - keep as i64;
            if excess > 0 {
                gone += tx
                    .execute(
                        "DELETE FROM mcp_tasks WHERE id IN (SELECT id FROM mcp_tasks
                         WHERE status IN ('completed', 'failed', 'cancelled') ORDER BY created_ms LIMIT ?1)",
                        params![excess],
                    )
                    .map_err(error)?;
            }
            tx.commit().map_err(error)?;
            Ok(gone)
        })
    }

    fn recover(&self, reason: &str) -> StoreFuture<'_, usize> {
        let reason = reason.to_owned();
        self.with(move |db| {
            let tx = db.transaction().map_err(error)?;
            let records: Vec<String> = {
                let mut q = tx
                    .prepare("SELECT record FROM mcp_tasks WHERE status IN ('working', 'input_required')")
                    .map_err(error)?;
                let rows = q.query_map([], |row| row.get(0)).map_err(error)?;
                rows.collect::<Result<_, _>>().map_err(error)?
            };
            let now = now_ms();
            for record in &records {
                let failed = failed_by_restart(parse(record.clone())?, &reason, now);
                write(&tx, &failed, false)?;
            }
            tx.commit().map_err(error)?;
            Ok(records.len())
        })
    }
}
