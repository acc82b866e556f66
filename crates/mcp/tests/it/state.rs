//! State for handlers (`Router::with_state`, `State<S>`, `cx.state::<S>()`, `cx.lists()`): each
//! handler shape gets the router's value, in both eras, two routers keep their own, a tool that may
//! run as a task sees it, and a missing state is an error naming the type, not a panic.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mcp::server::{NoArgs, RequestContext, ResourceRequest, Router, State, ToolDef, ToolError};
use mcp::tasks::TaskSupport;
use mcp::testing::{self, assert_tool_ok};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// A counter shared by a router's handlers.
#[derive(Default)]
struct Counter {
    calls: AtomicU64,
}

async fn bump(State(counter): State<Arc<Counter>>, _: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Ok((counter.calls.fetch_add(1, Ordering::SeqCst) + 1).to_string())
}

/// Reads the counter and a second state, a label, through the context.
async fn peek(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let counter = cx.state::<Arc<Counter>>()?;
    let label = cx.state::<&'static str>()?;
    Ok(format!("{label}: {}", counter.calls.load(Ordering::SeqCst)))
}

/// Asks for a state the router was not given.
async fn wants_a_number(State(n): State<u32>, _: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(n.to_string())
}

async fn count_resource(
    State(counter): State<Arc<Counter>>,
    _r: ResourceRequest,
    _cx: RequestContext,
) -> Result<String, ToolError> {
    Ok(counter.calls.load(Ordering::SeqCst).to_string())
}

#[derive(Deserialize, JsonSchema)]
struct Who {
    name: String,
}

async fn greeting(State(label): State<&'static str>, args: Who, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("{label} greets {}", args.name))
}

/// Adds a tool while serving, through the lists the context reaches.
async fn grow(State(counter): State<Arc<Counter>>, _: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let lists = cx.lists().ok_or_else(|| ToolError::new("not served by a router"))?;
    let _ = counter; // the state and the lists, side by side
    lists.add_tool(ToolDef::new("grown").description("Added by grow."), bump);
    Ok("grown".into())
}

fn router(label: &'static str) -> Router {
    Router::new()
        .info("state", "1.0.0")
        .with_state(Arc::new(Counter::default()))
        .with_state(label)
        .tool("bump", "Counts.", bump)
        .tool("peek", "Shows the count.", peek)
        .tool("wants_a_number", "Needs a u32 state.", wants_a_number)
        .tool("grow", "Adds a tool.", grow)
        .tool_def(ToolDef::new("bump_task").description("Counts, as a task.").task_support(TaskSupport::Optional), bump)
        .resource("state://count", "count", count_resource)
        .prompt("greeting", "Greets.", greeting)
}

#[tokio::test]
async fn every_handler_shape_gets_the_routers_state_in_both_eras() {
    for client in [testing::connect(router("first")).await, testing::connect_legacy(router("first")).await] {
        assert_eq!(assert_tool_ok(&client.call_tool("bump", json!({})).await.unwrap()), "1");
        assert_eq!(assert_tool_ok(&client.call_tool("bump", json!({})).await.unwrap()), "2");
        assert_eq!(assert_tool_ok(&client.call_tool("peek", json!({})).await.unwrap()), "first: 2");
        let read = client.read_resource("state://count").await.unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap()["contents"][0]["text"], "2");
        let prompt = client.get_prompt("greeting", BTreeMap::from([("name".into(), "Ada".into())])).await.unwrap();
        assert!(serde_json::to_string(&prompt).unwrap().contains("first greets Ada"), "{prompt:?}");
    }
}

#[tokio::test]
async fn two_routers_keep_their_own_state_and_a_task_sees_it() {
    let (one, two) = (testing::connect(router("one")).await, testing::connect(router("two")).await);
    for _ in 0..3 {
        one.call_tool("bump", json!({})).await.unwrap();
    }
    assert_tool_ok(&one.call_tool("bump_task", json!({})).await.unwrap());
    assert_eq!(assert_tool_ok(&one.call_tool("peek", json!({})).await.unwrap()), "one: 4");
    assert_eq!(assert_tool_ok(&two.call_tool("peek", json!({})).await.unwrap()), "two: 0");
}

#[tokio::test]
async fn a_missing_state_is_an_error_naming_its_type() {
    let client = testing::connect(router("first")).await;
    let outcome = client.call_tool("wants_a_number", json!({})).await;
    let said = match outcome {
        Ok(result) => serde_json::to_string(&result).unwrap(),
        Err(e) => e.to_string(),
    };
    assert!(said.contains("no state of type u32") && said.contains("Router::with_state"), "{said}");
    // The connection lives on.
    assert_eq!(assert_tool_ok(&client.call_tool("peek", json!({})).await.unwrap()), "first: 0");
}

#[tokio::test]
async fn a_handler_reaches_the_router_serving_it() {
    let client = testing::connect(router("first")).await;
    assert!(!client.list_tools().await.unwrap().iter().any(|t| t.name == "grown"));
    assert_eq!(assert_tool_ok(&client.call_tool("grow", json!({})).await.unwrap()), "grown");
    assert_eq!(assert_tool_ok(&client.call_tool("grown", json!({})).await.unwrap()), "1");
}

#[test]
#[should_panic(expected = "Router::with_state was given a u32 twice")]
fn one_value_per_type() {
    let _ = Router::new().with_state(1u32).with_state(2u32);
}
