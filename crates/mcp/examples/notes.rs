//! A tool with state: a notebook the handlers share, given once with `Router::with_state` and
//! taken by each handler as its first argument (`State<S>`), with no global. Adding a note also
//! tells the clients subscribed to `notes://all` that it changed, through the router the
//! request's context reaches.
//!
//! `cargo run --example notes`.

use std::sync::{Arc, Mutex};

use mcp::server::{NoArgs, RequestContext, ResourceRequest, Router, State, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// What every handler shares: keep it cheap to clone (an `Arc`, a pool).
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
    let count = {
        let mut notes = notebook.notes.lock().unwrap();
        notes.push(text.to_owned());
        notes.len()
    };
    if let Some(lists) = cx.lists() {
        lists.notify_resource_updated("notes://all");
    }
    Ok(format!("noted; the notebook holds {count} notes"))
}

async fn list_notes(
    State(notebook): State<Arc<Notebook>>,
    _: NoArgs,
    _cx: RequestContext,
) -> Result<String, ToolError> {
    let notes = notebook.notes.lock().unwrap();
    if notes.is_empty() {
        return Ok("the notebook is empty: add a note with add_note".into());
    }
    Ok(notes.iter().enumerate().map(|(i, n)| format!("{}. {n}", i + 1)).collect::<Vec<_>>().join("\n"))
}

async fn all_notes(
    State(notebook): State<Arc<Notebook>>,
    _r: ResourceRequest,
    _cx: RequestContext,
) -> Result<String, ToolError> {
    Ok(notebook.notes.lock().unwrap().join("\n"))
}

fn router() -> Router {
    Router::new()
        .info("notes", "1.0.0")
        .with_state(Arc::new(Notebook::default()))
        .tool("add_note", "Adds a one-line note to the notebook.", add_note)
        .tool("list_notes", "Lists the notes, numbered, oldest first.", list_notes)
        .resource("notes://all", "notes", all_notes)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    mcp::serve(router()).await
}
