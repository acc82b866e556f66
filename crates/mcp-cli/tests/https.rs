//! HTTPS end to end: `mcp-example --tls-cert/--tls-key` with a certificate from a CA made at
//! test time; `mcp` refuses it without `--cacert` (saying what to do), reaches it with the CA,
//! also through a real HTTP proxy (Debian's tinyproxy, CONNECT), and refuses a certificate for
//! another name in words that name both.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use mcp::testing::HttpServer;

mod common;
use common::{example, mcp};

/// A CA, and a server certificate it signed for `names`, as PEM files in `dir`.
fn make_ca(dir: &Path, names: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "mcp-stack test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let cert = params.signed_by(&key, &issuer).unwrap();
    let (ca_path, cert_path, key_path) = (dir.join("ca.pem"), dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&ca_path, ca.pem()).unwrap();
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (ca_path, cert_path, key_path)
}

fn tls_server(cert: &Path, key: &Path) -> HttpServer {
    HttpServer::start(example(), &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]).unwrap()
}

/// `mcp` with `args`, without any proxy from the environment unless given in `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(mcp());
    command.args(args).stdin(Stdio::null());
    for var in
        ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"]
    {
        command.env_remove(var);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_private_ca_is_refused_until_given_and_then_reached() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_ca(dir.path(), &["localhost", "127.0.0.1"]);
    let server = tls_server(&cert, &key);
    assert!(server.url().starts_with("https://"), "{}", server.url());
    let out = run(&["--url", server.url(), "tools"], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown issuer") && stderr(&out).contains("--cacert"), "{}", stderr(&out));
    let out = run(&["--url", server.url(), "--cacert", ca.to_str().unwrap(), "call", "echo", "text=over TLS"], &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "over TLS\n", "{}", stderr(&out));
    let ssl_cert_file =
        run(&["--url", server.url(), "call", "echo", "text=env"], &[("SSL_CERT_FILE", ca.to_str().unwrap())]);
    assert_eq!(String::from_utf8_lossy(&ssl_cert_file.stdout), "env\n", "SSL_CERT_FILE: {}", stderr(&ssl_cert_file));
}

#[test]
fn a_certificate_for_another_name_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_ca(dir.path(), &["other.example"]);
    let server = tls_server(&cert, &key);
    let url = server.url().replace("127.0.0.1", "localhost");
    let out = run(&["--url", &url, "--cacert", ca.to_str().unwrap(), "tools"], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("the certificate of localhost is for other.example, not localhost"),
        "{}",
        stderr(&out)
    );
}

/// tinyproxy on a free port, logging to a file.
struct Proxy {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn tinyproxy(dir: &Path) -> Proxy {
    let port = free_port();
    let log = dir.join("tinyproxy.log");
    let config = dir.join("tinyproxy.conf");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 60\nAllow 127.0.0.1\nLogFile \"{}\"\nLogLevel Connect\n",
            log.display()
        ),
    )
    .unwrap();
    let child = Command::new("tinyproxy")
        .args(["-d", "-c", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tinyproxy (Debian package tinyproxy)");
    let proxy = Proxy { child, port, log }; // killed and reaped when dropped
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return proxy;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("tinyproxy did not start");
}

#[test]
fn https_goes_through_an_http_proxy_with_connect() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_ca(dir.path(), &["localhost", "127.0.0.1"]);
    let server = tls_server(&cert, &key);
    let proxy = tinyproxy(dir.path());
    let proxy_url = format!("http://127.0.0.1:{}", proxy.port);
    let out = run(
        &["--url", server.url(), "--cacert", ca.to_str().unwrap(), "call", "echo", "text=tunnelled"],
        &[("HTTPS_PROXY", &proxy_url)],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tunnelled\n", "{}", stderr(&out));
    let log = std::fs::read_to_string(&proxy.log).unwrap_or_default();
    assert!(log.contains("CONNECT"), "the proxy saw no CONNECT: {log}");
    // NO_PROXY exempts the host: the call goes direct even with a dead proxy configured.
    let dead = format!("http://127.0.0.1:{}", free_port());
    let out = run(
        &["--url", server.url(), "--cacert", ca.to_str().unwrap(), "call", "echo", "text=direct"],
        &[("HTTPS_PROXY", &dead), ("NO_PROXY", "127.0.0.1")],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "direct\n", "{}", stderr(&out));
    // A plain http URL is forwarded by the proxy too.
    let plain = HttpServer::start(example(), &[]).unwrap();
    let out = run(&["--url", plain.url(), "call", "echo", "text=forwarded"], &[("HTTP_PROXY", &proxy_url)]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "forwarded\n", "{}", stderr(&out));
}

#[test]
fn a_renewed_certificate_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = make_ca(dir.path(), &["localhost", "127.0.0.1"]);
    let server = tls_server(&cert, &key);
    let renewed = tempfile::tempdir().unwrap();
    let (new_ca, new_cert, new_key) = make_ca(renewed.path(), &["localhost", "127.0.0.1"]);
    std::thread::sleep(std::time::Duration::from_millis(1100)); // a later modification time
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let out =
            run(&["--url", server.url(), "--cacert", new_ca.to_str().unwrap(), "call", "echo", "text=renewed"], &[]);
        if out.status.success() {
            assert_eq!(String::from_utf8_lossy(&out.stdout), "renewed\n");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the new certificate was never served: {}", stderr(&out));
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
