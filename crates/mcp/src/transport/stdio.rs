//! The stdio transport: the server reads requests from stdin and writes messages to stdout.
//!
//! Two guarantees:
//! - **stdout is the protocol's alone.** Before serving, the original stdout is duplicated to a
//!   private descriptor and fd 1 is pointed at stderr, so a stray `println!` from any library in
//!   the process lands in the log instead of corrupting the stream.
//! - **no blocking thread pool on the hot path.** When stdin and stdout are pipes or sockets (as
//!   when a host spawns the server) they are switched to non-blocking mode and driven by the
//!   reactor. A terminal or a regular file falls back to tokio's blocking stdio.

use std::io;

use crate::engine::fd::dup_fd;
pub use crate::engine::fd::{reader_for, take_stdout, writer_for};
use crate::server::connection::{serve_connection, ServeOptions};
use crate::server::Router;

/// Serves `router` on stdin and stdout until stdin ends.
pub async fn serve(router: Router) -> io::Result<()> {
    serve_with(router, ServeOptions::default()).await
}

/// [`serve`] with explicit limits.
pub async fn serve_with(router: Router, options: ServeOptions) -> io::Result<()> {
    crate::engine::memory::tune_for_large_messages();
    let protocol_out = take_stdout()?;
    let reader = reader_for(dup_fd(0)?)?;
    let writer = writer_for(protocol_out)?;
    serve_connection(router, reader, writer, options).await
}
