//! `crm-mcp`: the customer-search MCP server.
//!
//! ```text
//! crm-mcp                                   # the embedded demo database, on stdio
//! crm-mcp --db sqlite:crm.sqlite            # an SQLite file made by crm-mcp init
//! CRM_DATABASE_URL=postgres://... crm-mcp   # PostgreSQL (or --db-url-file FILE)
//! crm-mcp init --db sqlite:crm.sqlite       # create a database with the demo data
//! CRM_DATABASE_URL=postgres://admin@... CRM_READONLY_PASSWORD=... crm-mcp init --db postgres
//! ```
//! Every transport option of our servers applies (`--http`, `--auth-*`, `--audit-log`...).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use crm_mcp::dataset::Dataset;
use crm_mcp::store::{sqlite::SqliteStore, Store};
use crm_mcp::App;
use mcp::cli::ServeArgs;

/// crm-mcp: searches customer records (names in kanji, kana or Latin letters, e-mail addresses)
/// in a CRM database, read-only: SQLite (an embedded demo by default) or PostgreSQL. Serves MCP
/// on stdio unless --http is given. The PostgreSQL URL comes from CRM_DATABASE_URL or
/// --db-url-file, never from the command line.
#[derive(Parser, Default)]
#[command(name = "crm-mcp", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    db: DbArgs,
    /// Cancel any database statement that runs longer than this many milliseconds [default: 3000]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=600_000))]
    statement_timeout: Option<u64>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(clap::Args, Default, Clone)]
struct DbArgs {
    /// The database: sqlite:PATH, or postgres (the URL from CRM_DATABASE_URL or --db-url-file).
    /// Default: CRM_DATABASE_URL when set, else the embedded demo database
    #[arg(long, value_name = "sqlite:PATH|postgres", global = true)]
    db: Option<String>,
    /// Read the PostgreSQL URL from the first line of FILE
    #[arg(long, value_name = "FILE", global = true)]
    db_url_file: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Create the schema and load data into an empty database (SQLite file or PostgreSQL)
    Init {
        /// Load companies.csv, customers.csv and interactions.csv from DIR instead of the demo data
        #[arg(long, value_name = "DIR")]
        data: Option<PathBuf>,
        /// Repeat the customers N times (ids shifted, e-mails tagged): a larger set for benchmarks
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
        scale: u32,
        /// PostgreSQL: the read-only role to create (its password from CRM_READONLY_PASSWORD)
        #[arg(long, value_name = "NAME", default_value = "crm_mcp_ro")]
        role: String,
    },
}

/// The statement timeout unless `--statement-timeout` says otherwise.
const DEFAULT_TIMEOUT_MS: u64 = 3000;

/// Where the records are.
enum Db {
    Demo,
    Sqlite(PathBuf),
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres(String),
}

fn read_url_file(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--db-url-file {}: {e}", path.display()))?;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    if line.is_empty() {
        return Err(format!("--db-url-file {} is empty", path.display()));
    }
    Ok(line.to_owned())
}

fn from_url(url: String) -> Result<Db, String> {
    if let Some(path) = url.strip_prefix("sqlite:") {
        return Ok(Db::Sqlite(path.into()));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") || url.contains("host=") {
        return Ok(Db::Postgres(url));
    }
    Err("CRM_DATABASE_URL must be postgres://USER:PASSWORD@HOST:PORT/DATABASE or sqlite:PATH".into())
}

