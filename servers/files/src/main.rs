//! `files-mcp`: the filesystem server.
//!
//! ```text
//! files-mcp ~/project ~/notes          # these directories, on stdio
//! files-mcp                            # the client's roots
//! files-mcp --read-only ~/project      # no write tools
//! files-mcp --http 127.0.0.1:8080 DIR  # every transport option of our servers applies
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use files_mcp::roots::Roots;
use files_mcp::sandbox::{Policy, Resolver, Root};
use files_mcp::{App, Limits};
use mcp::cli::ServeArgs;

/// files-mcp: reads, searches and writes files inside the given directories, and nowhere else:
/// every path is opened beneath an allowed directory with openat2(RESOLVE_BENEATH), so the kernel
/// refuses `..`, absolute paths and symbolic links that lead out. Without directories it serves
/// the client's roots; with them, client roots may only narrow them. Serves MCP on stdio unless
/// --http is given.
#[derive(Parser)]
#[command(name = "files-mcp", version)]
struct Cli {
    /// The directories to serve
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Offer no tool that writes (write_file, edit_file, create_directory, move_file)
    #[arg(long)]
    read_only: bool,
    /// Follow symbolic links whose targets stay inside the allowed directory (links that lead out,
    /// and absolute links, are refused either way)
    #[arg(long)]
    follow_symlinks_inside: bool,
    /// Read files that have several hard links (their contents may be a file elsewhere)
    #[arg(long)]
    allow_hard_links: bool,
    /// The largest file read whole, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_file_bytes)]
    max_file_bytes: u64,
    /// The largest text result, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_result_bytes)]
    max_result_bytes: usize,
    /// The most entries one directory_tree, search_files or grep visits
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_walk_entries)]
    max_walk_entries: usize,
    #[command(flatten)]
    serve: ServeArgs,
}

/// Without arguments `mcp::cli::parse` runs no parser: the defaults must be clap's.
impl Default for Cli {
    fn default() -> Self {
        let limits = Limits::default();
        Cli {
            dirs: Vec::new(),
            read_only: false,
            follow_symlinks_inside: false,
            allow_hard_links: false,
            max_file_bytes: limits.max_file_bytes,
            max_result_bytes: limits.max_result_bytes,
            max_walk_entries: limits.max_walk_entries,
            serve: ServeArgs::default(),
        }
    }
}

fn open_roots(dirs: &[PathBuf]) -> Result<Vec<Arc<Root>>, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
    let mut roots = Vec::new();
    for dir in dirs {
        let path = if dir.is_absolute() { dir.clone() } else { cwd.join(dir) };
        let root = Root::open(&path, "command line".into()).map_err(|e| format!("{}: {e}", dir.display()))?;
        roots.push(Arc::new(root));
    }
    Ok(roots)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli: Cli = mcp::cli::parse();
    let roots = match open_roots(&cli.dirs) {
        Ok(roots) => roots,
        Err(e) => {
            eprintln!("files-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    let probe_dir = roots.first().map(|r| r.fd());
    let resolver = match probe_dir {
        Some(fd) => Resolver::detect(fd),
        None => {
            match rustix::fs::openat(rustix::fs::CWD, "/", rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty()) {
                Ok(fd) => Resolver::detect(std::os::fd::AsFd::as_fd(&fd)),
                Err(_) => Resolver::Walk,
            }
        }
    };
    let policy = Policy { resolver, follow_symlinks: cli.follow_symlinks_inside };
    let limits = Limits {
        max_file_bytes: cli.max_file_bytes,
        max_result_bytes: cli.max_result_bytes,
        max_walk_entries: cli.max_walk_entries,
    };
    let app = Arc::new(App {
        policy,
        limits,
        read_only: cli.read_only,
        allow_hard_links: cli.allow_hard_links,
        roots: Roots::new(roots, policy),
        watcher: files_mcp::watch::Watcher::new(),
    });
    let router = files_mcp::router(app.clone());
    app.watcher.attach(router.lists());
    match mcp::cli::serve(router, &cli.serve).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("files-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}
