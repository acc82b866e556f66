//! `paypedia --http` over a real socket: the walkthrough's check as a 2026-07-28 request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

#[test]
fn iban_check_over_streamable_http() {
    // The OS picks the port; the server names it on its first stderr line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_paypedia"))
        .args(["--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line.trim().trim_end_matches("/mcp").rsplit(':').next().and_then(|p| p.parse().ok()).expect(&line);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"iban_check","arguments":{"input":"FR7630006000011234567890189"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: iban_check\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#"**VALID** · France (FR)"#), "{response}");
    assert!(response.contains(r#""resultType":"complete""#), "{response}");
}
