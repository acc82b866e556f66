//! The user's side of the authorization code flow: sending the user to the authorization page
//! and catching the redirect back.
//!
//! - [`Browser`]: a loopback listener on 127.0.0.1 (RFC 8252) catches the redirect; the
//!   browser is opened when there is a terminal (never through a shell), and the URL is always
//!   shown for pasting into one.
//! - [`Headless`]: follows the redirects itself, with a cookie jar, until the redirect URI: for
//!   tests and conformance runs against authorization servers that approve without a person.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::AuthError;
use crate::net::fetch::Fetcher;

/// What came back on the redirect URI: `code`, `state`, `iss`, or `error`.
pub type Callback = Vec<(String, String)>;

/// Sends the user to authorization pages.
pub trait UserAgent: Send + Sync + 'static {
    /// Whether a person takes part (then a flow may take minutes, and is better run before the
    /// first request than inside one).
    fn involves_a_person(&self) -> bool {
        true
    }

    /// Gets ready to receive a redirect, preferably on `port` (the one a stored registration
    /// names, so it still fits).
    fn prepare<'a>(&'a self, port: Option<u16>) -> BoxFuture<'a, Result<Box<dyn Redirect>, AuthError>>;
}

/// One redirect URI, ready to receive.
pub trait Redirect: Send {
    /// The URI to register and send in the authorization request.
    fn uri(&self) -> String;
    /// Sends the user to `url` and waits for the redirect back.
    fn run(self: Box<Self>, url: String) -> BoxFuture<'static, Result<Callback, AuthError>>;
}

/// The query of a URL as decoded pairs.
pub(crate) fn query_pairs(url: &str) -> Callback {
    let query = url.split_once('?').map_or("", |(_, q)| q).split('#').next().unwrap_or_default();
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    crate::util::percent::percent_decode(&text.replace('+', " "))
}

/// A person with a browser.
pub struct Browser {
    open: bool,
    show: Arc<dyn Fn(&str) + Send + Sync>,
    wait: Duration,
    fixed_port: Option<u16>,
}

impl Browser {
    /// Opens the browser when `open` (and there is a terminal); shows the URL with `show`.
    pub fn new(open: bool, show: impl Fn(&str) + Send + Sync + 'static) -> Browser {
        Browser { open, show: Arc::new(show), wait: Duration::from_secs(300), fixed_port: None }
    }

    /// Always `http://localhost:PORT/callback` (a client registered with that redirect URI, as
    /// Claude Code's `callbackPort` does); the listener is on 127.0.0.1.
    pub fn fixed_port(mut self, port: u16) -> Self {
        self.fixed_port = Some(port);
        self
    }

    /// How long to wait for the user (default five minutes).
    pub fn wait_for(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }
}

impl UserAgent for Browser {
    fn prepare<'a>(&'a self, port: Option<u16>) -> BoxFuture<'a, Result<Box<dyn Redirect>, AuthError>> {
        Box::pin(async move {
            if let Some(fixed) = self.fixed_port {
                let listeners = localhost_listeners(fixed).await?;
                let (show, wait, open) = (self.show.clone(), self.wait, self.open);
                return Ok(Box::new(Loopback { listeners, port: fixed, host: "localhost", open, show, wait })
                    as Box<dyn Redirect>);
            }
            let listener = match port {
                Some(port) => match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
                    Ok(l) => l,
                    Err(_) => bind_any().await?,
                },
                None => bind_any().await?,
            };
            let port = listener.local_addr().map_err(|e| AuthError::Config(e.to_string()))?.port();
            let (show, wait, open) = (self.show.clone(), self.wait, self.open);
            let listeners = vec![listener];
            Ok(Box::new(Loopback { listeners, port, host: "127.0.0.1", open, show, wait }) as Box<dyn Redirect>)
        })
    }
}

