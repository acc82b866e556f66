//! An in-memory transport: the router on one end of an in-process pipe, a test on the other.
//!
//! The bytes are the same newline-delimited JSON as on stdio, so tests over this transport
//! exercise the same engine, framing included.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

use crate::server::connection::{serve_connection, ServeOptions};
use crate::server::Router;

/// The client's end of an in-memory connection, speaking raw lines.
pub struct MemoryPeer {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
}

/// Starts serving `router` on a new in-memory connection and returns the client's end.
pub fn connect(router: Router) -> MemoryPeer {
    connect_with(router, ServeOptions::default())
}

/// [`connect`] with explicit limits.
pub fn connect_with(router: Router, options: ServeOptions) -> MemoryPeer {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    tokio::spawn(async move {
        if let Err(e) = serve_connection(router, server_read, server_write, options).await {
            tracing::debug!("in-memory connection ended: {e}");
        }
    });
    let (reader, writer) = tokio::io::split(client);
    MemoryPeer { reader: BufReader::new(reader), writer }
}

impl MemoryPeer {
    /// Sends one line (a newline is appended).
    pub async fn send_line(&mut self, line: &str) -> std::io::Result<()> {
        self.writer.write_all(line.as_bytes()).await?;
        self.writer.write_all(b"\n").await?;
        self.writer.flush().await
    }

    /// Sends one JSON message.
    pub async fn send(&mut self, message: &serde_json::Value) -> std::io::Result<()> {
        self.send_line(&message.to_string()).await
    }

    /// Receives the next message, or `None` when the server closed the connection.
    pub async fn recv(&mut self) -> std::io::Result<Option<serde_json::Value>> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        serde_json::from_str(&line).map(Some).map_err(std::io::Error::other)
    }

    /// Closes the client's sending side (end of input for the server).
    pub async fn close(&mut self) -> std::io::Result<()> {
        self.writer.shutdown().await
    }
}