impl DbArgs {
    fn resolve(&self) -> Result<Db, String> {
        let env_url = std::env::var("CRM_DATABASE_URL").ok().filter(|u| !u.trim().is_empty());
        let url = match &self.db_url_file {
            Some(file) => Some(read_url_file(file)?),
            None => env_url,
        };
        match self.db.as_deref() {
            Some(db) if db.starts_with("sqlite:") => Ok(Db::Sqlite(db["sqlite:".len()..].into())),
            Some("postgres" | "postgresql") => match url {
                Some(url) => from_url(url),
                None => Err("--db postgres: set CRM_DATABASE_URL or pass --db-url-file FILE".into()),
            },
            Some(db) if db.contains("://") || db.contains('@') || db.contains('=') => {
                Err("a database URL on the command line is visible to every user (ps, shell history): put it in \
                 CRM_DATABASE_URL or a file given to --db-url-file, and pass --db postgres"
                    .into())
            }
            Some(other) => Err(format!("--db {other:?}: use sqlite:PATH or postgres")),
            None => url.map_or(Ok(Db::Demo), from_url),
        }
    }
}

async fn open(db: Db, timeout: Duration) -> Result<Store, String> {
    match db {
        Db::Demo => Ok(Store::Sqlite(SqliteStore::open(&crm_mcp::demo::ensure()?, timeout)?)),
        Db::Sqlite(path) => {
            if !path.exists() {
                return Err(format!("{} does not exist; create it with crm-mcp init --db sqlite:{0}", path.display()));
            }
            Ok(Store::Sqlite(SqliteStore::open(&path, timeout)?))
        }
        #[cfg(feature = "postgres")]
        Db::Postgres(url) => {
            let config = crm_mcp::store::postgres::parse_url(&url)?;
            Ok(Store::Postgres(crm_mcp::store::postgres::PgStore::open(config, timeout).await?))
        }
        #[cfg(not(feature = "postgres"))]
        Db::Postgres(_) => Err("this crm-mcp was built without the postgres feature".into()),
    }
}

async fn init(db: Db, data: Option<PathBuf>, scale: u32, role: String) -> Result<String, String> {
    let dataset = match &data {
        Some(dir) => Dataset::load_dir(dir)?,
        None => Dataset::demo(),
    }
    .scaled(scale);
    let counts = format!(
        "{} companies, {} customers, {} interactions",
        dataset.companies.len(),
        dataset.customers.len(),
        dataset.interactions.len()
    );
    match db {
        Db::Demo => Err("crm-mcp init needs --db sqlite:PATH or --db postgres".into()),
        Db::Sqlite(path) => {
            crm_mcp::store::sqlite::create(&path, &dataset)?;
            Ok(format!("wrote {} ({counts}); serve it with crm-mcp --db sqlite:{0}", path.display()))
        }
        #[cfg(feature = "postgres")]
        Db::Postgres(url) => {
            let password = std::env::var("CRM_READONLY_PASSWORD").map_err(|_| {
                "set CRM_READONLY_PASSWORD to the password the read-only role should have (12 characters or more)"
                    .to_owned()
            })?;
            let init = crm_mcp::init::PgInit { url, role: role.clone(), password };
            crm_mcp::init::init_postgres(&init, &dataset).await?;
            Ok(format!(
                "loaded {counts} into schema crm; serve it as the read-only role: \
                 CRM_DATABASE_URL=postgres://{role}:PASSWORD@HOST:PORT/DATABASE crm-mcp"
            ))
        }
        #[cfg(not(feature = "postgres"))]
        Db::Postgres(_) => Err(format!("this crm-mcp was built without the postgres feature (role {role})")),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli: Cli = mcp::cli::parse();
    let db = match cli.db.resolve() {
        Ok(db) => db,
        Err(e) => {
            eprintln!("crm-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(Command::Init { data, scale, role }) = cli.command {
        return match init(db, data, scale, role).await {
            Ok(done) => {
                eprintln!("crm-mcp: {done}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("crm-mcp init: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let timeout = Duration::from_millis(cli.statement_timeout.unwrap_or(DEFAULT_TIMEOUT_MS));
    let app = match open(db, timeout).await {
        Ok(store) => std::sync::Arc::new(App::new(store)),
        Err(e) => {
            eprintln!("crm-mcp: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ids = app.clone();
    tokio::spawn(async move { ids.load_ids().await });
    match mcp::cli::serve(crm_mcp::router(app), &cli.serve).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crm-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}
