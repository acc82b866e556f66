//! Model providers: a conversation in our own terms, and the codecs that speak it to the
//! Anthropic Messages API and OpenAI Chat Completions, streaming.

mod anthropic;
mod http;
mod openai;

use std::fmt;

use futures_util::future::BoxFuture;
use serde_json::Value;

pub use anthropic::Anthropic;
pub use http::{Endpoint, OnWait, Retry};
pub use openai::{is_reasoning_model, MaxTokensField, OpenAi};

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The person (and tool results, which providers count as the person's turn).
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text.
    Text(String),
    /// The model asks for a tool.
    ToolCall {
        /// The provider's id of the call.
        id: String,
        /// The tool, as the model knows it.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
    /// What a tool call gave.
    ToolResult {
        /// The call answered.
        id: String,
        /// The text the model reads (fenced).
        content: String,
        /// The call failed.
        is_error: bool,
    },
}

/// A message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who.
    pub role: Role,
    /// What.
    pub parts: Vec<Part>,
}

impl Message {
    /// A person's text.
    pub fn user(text: impl Into<String>) -> Message {
        Message { role: Role::User, parts: vec![Part::Text(text.into())] }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its name for the model (`server__tool`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON Schema (an object).
    pub input_schema: Value,
}

/// One model turn to run.
#[derive(Debug, Clone)]
pub struct Request {
    /// The model.
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// The most tokens the reply may take.
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// It finished its turn.
    EndTurn,
    /// It asks for tools.
    ToolUse,
    /// It ran out of tokens.
    MaxTokens,
    /// Anything else, as the provider named it.
    Other(String),
}

/// Tokens used.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Sent.
    pub input: u64,
    /// Received.
    pub output: u64,
}

/// A model turn, complete.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Its text.
    pub text: String,
    /// The tool calls it asks for, in order.
    pub calls: Vec<(String, String, Value)>,
    /// Why it stopped.
    pub stop: Stop,
    /// What it cost.
    pub usage: Usage,
}

impl Turn {
    /// The turn as a message of the conversation.
    pub fn message(&self) -> Message {
        let mut parts = Vec::new();
        if !self.text.is_empty() {
            parts.push(Part::Text(self.text.clone()));
        }
        for (id, name, arguments) in &self.calls {
            parts.push(Part::ToolCall { id: id.clone(), name: name.clone(), arguments: arguments.clone() });
        }
        Message { role: Role::Assistant, parts }
    }
}

/// Why a turn failed, in words a person can act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderError {
    /// The key was refused (401/403).
    Unauthorized(String),
    /// Too many requests, still after the retries.
    RateLimited(String),
    /// The provider is overloaded, still after the retries.
    Overloaded(String),
    /// The conversation no longer fits the model's context.
    ContextTooLong(String),
    /// The request was refused as malformed.
    BadRequest(String),
    /// The provider could not be reached, or broke its protocol.
    Transport(String),
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderError::Unauthorized(m) => write!(f, "the provider refused the API key: {m}"),
            ProviderError::RateLimited(m) => write!(f, "rate limited by the provider: {m}"),
            ProviderError::Overloaded(m) => write!(f, "the provider is overloaded: {m}"),
            ProviderError::ContextTooLong(m) => write!(f, "the conversation is too long for the model: {m}"),
            ProviderError::BadRequest(m) => write!(f, "the provider refused the request: {m}"),
            ProviderError::Transport(m) => write!(f, "cannot talk to the provider: {m}"),
        }
    }
}

impl std::error::Error for ProviderError {}

/// Text as it streams in.
pub type OnText<'a> = &'a mut (dyn FnMut(&str) + Send);

/// A model provider.
pub trait Provider: Send + Sync {
    /// Runs one turn, streaming its text to `on_text` as it arrives.
    fn turn<'a>(&'a self, request: &'a Request, on_text: OnText<'a>) -> BoxFuture<'a, Result<Turn, ProviderError>>;

    /// The provider's name (`anthropic`, `openai`).
    fn name(&self) -> &str;
}

/// Partial JSON arguments of a streamed tool call, parsed when it ends (`{}` when empty).
pub(crate) fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::json!({"_unparsed_arguments": text}))
}
