//! Argument completion handlers, keyed by prompt or resource template and argument name.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcp_types::completion::{CompleteParams, Completion, CompletionRef};

/// The most values one completion answer may hold (spec: 100).
pub const MAX_VALUES: usize = 100;

/// A function that suggests values for an argument from what was typed so far and the values of
/// the other arguments.
pub trait CompletionHandler: Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static {}

impl<F> CompletionHandler for F where F: Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static {}

type Erased = Arc<dyn Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync>;

/// Registered completion handlers.
#[derive(Default)]
pub(crate) struct Completers {
    prompts: HashMap<(String, String), Erased>,
    resources: HashMap<(String, String), Erased>,
}

impl Completers {
    pub fn add_prompt(&mut self, prompt: &str, argument: &str, f: impl CompletionHandler) {
        self.prompts.insert((prompt.into(), argument.into()), Arc::new(f));
    }

    pub fn add_resource(&mut self, template: &str, variable: &str, f: impl CompletionHandler) {
        self.resources.insert((template.into(), variable.into()), Arc::new(f));
    }

    /// The suggestions for `params`; an argument without a handler gets none.
    pub fn complete(&self, params: &CompleteParams) -> Completion {
        let key = match &params.reference {
            CompletionRef::Prompt { name, .. } => self.prompts.get(&(name.clone(), params.argument.name.clone())),
            CompletionRef::Resource { uri } => self.resources.get(&(uri.clone(), params.argument.name.clone())),
        };
        let Some(handler) = key else {
            return Completion::default();
        };
        let context = params.context.as_ref().and_then(|c| c.arguments.clone()).unwrap_or_default();
        let mut values = handler(&params.argument.value, &context);
        let total = values.len();
        values.truncate(MAX_VALUES);
        Completion { has_more: Some(total > MAX_VALUES), total: Some(total as u64), values }
    }
}
