//! Whose request an upstream's question is for.
//!
//! An upstream asks questions (elicitation, sampling, roots) and writes log lines in the middle
//! of a call. Each must reach the downstream caller whose request caused it, or nobody:
//!
//! - **By correlation**: on Streamable HTTP a server sends what belongs to a request on that
//!   request's response stream. The gateway tags the requests it sends for each caller
//!   ([`mcp::client::tagged`]), and the client says which tag a question came with.
//! - **By ownership**: a connection that serves one caller alone (a session's own child, an
//!   account's own connection, the one client of a gateway on stdio) passes every question to
//!   that caller's latest waiting request.
//! - **Otherwise** (a connection shared by several callers, a question outside any call) a
//!   question goes to a caller only when every request waiting on the connection is that one
//!   caller's; else it is refused with a JSON-RPC error, and the call that waits on it fails:
//!   never a guess. Roots are never asked on a shared connection (the upstream would keep one
//!   caller's roots and use them for another's requests), so such a connection does not declare
//!   them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcp::proxy::{ProxyContext as _, SessionRef};
use mcp::server::tasks::ANONYMOUS;
use mcp::server::RequestContext;

use super::parked::Asker;

/// Whom a connection to an upstream serves alone.
#[derive(Clone, Debug)]
pub enum Owner {
    /// One legacy session of a downstream client (its roots, its questions).
    Session(SessionRef),
    /// Every request of one account: an authenticated caller, an `--account-header` value, the
    /// one client of a gateway on stdio.
    Account(String),
}

impl Owner {
    /// The caller of `cx` as far as it can be told from others: its legacy session, else its
    /// account; `None` for an anonymous 2026-07-28 request (no token, no account header).
    pub fn of(cx: &RequestContext) -> Option<Owner> {
        if let Some(session) = cx.session_ref() {
            return Some(Owner::Session(session));
        }
        let account = cx.account();
        (!account.starts_with(ANONYMOUS)).then_some(Owner::Account(account))
    }

    /// Whether both name the same caller.
    pub fn same(&self, other: &Owner) -> bool {
        match (self, other) {
            (Owner::Session(a), Owner::Session(b)) => a.same(b),
            (Owner::Account(a), Owner::Account(b)) => a == b,
            _ => false,
        }
    }

    /// Whether the caller may still send requests (a session that ended may not).
    pub fn is_alive(&self) -> bool {
        match self {
            Owner::Session(session) => session.is_alive(),
            Owner::Account(_) => true,
        }
    }
}

fn nobody(what: &str) -> String {
    format!("no caller of the gateway is waiting on this server: its {what} is not passed on")
}

/// Why a message from the upstream went to nobody.
pub const SHARED_ROOTS: &str = "this server's connection through the gateway is shared by several callers, so \
     it is not told any one caller's roots";

/// One downstream request waiting on an upstream connection.
struct Waiter {
    id: u64,
    /// The tag of the upstream requests sent for it.
    tag: u64,
    owner: Option<Owner>,
    cx: RequestContext,
    asker: Asker,
    /// Parked for a 2026-07-28 client's retry: its upstream request waits on the answer to the
    /// question the gateway holds, so it is not counted among the callers a message without a
    /// tag could be for (an abandoned one would otherwise make every message of its connection
    /// unplaceable for ten minutes). Its tag still finds it.
    parked: bool,
    /// Held (read) by each log line being passed on to it: its answer waits for them (write).
    deliveries: Arc<tokio::sync::RwLock<()>>,
}

/// The downstream requests waiting on one upstream connection, oldest first (a call parked
/// for a 2026-07-28 client's retry still waits: the upstream may ask more meanwhile).
#[derive(Default)]
pub struct Callers {
    waiting: Arc<Mutex<Vec<Waiter>>>,
    next: AtomicU64,
}