/// Listeners on `port` of both loopback addresses: the redirect names `localhost` (a registered
/// port is registered with that name), which a browser may resolve to 127.0.0.1 or to ::1.
/// 127.0.0.1 must be free; ::1 is taken when the machine has IPv6.
async fn localhost_listeners(port: u16) -> Result<Vec<tokio::net::TcpListener>, AuthError> {
    let v4 = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| AuthError::Config(format!("cannot listen on 127.0.0.1:{port} for the redirect: {e}")))?;
    let mut listeners = vec![v4];
    match tokio::net::TcpListener::bind(("::1", port)).await {
        Ok(v6) => listeners.push(v6),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(AuthError::Config(format!("cannot listen on [::1]:{port} for the redirect: {e}")))
        }
        Err(e) => tracing::debug!("no IPv6 loopback for the redirect ({e}); 127.0.0.1 only"),
    }
    Ok(listeners)
}

async fn bind_any() -> Result<tokio::net::TcpListener, AuthError> {
    tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| AuthError::Config(format!("cannot listen on 127.0.0.1 for the redirect: {e}")))
}

struct Loopback {
    listeners: Vec<tokio::net::TcpListener>,
    port: u16,
    host: &'static str,
    open: bool,
    show: Arc<dyn Fn(&str) + Send + Sync>,
    wait: Duration,
}

impl Redirect for Loopback {
    fn uri(&self) -> String {
        format!("http://{}:{}/callback", self.host, self.port)
    }

    fn run(self: Box<Self>, url: String) -> BoxFuture<'static, Result<Callback, AuthError>> {
        Box::pin(async move {
            (self.show)(&url);
            if self.open {
                open_browser(&url);
            }
            let wait = self.wait;
            tokio::time::timeout(wait, catch(self.listeners))
                .await
                .map_err(|_| AuthError::Refused(format!("no answer from the browser within {} s", wait.as_secs())))?
        })
    }
}

/// Opens `url` in the user's browser when there is a terminal to come back to: the program is
/// started directly, with the URL as its one argument (no shell reads it).
pub fn open_browser(url: &str) {
    use std::io::IsTerminal as _;
    if !std::io::stderr().is_terminal() || !(url.starts_with("https://") || url.starts_with("http://")) {
        return;
    }
    let program = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = spawned {
        std::thread::spawn(move || child.wait());
    }
}

/// The next connection on any of `listeners`.
async fn accept_any(listeners: &[tokio::net::TcpListener]) -> std::io::Result<tokio::net::TcpStream> {
    let accepts = listeners.iter().map(|l| Box::pin(l.accept()));
    let (accepted, _, _) = futures_util::future::select_all(accepts).await;
    accepted.map(|(stream, _)| stream)
}

/// Answers requests on the listeners until one reaches `/callback` with a query.
async fn catch(listeners: Vec<tokio::net::TcpListener>) -> Result<Callback, AuthError> {
    loop {
        let mut stream = accept_any(&listeners).await.map_err(|e| AuthError::Config(e.to_string()))?;
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        let text = String::from_utf8_lossy(&head);
        let target = text.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or_default().to_owned();
        if !target.starts_with("/callback?") {
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            continue;
        }
        let pairs = query_pairs(&target);
        let failed = pairs.iter().any(|(k, _)| k == "error");
        let message = if failed {
            "Authorization was not granted. You can close this window and look at the terminal."
        } else {
            "Authorized. You can close this window and go back to the terminal."
        };
        let page = format!("<!doctype html><meta charset=utf-8><title>mcp</title><p>{message}</p>");
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
        return Ok(pairs);
    }
}

/// Follows the authorization server's redirects without a person, keeping its cookies, until it
/// redirects to the redirect URI.
pub struct Headless {
    fetcher: Fetcher,
    redirect_uri: String,
}

impl Headless {
    /// A headless agent whose redirect URI is `redirect_uri` (nothing listens on it).
    pub fn new(fetcher: Fetcher, redirect_uri: impl Into<String>) -> Headless {
        Headless { fetcher, redirect_uri: redirect_uri.into() }
    }
}

impl UserAgent for Headless {
    fn involves_a_person(&self) -> bool {
        false
    }

    fn prepare<'a>(&'a self, _port: Option<u16>) -> BoxFuture<'a, Result<Box<dyn Redirect>, AuthError>> {
        Box::pin(async move {
            Ok(Box::new(HeadlessRun { fetcher: self.fetcher.clone(), redirect_uri: self.redirect_uri.clone() })
                as Box<dyn Redirect>)
        })
    }
}

