//! TLS with rustls (the `ring` provider), for the client and the server.
//!
//! - Client: the operating system's trust store (which honours `SSL_CERT_FILE` and
//!   `SSL_CERT_DIR`) plus any CA files given (`--cacert`), and certificate errors in words a person
//!   can act on.
//! - Server: a certificate and key from PEM files, looked at again every few seconds and swapped
//!   in when they change, so a renewed certificate needs no restart.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads every certificate of a PEM file.
pub fn read_certificates(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(io::Error::other(format!("{}: no PEM certificate in it", path.display())));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> io::Result<PrivateKeyDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| io::Error::other(format!("{}: no usable private key: {e}", path.display())))
}

/// A client configuration trusting the system's roots and the CA files in `extra`.
pub fn client_config(extra: &[PathBuf]) -> io::Result<Arc<rustls::ClientConfig>> {
    Ok(client_config_counted(extra)?.0)
}

/// [`client_config`], and how many roots it trusts.
pub(crate) fn client_config_counted(extra: &[PathBuf]) -> io::Result<(Arc<rustls::ClientConfig>, usize)> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    for path in extra {
        for cert in read_certificates(path)? {
            roots.add(cert).map_err(|e| io::Error::other(format!("{}: not a CA certificate: {e}", path.display())))?;
        }
    }
    let count = roots.len();
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok((Arc::new(config), count))
}

/// A certificate problem, said so that a person knows what to do; `None` for other errors.
pub fn explain(error: &(dyn std::error::Error + 'static), host: &str) -> Option<String> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(rustls::Error::InvalidCertificate(cert)) = e.downcast_ref::<rustls::Error>() {
            return Some(describe(cert, host));
        }
        if let Some(inner) = e.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            if let Some(rustls::Error::InvalidCertificate(cert)) = inner.downcast_ref::<rustls::Error>() {
                return Some(describe(cert, host));
            }
        }
        source = e.source();
    }
    None
}

fn describe(error: &rustls::CertificateError, host: &str) -> String {
    use rustls::CertificateError::*;
    match error {
        NotValidForNameContext { presented, .. } => {
            let names: Vec<&str> = presented.iter().map(|n| bare_name(n)).collect();
            format!("the certificate of {host} is for {}, not {host}", names.join(", "))
        }
        NotValidForName => format!("the certificate of {host} is for another name, not {host}"),
        UnknownIssuer => format!(
            "unknown issuer: the certificate of {host} is not signed by a CA this machine trusts; if it uses a \
             private CA, pass --cacert FILE (or set SSL_CERT_FILE)"
        ),
        Expired | ExpiredContext { .. } => format!("the certificate of {host} has expired"),
        NotValidYet | NotValidYetContext { .. } => {
            format!("the certificate of {host} is not valid yet (check the clock)")
        }
        other => format!("the certificate of {host} was refused: {other:?}"),
    }
}

/// A presented name without its kind: `DnsName("a.example")` → `a.example`.
fn bare_name(presented: &str) -> &str {
    match presented.split_once("(\"") {
        Some((_, rest)) => rest.trim_end_matches("\")"),
        None => presented,
    }
}

/// A server certificate and key, reloaded when their files change.
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<(Arc<CertifiedKey>, Option<SystemTime>)>,
}

impl std::fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingCert").field("cert", &self.cert_path).finish()
    }
}

fn modified(paths: [&Path; 2]) -> Option<SystemTime> {
    paths.iter().filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok()).max()
}

fn load(cert: &Path, key: &Path) -> io::Result<Arc<CertifiedKey>> {
    let chain = read_certificates(cert)?;
    let key = read_key(key)?;
    let signing =
        provider().key_provider.load_private_key(key).map_err(|e| io::Error::other(format!("the key: {e}")))?;
    Ok(Arc::new(CertifiedKey::new(chain, signing)))
}

impl ReloadingCert {
    /// Loads the pair now (an error if either file is bad).
    pub fn new(cert_path: PathBuf, key_path: PathBuf) -> io::Result<Arc<Self>> {
        let key = load(&cert_path, &key_path)?;
        let stamp = modified([&cert_path, &key_path]);
        Ok(Arc::new(ReloadingCert { cert_path, key_path, current: RwLock::new((key, stamp)) }))
    }

    /// Looks at the files every `period` and swaps in a changed pair that loads (a bad one is
    /// logged and the old pair kept).
    pub fn watch(self: &Arc<Self>, period: Duration) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(me) = weak.upgrade() else { return };
                me.reload_if_changed();
            }
        });
    }

    /// Reloads when the files changed; `true` when a new pair is in use.
    pub fn reload_if_changed(&self) -> bool {
        let stamp = modified([&self.cert_path, &self.key_path]);
        if stamp == self.current.read().unwrap().1 {
            return false;
        }
        match load(&self.cert_path, &self.key_path) {
            Ok(key) => {
                *self.current.write().unwrap() = (key, stamp);
                tracing::warn!("TLS certificate reloaded from {}", self.cert_path.display());
                true
            }
            Err(e) => {
                tracing::warn!("TLS certificate changed but does not load, keeping the old one: {e}");
                false
            }
        }
    }

    /// The server configuration that serves the current pair.
    pub fn server_config(self: &Arc<Self>) -> io::Result<Arc<rustls::ServerConfig>> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap().0.clone())
    }
}
