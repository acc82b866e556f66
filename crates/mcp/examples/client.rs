//! A client calling a server: starts a server binary as a child process on stdio, lists its
//! tools, and calls one.
//!
//! `cargo run --example client -- SERVER [TOOL ARGUMENTS_JSON]`, e.g. with the calculator:
//! `cargo build --example calculator && cargo run --example client -- target/debug/examples/calculator sum '{"a":2,"b":3}'`

// A client's output is for the person who ran it: stdout (a server's stdout is the protocol).
#![allow(clippy::print_stdout)]

use mcp::client::{Client, ClientOptions, StdioCommand};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(server) = args.first() else {
        eprintln!("usage: client SERVER [TOOL ARGUMENTS_JSON]");
        return std::process::ExitCode::from(2);
    };
    match run(server, args.get(1), args.get(2)).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("client: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(
    server: &str,
    tool: Option<&String>,
    arguments: Option<&String>,
) -> Result<(), Box<dyn std::error::Error>> {
    // The client speaks whichever era the server does: a 2026-07-28 server is asked directly,
    // an older one gets the `initialize` handshake.
    let client = Client::connect_stdio(StdioCommand::new(server), ClientOptions::default()).await?;
    for tool in client.list_tools().await? {
        println!("tool {}: {}", tool.name, tool.description.unwrap_or_default());
    }
    if let Some(tool) = tool {
        let arguments = serde_json::from_str(arguments.map_or("{}", String::as_str))?;
        let result = client.call_tool(tool, arguments).await?;
        let text: Vec<String> = result.content.iter().filter_map(|block| block.as_text().map(str::to_owned)).collect();
        let outcome = if result.is_error == Some(true) { "failed" } else { "answered" };
        println!("{tool} {outcome}: {}", text.join("\n"));
    }
    client.close().await;
    Ok(())
}
