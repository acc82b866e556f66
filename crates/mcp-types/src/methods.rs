//! One marker type per method, carrying its contract: the method string, the params type and
//! the result type. Method strings are copied from the spec.
//!
//! ```
//! use mcp_types::methods::{CallTool, Request};
//! assert_eq!(CallTool::METHOD, "tools/call");
//! ```

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::completion::{CompleteParams, CompleteResult};
use crate::elicitation::{ElicitParams, ElicitResult};
use crate::legacy::{ElicitationCompleteParams, InitializeParams, InitializeResult, SetLevelParams, SubscribeParams};
use crate::lifecycle::DiscoverResult;
use crate::logging::LoggingMessageParams;
use crate::prompts::{GetPromptParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams, ReadResourceResult, ResourceUpdatedParams,
};
use crate::result::{EmptyResult, MetaParams, PaginatedParams};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageParams, CreateMessageResult};
use crate::subscriptions::{AcknowledgedParams, ListenParams};
use crate::tasks::{Task, TaskIdParams, TaskUpdateParams};
use crate::tools::{CallToolParams, CallToolResult, ListToolsResult};
use crate::utilities::{CancelledParams, ProgressParams};

/// A request method.
pub trait Request {
    /// The method string.
    const METHOD: &'static str;
    /// Its params.
    type Params: Serialize + DeserializeOwned + Send + 'static;
    /// Its result.
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

/// A notification method.
pub trait Notification {
    /// The method string.
    const METHOD: &'static str;
    /// Its params.
    type Params: Serialize + DeserializeOwned + Send + 'static;
}

macro_rules! request {
    ($(#[$doc:meta])* $name:ident, $method:literal, $params:ty, $result:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $name {}
        impl Request for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    };
}

macro_rules! notification {
    ($(#[$doc:meta])* $name:ident, $method:literal, $params:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $name {}
        impl Notification for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
        }
    };
}

request!(/// `initialize` (legacy).
    Initialize, "initialize", InitializeParams, InitializeResult);
request!(/// `ping` (legacy).
    Ping, "ping", MetaParams, EmptyResult);
request!(/// `server/discover` (2026-07-28).
    Discover, "server/discover", MetaParams, DiscoverResult);
request!(/// `tools/list`.
    ListTools, "tools/list", PaginatedParams, ListToolsResult);
request!(/// `tools/call`.
    CallTool, "tools/call", CallToolParams, CallToolResult);
request!(/// `resources/list`.
    ListResources, "resources/list", PaginatedParams, ListResourcesResult);
request!(/// `resources/templates/list`.
    ListResourceTemplates, "resources/templates/list", PaginatedParams, ListResourceTemplatesResult);
request!(/// `resources/read`.
    ReadResource, "resources/read", ReadResourceParams, ReadResourceResult);
request!(/// `resources/subscribe` (legacy).
    Subscribe, "resources/subscribe", SubscribeParams, EmptyResult);
request!(/// `resources/unsubscribe` (legacy).
    Unsubscribe, "resources/unsubscribe", SubscribeParams, EmptyResult);
request!(/// `prompts/list`.
    ListPrompts, "prompts/list", PaginatedParams, ListPromptsResult);
request!(/// `prompts/get`.
    GetPrompt, "prompts/get", GetPromptParams, GetPromptResult);
request!(/// `completion/complete`.
    Complete, "completion/complete", CompleteParams, CompleteResult);
request!(/// `logging/setLevel` (legacy).
    SetLevel, "logging/setLevel", SetLevelParams, EmptyResult);
request!(/// `subscriptions/listen` (2026-07-28).
    Listen, "subscriptions/listen", ListenParams, EmptyResult);
request!(/// `sampling/createMessage`: server to client (legacy) or an input request (2026-07-28).
    CreateMessage, "sampling/createMessage", CreateMessageParams, CreateMessageResult);
request!(/// `elicitation/create`: server to client (legacy) or an input request (2026-07-28).
    Elicit, "elicitation/create", ElicitParams, ElicitResult);
request!(/// `roots/list`: server to client (legacy) or an input request (2026-07-28).
    ListRoots, "roots/list", MetaParams, ListRootsResult);
request!(/// `tasks/get` (tasks extension).
    GetTask, "tasks/get", TaskIdParams, Task);
request!(/// `tasks/update` (tasks extension).
    UpdateTask, "tasks/update", TaskUpdateParams, EmptyResult);
request!(/// `tasks/cancel` (tasks extension).
    CancelTask, "tasks/cancel", TaskIdParams, EmptyResult);

notification!(/// `notifications/initialized` (legacy).
    Initialized, "notifications/initialized", MetaParams);
notification!(/// `notifications/cancelled`.
    Cancelled, "notifications/cancelled", CancelledParams);
notification!(/// `notifications/progress`.
    Progress, "notifications/progress", ProgressParams);
notification!(/// `notifications/message`.
    LogMessage, "notifications/message", LoggingMessageParams);
notification!(/// `notifications/tools/list_changed`.
    ToolListChanged, "notifications/tools/list_changed", MetaParams);
notification!(/// `notifications/prompts/list_changed`.
    PromptListChanged, "notifications/prompts/list_changed", MetaParams);
notification!(/// `notifications/resources/list_changed`.
    ResourceListChanged, "notifications/resources/list_changed", MetaParams);
notification!(/// `notifications/resources/updated`.
    ResourceUpdated, "notifications/resources/updated", ResourceUpdatedParams);
notification!(/// `notifications/roots/list_changed` (legacy).
    RootsListChanged, "notifications/roots/list_changed", MetaParams);
notification!(/// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged, "notifications/subscriptions/acknowledged", AcknowledgedParams);
notification!(/// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete, "notifications/elicitation/complete", ElicitationCompleteParams);
notification!(/// `notifications/tasks` (tasks extension).
    TaskNotification, "notifications/tasks", Task);
