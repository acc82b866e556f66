//! The 2024-11-05 HTTP+SSE transport: GET opens an event stream whose first event, `endpoint`,
//! names the URL to POST messages to; answers come back on the stream. Each such connection runs
//! the same engine as stdio over an in-process pipe, on the node that holds its stream. In a
//! cluster a POST that reaches another node is passed to the holder over the cluster channel
//! ([`ClusterEvent::LegacyPost`]), so the transport works behind a round-robin balancer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};

use super::directory::ClusterEvent;
use super::{plain, sse, Body, Shared};
use crate::server::connection::{serve_connection, ServeOptions};

type Writer = Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>;

/// One open connection: where its messages go, and the account that opened it (with
/// authentication on, only it may post to it).
#[derive(Clone)]
struct Entry {
    writer: Writer,
    owner: Option<String>,
}

/// Open HTTP+SSE connections by session id.
pub(crate) struct Table {
    map: Arc<Mutex<HashMap<String, Entry>>>,
    max: usize,
}

impl Table {
    pub fn new(max: usize) -> Self {
        Table { map: Arc::new(Mutex::new(HashMap::new())), max }
    }
}

/// GET: opens a connection.
pub(crate) fn open(shared: &Arc<Shared>, caller: Option<crate::server::identity::Identity>) -> Response<Body> {
    if shared.old_sse.map.lock().unwrap().len() >= shared.old_sse.max {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "too many connections");
    }
    let id = match crate::util::random::hex(16) {
        Ok(id) => id,
        Err(no_random) => return plain(StatusCode::INTERNAL_SERVER_ERROR, &no_random.to_string()),
    };
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let (client_read, client_write) = tokio::io::split(client);
    let router = shared.router.clone();
    let owner = caller.as_ref().map(crate::server::identity::Identity::account);
    let options = ServeOptions {
        caller,
        #[cfg(feature = "otel")]
        transport: Some(crate::telemetry::Transport::http("1.1", None)),
        ..ServeOptions::default()
    };
    tokio::spawn(async move {
        let _ = serve_connection(router, server_read, server_write, options).await;
    });
    let entry = Entry { writer: Arc::new(tokio::sync::Mutex::new(client_write)), owner };
    shared.old_sse.map.lock().unwrap().insert(id.clone(), entry);
    let endpoint = format!("event: endpoint\ndata: {}?sessionId={id}\n\n", shared.config.path);
    struct Remove(Arc<Mutex<HashMap<String, Entry>>>, String);
    impl Drop for Remove {
        fn drop(&mut self) {
            self.0.lock().unwrap().remove(&self.1);
        }
    }
    let remove = Remove(shared.old_sse.map.clone(), id);
    let lines = BufReader::new(client_read).lines();
    let state = (lines, Some(Bytes::from(endpoint)), remove);
    let body = futures_util::stream::unfold(state, |(mut lines, first, remove)| async move {
        if let Some(first) = first {
            return Some((Ok(Frame::data(first)), (lines, None, remove)));
        }
        let line = lines.next_line().await.ok()??;
        let event = Bytes::from(format!("event: message\ndata: {line}\n\n"));
        Some((Ok(Frame::data(event)), (lines, None, remove)))
    });
    super::respond::sse_response(StreamBody::new(body).boxed_unsync())
}

/// POST `?sessionId=`: one message for a connection; answers go on its stream.
pub(crate) async fn post(shared: &Arc<Shared>, id: &str, caller: Option<&str>, body: &[u8]) -> Response<Body> {
    // One message per line. A line break in JSON text is whitespace between tokens (a string
    // holds one escaped), so a space keeps the message as it was, without parsing it here: the
    // connection reads it as any other line (and its keys as they were sent).
    let line = String::from_utf8_lossy(body).replace(['\n', '\r'], " ");
    let here = shared.old_sse.map.lock().unwrap().contains_key(id);
    match (here, &shared.config.directory) {
        // Another node holds the stream (a round-robin balancer sent the POST here).
        (false, Some(super::SharedSessions(directory))) => directory.publish(ClusterEvent::LegacyPost {
            connection: id.to_owned(),
            caller: caller.map(str::to_owned),
            message: line,
        }),
        _ => {
            if let Err(status) = deliver(shared, id, caller, &line).await {
                return plain(status, "unknown sessionId");
            }
        }
    }
    let mut r = Response::new(sse::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

/// Writes one message line to connection `id` held here, if `caller` opened it.
pub(crate) async fn deliver(shared: &Shared, id: &str, caller: Option<&str>, line: &str) -> Result<(), StatusCode> {
    let entry = shared.old_sse.map.lock().unwrap().get(id).cloned();
    let Some(writer) = entry.filter(|e| e.owner.as_deref() == caller).map(|e| e.writer) else {
        return Err(StatusCode::NOT_FOUND);
    };
    let mut w = writer.lock().await;
    if w.write_all(line.as_bytes()).await.is_err() || w.write_all(b"\n").await.is_err() {
        return Err(StatusCode::NOT_FOUND);
    }
    let _ = w.flush().await;
    Ok(())
}
