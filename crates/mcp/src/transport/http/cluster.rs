//! A node's side of the cluster channel: its list changes and resource updates go out to the
//! other nodes, and what they say is acted on here (changes for the GET streams this node
//! holds, answers and cancellations for the requests it runs, sessions refreshed or ended).

use std::sync::{Arc, Weak};

use tokio::sync::broadcast::error::RecvError;

use super::directory::{ClusterEvent, SessionDirectory};
use super::Shared;

/// Runs until the service is dropped.
pub(crate) async fn relay(shared: Weak<Shared>, directory: Arc<dyn SessionDirectory>) {
    let Some(mut local) = shared.upgrade().map(|s| s.router.changes()) else { return };
    let mut remote = directory.subscribe();
    loop {
        tokio::select! {
            change = local.recv() => match change {
                Ok(change) => directory.publish(ClusterEvent::Change(change)),
                Err(RecvError::Lagged(_)) => directory.publish(ClusterEvent::Change(crate::server::Change::Tools)),
                Err(RecvError::Closed) => return,
            },
            event = remote.recv() => {
                let Some(shared) = shared.upgrade() else { return };
                match event {
                    Ok(event) => act(&shared, directory.as_ref(), event).await,
                    Err(RecvError::Lagged(n)) => tracing::warn!("missed {n} messages from other nodes"),
                    Err(RecvError::Closed) => return,
                }
            }
        }
    }
}

async fn act(shared: &Shared, directory: &dyn SessionDirectory, event: ClusterEvent) {
    match event {
        ClusterEvent::Change(change) => {
            let _ = shared.remote_changes.send(change);
        }
        ClusterEvent::SessionChanged(id) => {
            let Some(copy) = shared.sessions.peek(&id) else { return };
            if let Ok(Some((rev, record))) = directory.get(&id).await {
                if let Some(level) = record.log_level {
                    copy.session.set_log_level(level);
                }
                copy.session.set_subscriptions(record.subscriptions);
                copy.rev.store(rev, std::sync::atomic::Ordering::Relaxed);
            }
        }
        ClusterEvent::Response { session, id, outcome } => {
            if let Some(copy) = shared.sessions.peek(&session) {
                copy.session.resolve(&id, outcome);
            }
        }
        ClusterEvent::Cancel { session, request } => {
            if let Some(copy) = shared.sessions.peek(&session) {
                copy.inflight.lock().unwrap().cancel(&request);
            }
        }
        ClusterEvent::Ended(id) => shared.sessions.forget(&id),
    }
}
