//! The filtering proxy: the only way out of a server whose network is a list of hosts. It listens
//! inside the server's own network namespace (the child opens the socket there and hands it over)
//! and connects from ours: HTTP `CONNECT host:port` (HTTPS and anything tunnelled) and plain HTTP
//! requests with an absolute URL. A host not on the list gets `403` with the reason, and the
//! refusal is logged on stderr with the host asked for and kept in the [`Journal`].
//!
//! Threads, not tasks: a server opens few connections, and the proxy must run where no runtime
//! does (`mcp sandbox`, a command started before the runtime).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::journal::Journal;
use crate::policy::HostPattern;

/// The longest request head read from the server.
const MAX_HEAD: usize = 16 * 1024;

/// What the proxy allows and where it tells.
#[derive(Debug, Clone)]
pub struct Rules {
    /// The hosts allowed.
    pub hosts: Vec<HostPattern>,
    /// Names resolved from this file first (`/etc/hosts` format), for tests and split horizons.
    pub hosts_file: Option<PathBuf>,
    /// Where refusals are kept.
    pub journal: Journal,
    /// The server, as refusals name it.
    pub server: String,
    /// Every host is allowed and noted (learning what the server reaches).
    pub allow_all: bool,
}

/// A running proxy; dropped, it stops accepting.
#[derive(Debug)]
pub struct Proxy {
    listener: Arc<AtomicI32>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let fd = self.listener.swap(-1, Ordering::SeqCst);
        if fd >= 0 {
            crate::kernel::shut_down(fd);
        }
    }
}

/// Starts the proxy's thread: it receives the listening socket from the child over `socket`,
/// then serves it.
pub fn start(socket: OwnedFd, rules: Rules) -> io::Result<Proxy> {
    let listener = Arc::new(AtomicI32::new(-1));
    let shared = listener.clone();
    std::thread::Builder::new().name("mcp-sandbox-proxy".into()).spawn(move || {
        let Ok(Some(fd)) = crate::kernel::receive_fd(socket.as_raw_fd()) else { return };
        drop(socket);
        let listener = std::net::TcpListener::from(fd);
        shared.store(listener.as_raw_fd(), Ordering::SeqCst);
        let rules = Arc::new(rules);
        for stream in listener.incoming() {
            if shared.load(Ordering::SeqCst) < 0 {
                break;
            }
            let Ok(stream) = stream else { break };
            let rules = rules.clone();
            let _ = std::thread::Builder::new().name("mcp-sandbox-conn".into()).spawn(move || serve(stream, &rules));
        }
        shared.store(-1, Ordering::SeqCst);
    })?;
    Ok(Proxy { listener })
}

