//! An MCP host: the application side of MCP. It starts one client per server, runs the agent
//! loop on a model, and stands between the two:
//!
//! - [`provider`]: the Anthropic Messages API and OpenAI Chat Completions, streamed;
//! - [`servers`]: `mcpServers` files, one client each, started in parallel;
//! - [`names`]: `server__tool` names within the providers' limits, collisions reported;
//! - [`consent`]: what may run without asking, and asking the rest;
//! - [`fence`]: server text fenced as data for the model;
//! - [`context`]: tool schemas loaded on demand when they would crowd the context;
//! - [`agent`]: the loop itself ([`Host`]);
//! - [`sampling`]: servers asking the model, with the person's consent;
//! - [`skills`]: servers' skills offered to the model once the person approved them;
//! - [`scripted`]: a scripted provider on loopback, for tests;
//! - `traced` (feature `otel`): a question and its model requests as spans (GenAI conventions).

pub mod agent;
pub mod consent;
pub mod context;
pub mod fence;
pub mod names;
pub mod project;
pub mod provider;
pub mod results;
pub mod sampling;
pub mod scripted;
pub mod servers;
pub mod skills;
mod traced;

pub use agent::{Event, Host, HostError, Settings};
