//! A throwaway PostgreSQL cluster for tests and benchmarks: Debian's binaries, a temporary
//! directory, a free loopback port, SCRAM passwords over TCP and trust on its private socket.
//! Run as root, it runs the server as the `postgres` user (PostgreSQL refuses root). Dropping
//! it stops the server by the pid in `postmaster.pid` and removes the directory.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The superuser's password in a throwaway cluster.
pub const ADMIN_PASSWORD: &str = "admin-Secret-4242";

/// A running cluster.
pub struct Cluster {
    root: PathBuf,
    bin: PathBuf,
    data: PathBuf,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
    as_postgres: bool,
}

fn bin_dir() -> Result<PathBuf, String> {
    let candidates = ["/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"];
    candidates.iter().map(PathBuf::from).find(|d| d.join("initdb").exists()).ok_or_else(|| {
        format!(
            "PostgreSQL is not installed (no initdb in {candidates:?}): apt-get install postgresql postgresql-contrib"
        )
    })
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false)
}

fn run(as_postgres: bool, program: &Path, args: &[&str]) -> Result<Output, String> {
    let mut command = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.args(args).env("LC_ALL", "C.UTF-8").output().map_err(|e| format!("{}: {e}", program.display()))
}

fn check(out: Output, what: &str) -> Result<Output, String> {
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!("{what}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

impl Cluster {
    /// initdb (UTF-8, `C.UTF-8` locale) and start, waiting until it accepts connections.
    pub fn start() -> Result<Cluster, String> {
        let bin = bin_dir()?;
        let as_postgres = is_root();
        let root = std::env::temp_dir().join(format!("crm-pg-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
        let data = root.join("data");
        let pwfile = root.join("pw");
        std::fs::write(&pwfile, ADMIN_PASSWORD).map_err(|e| e.to_string())?;
        let mut cluster = Cluster { root: root.clone(), bin, data, port: 0, as_postgres };
        if as_postgres {
            check(
                Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(&root)
                    .output()
                    .map_err(|e| e.to_string())?,
                "chown",
            )?;
        }
        let data = cluster.data.to_str().unwrap_or_default().to_owned();
        let initdb = cluster.bin.join("initdb");
        let pw = format!("--pwfile={}", pwfile.display());
        let args = [
            "-D",
            &data,
            "-U",
            "postgres",
            &pw,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ];
        check(run(as_postgres, &initdb, &args)?, "initdb")?;
        cluster.port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            cluster.port,
            root.display()
        );
        let log = root.join("log");
        let pg_ctl = cluster.bin.join("pg_ctl");
        let started = run(
            as_postgres,
            &pg_ctl,
            &["-D", &data, "-l", log.to_str().unwrap_or_default(), "-w", "-o", &options, "start"],
        )?;
        check(started, "pg_ctl start")
            .map_err(|e| format!("{e}\n{}", std::fs::read_to_string(&log).unwrap_or_default()))?;
        Ok(cluster)
    }

    /// `postgres://USER:PASSWORD@127.0.0.1:PORT/DB?sslmode=disable`.
    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!("postgres://{user}:{password}@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }

    /// The superuser's URL for database `db`.
    pub fn admin_url(&self, db: &str) -> String {
        self.url("postgres", ADMIN_PASSWORD, db)
    }

    /// Runs SQL as the superuser with `psql` on the private socket.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let psql = self.bin.join("psql");
        let port = self.port.to_string();
        let host = self.root.to_str().unwrap_or_default().to_owned();
        let args = [
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            &host,
            "-p",
            &port,
            "-U",
            "postgres",
            "-d",
            db,
            "-At",
            "-c",
            sql,
        ];
        let out = check(run(self.as_postgres, &psql, &args)?, "psql")?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(self.data.join("postmaster.pid")).ok();
        if let Some(pid) = pid.as_deref().and_then(|t| t.lines().next()).and_then(|p| p.trim().parse::<u32>().ok()) {
            // SIGQUIT: immediate shutdown; then wait for the process to go.
            let _ = Command::new("kill").args(["-QUIT", &pid.to_string()]).status();
            for _ in 0..100 {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
