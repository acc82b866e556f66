//! Services the workspace's tests start for real, on free loopback ports, stopped by their pid:
//! not published (`publish = false`), so that the library users get does not shell out to a
//! Debian package. The tests of `mcp-stack-cli` and of the example server use it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A real `redis-server` (Debian's package) on a free loopback port, nothing on disk, stopped
/// by its pid when dropped. [`RedisServer::restart`] brings it back on the same port, empty.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    password: Option<String>,
    /// The certificate and key (PEM files) it serves TLS with, when it does.
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl RedisServer {
    /// Starts one and waits (up to 10 s) until it answers `PING`.
    pub fn start() -> std::io::Result<RedisServer> {
        RedisServer::start_with_password(None)
    }

    /// Starts one that requires `password` (`requirepass`), when given.
    pub fn start_with_password(password: Option<&str>) -> std::io::Result<RedisServer> {
        RedisServer::launch(password.map(str::to_owned), None)
    }

    /// Starts one that speaks only TLS (`rediss://`), with the server certificate and key in
    /// the PEM files `cert` and `key` (it asks clients for no certificate).
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> std::io::Result<RedisServer> {
        RedisServer::launch(None, Some((cert.to_owned(), key.to_owned())))
    }

    fn launch(
        password: Option<String>,
        tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    ) -> std::io::Result<RedisServer> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut server = RedisServer { child: None, port, password, tls };
        server.spawn()?;
        Ok(server)
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let port = self.port.to_string();
        let mut command = Command::new("redis-server");
        if let Some(password) = &self.password {
            command.args(["--requirepass", password]);
        }
        match &self.tls {
            Some((cert, key)) => {
                command.args(["--port", "0", "--tls-port", &port, "--tls-auth-clients", "no"]);
                command.arg("--tls-cert-file").arg(cert).arg("--tls-key-file").arg(key);
            }
            None => {
                command.args(["--port", &port]);
            }
        }
        let child = command
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| std::io::Error::other(format!("redis-server: {e} (apt-get install redis-server)")))?;
        self.child = Some(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                use std::io::Read;
                if self.tls.is_some() {
                    return Ok(()); // listening; a PING would need a TLS handshake
                }
                // Without the password a live server answers -NOAUTH: alive all the same.
                let mut reply = [0u8; 7];
                if stream.write_all(b"PING\r\n").is_ok()
                    && stream.read_exact(&mut reply).is_ok()
                    && (&reply == b"+PONG\r\n" || &reply == b"-NOAUTH")
                {
                    return Ok(());
                }
            }
            if std::time::Instant::now() > deadline {
                return Err(std::io::Error::other("redis-server did not answer PING within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis://[:PASSWORD@]127.0.0.1:PORT`, or `rediss://...` when it speaks TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        match &self.password {
            Some(password) => format!("{scheme}://:{password}@127.0.0.1:{}", self.port),
            None => format!("{scheme}://127.0.0.1:{}", self.port),
        }
    }

    /// Sends one command (plain TCP, after `AUTH` when it has a password) and returns the
    /// first line of its reply, e.g. `+OK`. For tests that steer the server: `CLIENT PAUSE`.
    pub fn command(&self, args: &[&str]) -> std::io::Result<String> {
        let encode = |args: &[&str]| {
            let mut out = format!("*{}\r\n", args.len());
            for arg in args {
                out.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
            }
            out
        };
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut line = String::new();
        if let Some(password) = &self.password {
            stream.write_all(encode(&["AUTH", password]).as_bytes())?;
            reader.read_line(&mut line)?;
            line.clear();
        }
        stream.write_all(encode(args).as_bytes())?;
        reader.read_line(&mut line)?;
        Ok(line.trim_end().to_owned())
    }

    /// Kills it (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port (empty: nothing was on disk).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.kill();
        self.spawn()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
