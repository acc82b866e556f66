//! Sampling: a server (on a legacy session) asks the host's model a question. The person is
//! asked first, every time; the answer goes through the same provider, within a budget of
//! requests and tokens per session, with no tools.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use mcp::types::content::{Role as McpRole, SamplingContent, TextContent};
use mcp::types::sampling::{CreateMessageParams, CreateMessageResult, OneOrMany};
use serde_json::json;

use crate::consent::Consent;
use crate::provider::{Message, Part, Provider, Request, Role, Stop};

/// What a session's sampling may use.
#[derive(Debug)]
pub struct Budget {
    requests: AtomicU32,
    /// The most tokens one answer may take.
    pub max_tokens: u32,
}

impl Budget {
    /// `requests` answers of at most `max_tokens` each.
    pub fn new(requests: u32, max_tokens: u32) -> Budget {
        Budget { requests: AtomicU32::new(requests), max_tokens }
    }

    fn take(&self) -> bool {
        self.requests.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }
}

fn text_of(content: &OneOrMany<SamplingContent>) -> String {
    let blocks: Vec<&SamplingContent> = match content {
        OneOrMany::One(block) => vec![block],
        OneOrMany::Many(blocks) => blocks.iter().collect(),
    };
    blocks
        .into_iter()
        .map(|b| match b {
            SamplingContent::Text(t) => t.text.clone(),
            _ => "[non-text content]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The client handler answering `sampling/createMessage` for `server`.
pub fn handler(
    server: String,
    provider: Arc<dyn Provider>,
    consent: Arc<Consent>,
    model: String,
    budget: Arc<Budget>,
) -> mcp::client::Handler<CreateMessageParams, CreateMessageResult> {
    Arc::new(move |params: CreateMessageParams| {
        let (server, provider, consent, model, budget) =
            (server.clone(), provider.clone(), consent.clone(), model.clone(), budget.clone());
        Box::pin(async move {
            let preview: Vec<String> = params.messages.iter().map(|m| text_of(&m.content)).collect();
            let details =
                json!({"systemPrompt": params.system_prompt, "messages": preview, "maxTokens": params.max_tokens});
            if !consent.ask_always(&server, "sampling (a question for the model)", details).await {
                return Err("the person declined the sampling request".to_owned());
            }
            if !budget.take() {
                return Err("this session's sampling budget is spent".to_owned());
            }
            let messages = params
                .messages
                .iter()
                .map(|m| Message {
                    role: if m.role == McpRole::Assistant { Role::Assistant } else { Role::User },
                    parts: vec![Part::Text(text_of(&m.content))],
                })
                .collect();
            let max_tokens = u32::try_from(params.max_tokens.max(1)).unwrap_or(u32::MAX).min(budget.max_tokens);
            let request = Request {
                model: model.clone(),
                system: params.system_prompt.clone().unwrap_or_default(),
                messages,
                tools: Vec::new(),
                max_tokens,
            };
            let mut ignore = |_: &str| {};
            let turn = provider.turn(&request, &mut ignore).await.map_err(|e| e.to_string())?;
            Ok(CreateMessageResult {
                result_type: None,
                role: McpRole::Assistant,
                content: OneOrMany::One(SamplingContent::Text(TextContent::new(turn.text))),
                model,
                stop_reason: Some(match turn.stop {
                    Stop::MaxTokens => "maxTokens".into(),
                    _ => "endTurn".into(),
                }),
                meta: None,
            })
        }) as mcp::server::BoxFuture<_>
    })
}
