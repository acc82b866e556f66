//! The commands of `mcp`, a file each (or a few alike together). Those that answer before any
//! connection: `servers`, `login`/`logout`/`auth`, `chat`, `gateway`, `bridge`, `doctor`,
//! `inspect`. Those given the connected client: `discover`, the listings, `call`, `task`,
//! `prompt`, `complete`. `ping`, `read` and `skills` (which runs [`crate::skills`]) are a line
//! each in `main.rs`'s dispatch; `sandbox` runs in `main`, before any runtime.

pub(crate) mod auth;
pub(crate) mod bridge;
pub(crate) mod call;
pub(crate) mod chat;
pub(crate) mod complete;
pub(crate) mod discover;
pub(crate) mod doctor;
pub(crate) mod gateway;
pub(crate) mod inspect;
pub(crate) mod list;
pub(crate) mod prompt;
pub(crate) mod servers;
pub(crate) mod task;
