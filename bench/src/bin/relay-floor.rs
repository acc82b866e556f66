//! The no-framework floor for a stdio gateway: one more process and two more pipes in the path,
//! and nothing else. It starts the server given after `--` and copies lines both ways with one
//! blocking thread per direction; with `--parse` each line is also parsed with serde_json and
//! written again (the least a proxy that renames or routes must do). No routing, no sessions,
//! no concurrency beyond the two threads.
//!
//! `relay-floor [--parse] -- PROGRAM [ARGS...]`

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Command, Stdio};

/// Copies `input` to `output` line by line, flushing when no more input is buffered.
fn pump(input: impl std::io::Read, output: impl Write, parse: bool) {
    let mut input = BufReader::new(input);
    let mut output = BufWriter::new(output);
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            break;
        }
        let written = if parse {
            match serde_json::from_slice::<serde_json::Value>(&line) {
                Ok(message) => serde_json::to_writer(&mut output, &message).is_ok() && output.write_all(b"\n").is_ok(),
                Err(_) => continue,
            }
        } else {
            output.write_all(&line).is_ok()
        };
        if !written || (input.buffer().is_empty() && output.flush().is_err()) {
            break;
        }
    }
    let _ = output.flush();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parse = args.first().is_some_and(|a| a == "--parse");
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: relay-floor [--parse] -- PROGRAM [ARGS...]");
        std::process::exit(2);
    };
    let Some((program, rest)) = args[split + 1..].split_first() else {
        eprintln!("relay-floor: no program after --");
        std::process::exit(2);
    };
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let to_child = child.stdin.take().unwrap();
    let from_child = child.stdout.take().unwrap();
    let back = std::thread::spawn(move || pump(from_child, std::io::stdout().lock(), parse));
    pump(std::io::stdin().lock(), to_child, parse);
    let _ = back.join();
    let _ = child.wait();
}
