//! `--store`: where the state that several instances of a server share lives. `memory` (the
//! default) keeps today's behaviour and costs nothing; `redis://HOST:PORT[/DB]` (feature
//! `redis`; `rediss://` for TLS, a password in the URL) puts task records, rate-limit counters,
//! the `requestState` key and legacy session records on Redis, so any node serves a request
//! that another node began.

use std::io;

use crate::server::Router;

/// The shared store a server was told to use.
#[derive(Clone, Default)]
pub enum SharedStore {
    /// Nothing shared: one process.
    #[default]
    Memory,
    /// Redis.
    #[cfg(feature = "redis")]
    Redis(Box<crate::redis::Redis>),
}

impl SharedStore {
    /// The shared table of legacy sessions, if any.
    pub fn session_directory(&self) -> Option<crate::transport::http::SharedSessions> {
        match self {
            SharedStore::Memory => None,
            #[cfg(feature = "redis")]
            SharedStore::Redis(redis) => Some(crate::transport::http::SharedSessions(std::sync::Arc::new(
                crate::redis::RedisSessions::new((**redis).clone()),
            ))),
        }
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Opens `--store` (failing now if Redis cannot be reached).
pub async fn open(store: Option<&str>) -> io::Result<SharedStore> {
    match store {
        None | Some("memory") => Ok(SharedStore::Memory),
        #[cfg(feature = "redis")]
        Some(url)
            if url.starts_with("redis://") || url.starts_with("rediss://") || url.starts_with("redis+unix://") =>
        {
            let redis =
                crate::redis::Redis::connect(url).await.map_err(|e| io::Error::other(format!("--store: {e}")))?;
            Ok(SharedStore::Redis(Box::new(redis)))
        }
        #[cfg(not(feature = "redis"))]
        Some(url) if url.starts_with("redis") => {
            Err(invalid("this server was built without Redis support (feature `redis` of mcp-stack)".into()))
        }
        Some(_) => Err(invalid("--store: use `memory` or redis://[:PASSWORD@]HOST:PORT[/DB]".into())),
    }
}

/// Puts what the store shares into `router`: the `requestState` key and the task records.
#[cfg_attr(not(feature = "redis"), allow(unused_variables))]
pub async fn apply(router: &Router, store: &SharedStore, task_store_given: bool) -> io::Result<()> {
    match store {
        SharedStore::Memory => Ok(()),
        #[cfg(feature = "redis")]
        SharedStore::Redis(redis) => {
            if task_store_given {
                return Err(invalid("--store redis keeps the task records: drop --task-store".into()));
            }
            let key = redis.state_key().await.map_err(|e| io::Error::other(format!("--store: {e}")))?;
            router.set_state_key(key);
            router.set_task_store(std::sync::Arc::new(crate::redis::RedisTaskStore::new((**redis).clone())));
            Ok(())
        }
    }
}