struct HeadlessRun {
    fetcher: Fetcher,
    redirect_uri: String,
}

impl Redirect for HeadlessRun {
    fn uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn run(self: Box<Self>, url: String) -> BoxFuture<'static, Result<Callback, AuthError>> {
        Box::pin(async move {
            let mut cookies: Vec<(String, String)> = Vec::new();
            let mut next = url;
            for _hop in 0..20 {
                if next.starts_with(&self.redirect_uri) {
                    return Ok(query_pairs(&next));
                }
                let mut headers = vec![("accept", "text/html".to_owned())];
                if !cookies.is_empty() {
                    let jar = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
                    headers.push(("cookie", jar));
                }
                let answer = self.fetcher.get_once(&next, &headers).await.map_err(AuthError::Unreachable)?;
                for value in answer.headers.get_all(http::header::SET_COOKIE) {
                    let Some((name, rest)) = value.to_str().ok().and_then(|v| v.split_once('=')) else { continue };
                    let value = rest.split(';').next().unwrap_or_default().to_owned();
                    cookies.retain(|(k, _)| k != name);
                    cookies.push((name.trim().to_owned(), value));
                }
                let location = answer.headers.get(http::header::LOCATION).and_then(|v| v.to_str().ok());
                let Some(location) = location.filter(|_| answer.status.is_redirection()) else {
                    return Err(AuthError::Refused(format!(
                        "the authorization page answered HTTP {} instead of redirecting back",
                        answer.status
                    )));
                };
                let base: http::Uri = next.parse().map_err(|e| AuthError::Refused(format!("{e}")))?;
                next = if location.starts_with(&self.redirect_uri) {
                    location.to_owned()
                } else {
                    crate::net::fetch::resolve(&base, location).map_err(AuthError::Refused)?.to_string()
                };
            }
            Err(AuthError::Refused("the authorization server redirected more than 20 times".into()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_queries_are_decoded() {
        let pairs = query_pairs("http://127.0.0.1:1/callback?code=a%2Fb&state=x+y&iss=https%3A%2F%2Fas#frag");
        assert_eq!(
            pairs,
            vec![("code".into(), "a/b".into()), ("state".into(), "x y".into()), ("iss".into(), "https://as".into())]
        );
    }

    #[tokio::test]
    async fn the_loopback_listener_catches_the_redirect() {
        let browser = Browser::new(false, |_| {});
        let redirect = browser.prepare(None).await.unwrap();
        let uri = redirect.uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"), "{uri}");
        let run = tokio::spawn(redirect.run("https://as.example/authorize".into()));
        let port: u16 = uri.trim_start_matches("http://127.0.0.1:").trim_end_matches("/callback").parse().unwrap();
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(b"GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(b"GET /callback?code=c1&state=s1 HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let mut page = String::new();
        stream.read_to_string(&mut page).await.unwrap();
        assert!(page.contains("Authorized"), "{page}");
        let pairs = run.await.unwrap().unwrap();
        assert_eq!(pairs, vec![("code".into(), "c1".into()), ("state".into(), "s1".into())]);
    }

    #[tokio::test]
    async fn a_fixed_callback_port_listens_on_both_loopback_addresses() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        for host in ["::1", "127.0.0.1"] {
            let redirect = Browser::new(false, |_| {}).fixed_port(port).prepare(None).await.unwrap();
            assert_eq!(redirect.uri(), format!("http://localhost:{port}/callback"));
            let run = tokio::spawn(redirect.run("https://as.example/authorize".into()));
            let mut stream = tokio::net::TcpStream::connect((host, port)).await.unwrap();
            stream.write_all(b"GET /callback?code=c2&state=s2 HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
            let mut page = String::new();
            stream.read_to_string(&mut page).await.unwrap();
            assert!(page.contains("Authorized"), "{host}: {page}");
            let pairs = run.await.unwrap().unwrap();
            assert_eq!(pairs, vec![("code".into(), "c2".into()), ("state".into(), "s2".into())], "{host}");
        }
    }
}
