//! A node's side of the cluster channel: its list changes and resource updates go out to the
//! other nodes, and what they say is acted on here (changes for the GET streams this node
//! holds, answers and cancellations for the requests it runs, sessions refreshed or ended,
//! messages for a GET stream held here); and what a session's copy has for a GET stream held
//! elsewhere is sent to the others.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::sync::broadcast::error::RecvError;

use super::directory::{ClusterEvent, SessionDirectory};
use super::sessions::HttpSession;
use super::Shared;

/// Runs until the service is dropped.
pub(crate) async fn relay(shared: Weak<Shared>, directory: Arc<dyn SessionDirectory>) {
    let Some(mut local) = shared.upgrade().map(|s| s.router.lists().changes()) else { return };
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
                copy.adopt(rev, record);
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
        ClusterEvent::LegacyPost { connection, caller, message } => {
            // Only the holder has the connection; the others have nothing to do.
            let _ = super::legacy_sse::deliver(shared, &connection, caller.as_deref(), &message).await;
        }
        ClusterEvent::Deliver { session, message } => {
            // Only the node whose GET stream is open writes it (a node without one would
            // relay it again).
            if let Some(copy) = shared.sessions.peek(&session).filter(|c| c.get_open.load(Ordering::Relaxed)) {
                if !copy.session.outbox.try_send_raw(message) {
                    tracing::warn!("a message for a session's GET stream was dropped: the stream is not read");
                }
            }
        }
    }
}

/// On a node of a cluster, what a session's copy here has for its GET stream while no GET
/// stream is open here goes to the other nodes ([`ClusterEvent::Deliver`]); the one holding
/// the stream writes it. A GET opening here takes the queue back ([`HttpSession::want_get`]).
/// Ends when the session's queue closes (the session is gone here).
pub(crate) fn relay_get_messages(session: &HttpSession, directory: Arc<dyn SessionDirectory>) {
    let wanted = session.get_wanted.get_or_init(Default::default).clone();
    let (queue, id) = (session.get_rx.clone(), session.id.clone());
    tokio::spawn(async move {
        loop {
            let mut rx = queue.clone().lock_owned().await;
            tokio::select! {
                message = rx.recv() => match message {
                    Some(message) => directory.publish(ClusterEvent::Deliver { session: id.to_string(), message }),
                    None => return,
                },
                () = wanted.notified() => {
                    drop(rx);
                    tokio::task::yield_now().await;
                }
            }
        }
    });
}
