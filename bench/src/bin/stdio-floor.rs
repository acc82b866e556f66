//! The no-framework floor for stdio: parse each line with serde_json, write a canned response
//! carrying the request's id. No routing, no validation, no concurrency.

use std::io::{BufRead, BufReader, BufWriter, Write};

fn main() {
    let stdin = std::io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let mut output = BufWriter::new(std::io::stdout().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            break;
        }
        let Ok(message) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        let response = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {"content": [{"type": "text", "text": "hello"}]}
        });
        serde_json::to_writer(&mut output, &response).unwrap();
        output.write_all(b"\n").unwrap();
        if input.buffer().is_empty() {
            output.flush().unwrap();
        }
    }
    output.flush().unwrap();
}
