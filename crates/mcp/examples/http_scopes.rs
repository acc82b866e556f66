//! HTTP with OAuth scopes: a shared notebook served over Streamable HTTP behind the resource
//! server, where reading needs the scope `notes:read` and writing `notes:write`. The scopes are
//! declared on the tools; the command line of `mcp::serve` turns the resource server on.
//!
//! ```sh
//! cargo run -p mcp-stack --example http_scopes -- --http 127.0.0.1:8080 \
//!     --auth-issuer https://login.example.com
//! ```
//!
//! Every request then needs a JWT of that issuer (checked against the keys its metadata names, or
//! `--auth-jwks URL`) whose audience is `http://127.0.0.1:8080/mcp`. Without one the answer is
//! `401` with a `WWW-Authenticate: Bearer resource_metadata="…"` challenge; a token without the
//! scope a tool needs gets `403` with `error="insufficient_scope"` naming it, before the handler
//! runs. `tools/list` shows each caller only the tools its token may call. `tests/examples.rs`
//! runs it with a signing key of its own: how to mint the tokens and publish the keys in a test.

use std::sync::{Arc, Mutex};

use mcp::server::{NoArgs, RequestContext, Router, State, ToolDef, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// The scope of `read_notes`.
const READ: &[&str] = &["notes:read"];
/// The scope of `add_note`.
const WRITE: &[&str] = &["notes:write"];

#[derive(Default)]
struct Notebook {
    notes: Mutex<Vec<String>>,
}

/// Arguments of `add_note`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddNote {
    /// The note, one line.
    text: String,
}

async fn add_note(
    State(notebook): State<Arc<Notebook>>,
    args: AddNote,
    cx: RequestContext,
) -> Result<String, ToolError> {
    let text = args.text.trim();
    if text.is_empty() || text.contains('\n') {
        return Err(ToolError::new("a note is one line of text: pass text with no line break"));
    }
    // The token's subject, checked by the resource server (never the token itself).
    let author = cx.caller().map_or_else(|| "anonymous".to_owned(), |caller| caller.subject().to_owned());
    let mut notes = notebook.notes.lock().unwrap();
    notes.push(format!("{author}: {text}"));
    Ok(format!("noted; the notebook holds {} notes", notes.len()))
}

async fn read_notes(
    State(notebook): State<Arc<Notebook>>,
    _: NoArgs,
    _cx: RequestContext,
) -> Result<String, ToolError> {
    let notes = notebook.notes.lock().unwrap();
    if notes.is_empty() {
        return Ok("the notebook is empty".into());
    }
    Ok(notes.join("\n"))
}

fn router() -> Router {
    Router::new()
        .info("http-scopes", "1.0.0")
        .with_state(Arc::new(Notebook::default()))
        .tool_def(
            ToolDef::new("read_notes").description("Reads every note, oldest first.").read_only().scopes(READ),
            read_notes,
        )
        .tool_def(ToolDef::new("add_note").description("Adds a one-line note.").scopes(WRITE), add_note)
        .list_only_permitted_tools()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // `--http ADDR --auth-issuer URL` (and the other `--auth-*` options) come from the command
    // line; without `--auth-issuer` the scopes are not asked for.
    mcp::serve(router()).await
}
