//! Messages between nodes over Redis pub/sub (`{prefix}cluster`): each node publishes what the
//! others must act on ([`ClusterEvent`]) tagged with its own id, and hears the others'. The
//! listener reconnects by itself; pub/sub delivers at most once, which suits events that are
//! hints (a copy refreshes on its next request anyway) or answers a waiting request times out
//! without.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::Redis;
use crate::server::Change;
use crate::transport::http::directory::ClusterEvent;

/// The events of other nodes, and the way to send ours.
pub(crate) struct Bus {
    redis: Redis,
    tx: broadcast::Sender<ClusterEvent>,
}

fn encode(node: &str, event: &ClusterEvent) -> Value {
    match event {
        ClusterEvent::Change(change) => {
            let (kind, uri) = match change {
                Change::Tools => ("tools", None),
                Change::Prompts => ("prompts", None),
                Change::Resources => ("resources", None),
                Change::ResourceUpdated(uri) => ("updated", Some(uri.as_str())),
            };
            json!({"o": node, "k": "change", "c": kind, "uri": uri})
        }
        ClusterEvent::SessionChanged(id) => json!({"o": node, "k": "session", "s": id}),
        ClusterEvent::Ended(id) => json!({"o": node, "k": "ended", "s": id}),
        ClusterEvent::Cancel { session, request } => json!({"o": node, "k": "cancel", "s": session, "r": request}),
        ClusterEvent::LegacyPost { connection, caller, message } => {
            json!({"o": node, "k": "legacy-post", "s": connection, "c": caller, "m": message})
        }
        ClusterEvent::Deliver { session, message } => {
            json!({"o": node, "k": "deliver", "s": session, "m": String::from_utf8_lossy(message)})
        }
        ClusterEvent::Response { session, id, outcome } => match outcome {
            Ok(result) => json!({"o": node, "k": "response", "s": session, "r": id, "ok": result}),
            Err(error) => json!({"o": node, "k": "response", "s": session, "r": id, "err": error}),
        },
    }
}

fn decode(node: &str, text: &str) -> Option<ClusterEvent> {
    let v: Value = serde_json::from_str(text).ok()?;
    if v["o"].as_str()? == node {
        return None;
    }
    let session = || v["s"].as_str().map(str::to_owned);
    let request = || serde_json::from_value(v["r"].clone()).ok();
    Some(match v["k"].as_str()? {
        "change" => ClusterEvent::Change(match v["c"].as_str()? {
            "tools" => Change::Tools,
            "prompts" => Change::Prompts,
            "resources" => Change::Resources,
            "updated" => Change::ResourceUpdated(v["uri"].as_str()?.to_owned()),
            _ => return None,
        }),
        "session" => ClusterEvent::SessionChanged(session()?),
        "ended" => ClusterEvent::Ended(session()?),
        "cancel" => ClusterEvent::Cancel { session: session()?, request: request()? },
        "legacy-post" => ClusterEvent::LegacyPost {
            connection: session()?,
            caller: v["c"].as_str().map(str::to_owned),
            message: v["m"].as_str()?.to_owned(),
        },
        "deliver" => ClusterEvent::Deliver { session: session()?, message: v["m"].as_str()?.as_bytes().to_vec() },
        "response" => {
            let outcome = match v.get("err") {
                Some(error) => Err(serde_json::from_value(error.clone()).ok()?),
                None => Ok(v.get("ok")?.clone()),
            };
            ClusterEvent::Response { session: session()?, id: request()?, outcome }
        }
        _ => return None,
    })
}

impl Bus {
    /// Starts listening (on the current tokio runtime) until the bus is dropped.
    pub fn start(redis: Redis) -> Arc<Bus> {
        let (tx, _) = broadcast::channel(1024);
        let bus = Arc::new(Bus { redis, tx });
        tokio::spawn(listen(Arc::downgrade(&bus)));
        bus.redis.keep_alive();
        bus
    }

    fn channel(&self) -> String {
        self.redis.key("cluster")
    }

    /// Publishes `event` in the background.
    pub fn publish(&self, event: &ClusterEvent) {
        let payload = encode(&self.redis.node, event).to_string();
        let channel = self.channel();
        let mut conn = self.redis.conn();
        tokio::spawn(async move {
            let sent: Result<i64, _> = redis::cmd("PUBLISH").arg(channel).arg(payload).query_async(&mut conn).await;
            if let Err(e) = sent {
                tracing::warn!("cluster message not sent: {}", super::describe(&e));
            }
        });
    }

    /// What the other nodes say from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ClusterEvent> {
        self.tx.subscribe()
    }
}

async fn listen(bus: Weak<Bus>) {
    loop {
        let Some((client, channel, node, tx)) =
            bus.upgrade().map(|b| (b.redis.client.clone(), b.channel(), b.redis.node.clone(), b.tx.clone()))
        else {
            return;
        };
        if let Ok(mut pubsub) = client.get_async_pubsub().await {
            if pubsub.subscribe(&channel).await.is_ok() {
                let mut messages = pubsub.on_message();
                while let Some(message) = messages.next().await {
                    if bus.strong_count() == 0 {
                        return;
                    }
                    if let Some(event) = message.get_payload::<String>().ok().and_then(|t| decode(&node, &t)) {
                        let _ = tx.send(event);
                    }
                }
            }
        }
        tracing::debug!("cluster channel lost; reconnecting");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::{ErrorObject, RequestId};

    #[test]
    fn events_round_trip_and_our_own_are_ignored() {
        let events = [
            ClusterEvent::Change(Change::ResourceUpdated("example://a".into())),
            ClusterEvent::Change(Change::Tools),
            ClusterEvent::SessionChanged("s".into()),
            ClusterEvent::Ended("s".into()),
            ClusterEvent::Cancel { session: "s".into(), request: RequestId::Number(4) },
            ClusterEvent::Deliver { session: "s".into(), message: br#"{"jsonrpc":"2.0","method":"x"}"#.to_vec() },
            ClusterEvent::LegacyPost { connection: "c".into(), caller: Some("alice".into()), message: "{}".into() },
            ClusterEvent::Response {
                session: "s".into(),
                id: RequestId::Number(1),
                outcome: Ok(json!({"action": "accept"})),
            },
            ClusterEvent::Response {
                session: "s".into(),
                id: RequestId::String("x".into()),
                outcome: Err(ErrorObject::invalid_request("no")),
            },
        ];
        for event in events {
            let text = encode("a", &event).to_string();
            assert!(decode("a", &text).is_none());
            assert_eq!(format!("{:?}", decode("b", &text).unwrap()), format!("{event:?}"));
        }
    }
}