/// One connection from the server: its request, checked, then tunnelled or refused.
fn serve(mut client: TcpStream, rules: &Rules) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    let Some((head, rest)) = read_head(&mut client) else {
        let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let Some(request) = Request::parse(&head) else {
        let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let target = format!("{}:{}", request.host, request.port);
    if !rules.allow_all && !rules.hosts.iter().any(|h| h.matches(&request.host, request.port)) {
        eprintln!("mcp sandbox: {}: refused a connection to {target} (not in its \"network\" list)", rules.server);
        rules.journal.record("connect", &target, false);
        let body = format!("mcp sandbox: {target} is not in this server's \"network\" list\n");
        let _ = write!(
            client,
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    rules.journal.record("connect", &request.host, true);
    let upstream = match connect(&request.host, request.port, rules.hosts_file.as_deref()) {
        Ok(upstream) => upstream,
        Err(e) => {
            let body = format!("mcp sandbox: cannot reach {target}: {e}\n");
            let _ = write!(
                client,
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            return;
        }
    };
    let _ = client.set_read_timeout(None);
    let mut upstream = upstream;
    let first = if request.connect {
        if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").is_err() {
            return;
        }
        rest
    } else {
        let mut first = request.origin_form_head(&head);
        first.extend_from_slice(&rest);
        first
    };
    if upstream.write_all(&first).is_err() {
        return;
    }
    splice(client, upstream);
}

/// Reads up to the end of the request head; what came after it is returned apart.
fn read_head(client: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            return Some((buffer, rest));
        }
        if buffer.len() > MAX_HEAD {
            return None;
        }
        let n = client.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// A proxy request: `CONNECT host:port` or `METHOD http://host[:port]/path`.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    connect: bool,
    host: String,
    port: u16,
    /// For plain HTTP: the request line in origin form.
    line: String,
}

impl Request {
    fn parse(head: &[u8]) -> Option<Request> {
        let text = std::str::from_utf8(head).ok()?;
        let line = text.lines().next()?;
        let mut words = line.split(' ');
        let (method, target, version) = (words.next()?, words.next()?, words.next()?);
        if method == "CONNECT" {
            let (host, port) = split_host_port(target)?;
            return Some(Request { connect: true, host, port: port?, line: String::new() });
        }
        let rest = target.strip_prefix("http://")?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = split_host_port(authority)?;
        Some(Request { connect: false, host, port: port.unwrap_or(80), line: format!("{method} {path} {version}") })
    }

    /// The head with its request line in origin form.
    fn origin_form_head(&self, head: &[u8]) -> Vec<u8> {
        let end = head.iter().position(|b| *b == b'\r').unwrap_or(head.len());
        let mut out = self.line.clone().into_bytes();
        out.extend_from_slice(&head[end..]);
        out
    }
}

/// `host`, `host:port`, `[v6]:port`; the port `None` when absent (an invalid one: no parse).
fn split_host_port(authority: &str) -> Option<(String, Option<u16>)> {
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p > 0)?),
        None => None,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// Connects to `host:port`, looking the name up in `hosts_file` first.
fn connect(host: &str, port: u16, hosts_file: Option<&std::path::Path>) -> io::Result<TcpStream> {
    let pinned = hosts_file.and_then(|file| lookup(file, host));
    let addresses: Vec<std::net::SocketAddr> = match pinned {
        Some(ip) => vec![std::net::SocketAddr::new(ip, port)],
        None => (host, port).to_socket_addrs()?.collect(),
    };
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} has no address"));
    for address in addresses {
        match TcpStream::connect_timeout(&address, Duration::from_secs(10)) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// `host`'s address in a hosts file.
fn lookup(file: &std::path::Path, host: &str) -> Option<std::net::IpAddr> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().map(|l| l.split('#').next().unwrap_or("")).find_map(|line| {
        let mut words = line.split_whitespace();
        let ip = words.next()?.parse().ok()?;
        words.any(|name| name.eq_ignore_ascii_case(host)).then_some(ip)
    })
}

/// Copies both ways until either side ends.
fn splice(client: TcpStream, upstream: TcpStream) {
    let (Ok(client_read), Ok(upstream_read)) = (client.try_clone(), upstream.try_clone()) else { return };
    let back = std::thread::spawn(move || copy(upstream_read, client));
    copy(client_read, upstream);
    let _ = back.join();
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_in_both_forms() {
        let r = Request::parse(b"CONNECT api.github.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert!(r.connect && r.host == "api.github.com" && r.port == 443);
        let r = Request::parse(b"GET http://Example.com:8080/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n").unwrap();
        assert!(!r.connect && r.host == "example.com" && r.port == 8080);
        assert_eq!(
            r.origin_form_head(b"GET http://Example.com:8080/a?b HTTP/1.1\r\nHost: e\r\n\r\n"),
            b"GET /a?b HTTP/1.1\r\nHost: e\r\n\r\n"
        );
        let r = Request::parse(b"GET http://[::1]/ HTTP/1.1\r\n\r\n").unwrap();
        assert!(r.host == "::1" && r.port == 80);
        for bad in [
            &b"CONNECT host HTTP/1.1\r\n\r\n"[..],
            b"GET /relative HTTP/1.1\r\n\r\n",
            b"CONNECT u@h:1 HTTP/1.1\r\n\r\n",
            b"CONNECT h:0 HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(Request::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