/// Takes a request off the waiting list when dropped.
pub struct Waiting {
    list: Arc<Mutex<Vec<Waiter>>>,
    id: u64,
    deliveries: Arc<tokio::sync::RwLock<()>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.list.lock().unwrap().retain(|w| w.id != self.id);
    }
}

/// How long an answer waits for the log lines that came before it to be passed on (a
/// downstream client that reads nothing does not hold the answer for longer).
const DELIVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Waiting {
    /// Waits until every log line found for this request so far has been passed on to its
    /// caller: the upstream wrote them before its answer, so the caller reads them before it.
    pub async fn delivered(&self) {
        let _ = tokio::time::timeout(DELIVERY_WAIT, self.deliveries.write()).await;
    }

    /// Marks the request as parked for its client's retry (see [`Waiter::parked`]).
    pub fn park(&self) {
        if let Some(w) = self.list.lock().unwrap().iter_mut().find(|w| w.id == self.id) {
            w.parked = true;
        }
    }
}

impl Callers {
    /// Puts `cx` on the waiting list until the guard drops: the upstream requests tagged `tag`
    /// are sent for it, and its questions are asked through `asker`.
    pub fn wait(&self, cx: &RequestContext, tag: u64, asker: Asker) -> Waiting {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let deliveries = Arc::new(tokio::sync::RwLock::new(()));
        let waiter = Waiter {
            id,
            tag,
            owner: Owner::of(cx),
            cx: cx.clone(),
            asker,
            parked: false,
            deliveries: deliveries.clone(),
        };
        self.waiting.lock().unwrap().push(waiter);
        Waiting { list: self.waiting.clone(), id, deliveries }
    }

    /// The request a message from the upstream is for: the one its tag names, else on a
    /// connection `owned` by one caller its latest, else the latest when every waiting request
    /// is one caller's. `what` names the message in the refusal.
    pub fn find(&self, tag: Option<u64>, owned: bool, what: &str) -> Result<(RequestContext, Asker), String> {
        self.find_waiter(tag, owned, what, |w| (w.cx.clone(), w.asker.clone()))
    }

    /// Where a log line goes, as [`find`](Self::find): the request's context, and a hold on its
    /// answer until the line has been passed on ([`Waiting::delivered`]).
    pub fn find_for_log(
        &self,
        tag: Option<u64>,
        owned: bool,
    ) -> Result<(RequestContext, Option<tokio::sync::OwnedRwLockReadGuard<()>>), String> {
        self.find_waiter(tag, owned, "log message", |w| (w.cx.clone(), w.deliveries.clone().try_read_owned().ok()))
    }

    fn find_waiter<T>(
        &self,
        tag: Option<u64>,
        owned: bool,
        what: &str,
        take: impl FnOnce(&Waiter) -> T,
    ) -> Result<T, String> {
        if what == "roots/list" && !owned {
            return Err(SHARED_ROOTS.into());
        }
        let waiting = self.waiting.lock().unwrap();
        let found = match tag {
            Some(tag) => waiting
                .iter()
                .rev()
                .find(|w| w.tag == tag)
                .ok_or_else(|| format!("the request this {what} came with is no longer waiting at the gateway"))?,
            None if owned => waiting.last().ok_or_else(|| nobody(what))?,
            None => {
                let active: Vec<&Waiter> = waiting.iter().filter(|w| !w.parked).collect();
                let latest = *active.last().ok_or_else(|| nobody(what))?;
                let one_caller = active.len() == 1
                    || latest
                        .owner
                        .as_ref()
                        .is_some_and(|owner| active.iter().all(|w| w.owner.as_ref().is_some_and(|o| o.same(owner))));
                if !one_caller {
                    return Err(format!(
                        "several callers of the gateway are waiting on this server and its {what} does not say \
                         whose request it belongs to: it is refused rather than shown to the wrong caller"
                    ));
                }
                latest
            }
        };
        Ok(take(found))
    }

    /// How many requests wait (parked ones included).
    pub fn len(&self) -> usize {
        self.waiting.lock().unwrap().len()
    }
}
