//! `mcp-example`: the smallest useful MCP server, for trying hosts and clients against.
//!
//! Tools `echo {text}`, `sum {a, b}`, `now`, `wait {ms, every_ms?}`, `countdown {ms, every_ms?}` (a task when the client
//! follows tasks), `confirm {question}` (asks the user), `announce {uri}` (tells subscribers a
//! resource changed), `pixel` (an image) and `counter {start}` (an MCP App: its result is shown
//! by the `ui://example/counter` page), a static resource, a resource template and a prompt.
//! Serves stdio by default, Streamable HTTP with `--http ADDR`.

use mcp::server::{NoArgs, RequestContext, ResourceRequest, Router, ToolDef, ToolError};
use mcp::tasks::TaskSupport;
use mcp::types::content::{ContentBlock, ImageContent};
use mcp::types::prompts::PromptMessage;
use mcp::types::resources::Resource;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Echo {
    /// The text to send back.
    text: String,
}

/// Arguments of `sum`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sum {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// Arguments of `wait`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Wait {
    /// How long to wait, in milliseconds (at most 60,000).
    ms: u64,
    /// How often to report progress, in milliseconds (100 unless given; at least 1).
    #[serde(default)]
    every_ms: Option<u64>,
}

/// Arguments of `confirm`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Confirm {
    /// The yes-or-no question to put to the user.
    question: String,
}

/// The answer `confirm` asks for.
#[derive(Deserialize, JsonSchema)]
struct Answer {
    /// Yes or no.
    yes: bool,
}

/// Arguments of `announce`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Announce {
    /// The URI of the resource that changed, e.g. example://about.
    uri: String,
}

/// Arguments of `counter`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Counter {
    /// Where the counter starts.
    start: f64,
}

/// A 16x16 PNG, one colour: what `pixel` returns.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR4nGM4oaFBEmIY1TCqYfhqAAB8MxgQ+Pjr0gAAAABJRU5ErkJggg==";

/// The MCP App (`io.modelcontextprotocol/ui`) that shows `counter`'s result: it speaks the
/// extension's postMessage bridge to its host, and adds one through the host's `tools/call`.
const COUNTER_APP: &str = include_str!("counter-app.html");

/// Arguments of the `greet` prompt.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// Parameters of the `example://greeting/{name}` template.
#[derive(Deserialize)]
struct GreetingParams {
    name: String,
}

async fn echo(args: Echo, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(args.text)
}

async fn sum(args: Sum, _cx: RequestContext) -> Result<String, ToolError> {
    let total = args.a + args.b;
    if !total.is_finite() {
        return Err(ToolError::new(format!("{} + {} overflows: pass smaller numbers", args.a, args.b)));
    }
    Ok(format!("{} + {} = {}", args.a, args.b, total))
}

async fn wait(args: Wait, cx: RequestContext) -> Result<String, ToolError> {
    if args.ms > 60_000 {
        return Err(ToolError::new(format!("{} ms is too long: wait at most 60000 ms", args.ms)));
    }
    let every = args.every_ms.unwrap_or(100).max(1);
    let steps = (args.ms / every).max(1);
    for step in 0..steps {
        cx.progress(step as f64, Some(steps as f64), None).await;
        tokio::time::sleep(std::time::Duration::from_millis(args.ms / steps)).await;
    }
    Ok(format!("waited {} ms", args.ms))
}

async fn countdown(args: Wait, cx: RequestContext) -> Result<String, ToolError> {
    let done = wait(args, cx).await?;
    Ok(format!("countdown over: {done}"))
}

async fn confirm(args: Confirm, cx: RequestContext) -> Result<String, ToolError> {
    match cx.elicit::<Answer>(&args.question).await? {
        mcp::server::Elicitation::Accepted(Answer { yes: true }) => Ok("the user said yes".into()),
        mcp::server::Elicitation::Accepted(Answer { yes: false }) => Ok("the user said no".into()),
        _ => Ok("the user did not answer".into()),
    }
}

async fn announce(args: Announce, cx: RequestContext) -> Result<String, ToolError> {
    let lists = cx.lists().ok_or_else(|| ToolError::new("the server is not serving yet"))?;
    lists.notify_resource_updated(&args.uri);
    Ok(format!("subscribers of {} were told it changed", args.uri))
}

async fn pixel(_args: NoArgs, _cx: RequestContext) -> Result<ContentBlock, ToolError> {
    Ok(ContentBlock::Image(ImageContent {
        data: PIXEL_PNG.into(),
        mime_type: "image/png".into(),
        annotations: None,
        meta: None,
    }))
}

async fn counter(args: Counter, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("the counter is at {}", args.start))
}

async fn counter_app(_req: ResourceRequest, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(COUNTER_APP.to_owned())
}

async fn about(_req: ResourceRequest, _cx: RequestContext) -> Result<String, ToolError> {
    Ok("mcp-example: a demonstration server of the mcp-rs project.\n\
        Tools: echo (returns its text), sum (adds two numbers)."
        .to_owned())
}

async fn greeting(req: ResourceRequest<GreetingParams>, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("Hello, {}!", req.params.name))
}

async fn greet(args: Greet, _cx: RequestContext) -> Result<Vec<PromptMessage>, ToolError> {
    Ok(vec![PromptMessage::user(format!("Write a short, warm greeting for {}.", args.name))])
}

async fn now(_args: NoArgs, _cx: RequestContext) -> Result<String, ToolError> {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    Ok(format!("{secs} seconds since the Unix epoch"))
}

fn router() -> Router {
    Router::new()
        .info("mcp-example", env!("CARGO_PKG_VERSION"))
        .description("the smallest useful MCP server (echo, sum, now, wait, a resource, a template, a prompt), for trying hosts and clients against.")
        .instructions("A demonstration server: echo text back, add two numbers.")
        .tool("echo", "Returns the text it is given, unchanged. Call this to test the connection.", echo)
        .tool("sum", "Adds two numbers and returns \"a + b = c\". Call this for any addition.", sum)
        .tool("now", "Returns the server's current time as seconds since the Unix epoch.", now)
        .tool("wait", "Waits the given number of milliseconds, reporting progress, then says so. For trying timeouts and cancellation.", wait)
        .tool_def(
            ToolDef::new("countdown")
                .description("Counts down the given number of milliseconds, reporting progress; runs as a task for clients that follow tasks.")
                .task_support(TaskSupport::Optional),
            countdown,
        )
        .tool("confirm", "Asks the user a yes-or-no question and says what they answered.", confirm)
        .tool(
            "announce",
            "Tells the clients subscribed to a resource that it changed (notifications/resources/updated).",
            announce,
        )
        .tool("pixel", "Returns a small image (a 16x16 PNG). For trying how a client shows images.", pixel)
        .tool_def(
            ToolDef::new("counter")
                .description("Shows a counter starting at the given number; hosts with MCP Apps show it as a page that can add one.")
                .meta(app_meta("ui://example/counter")),
            counter,
        )
        .resource("example://about", "about", about)
        .resource_def(
            Resource {
                uri: "ui://example/counter".into(),
                name: "counter-app".into(),
                description: Some("The page of the counter tool (an MCP App).".into()),
                mime_type: Some("text/html;profile=mcp-app".into()),
                ..Default::default()
            },
            counter_app,
        )
        .resource_template("example://greeting/{name}", "greeting", greeting)
        .prompt("greet", "Asks the model for a short greeting of someone.", greet)
        .complete_prompt_argument("greet", "name", |typed: &str, _: &_| names_starting(typed))
        .complete_resource_argument("example://greeting/{name}", "name", |typed: &str, _: &_| names_starting(typed))
}

/// The names completion offers for `typed` (the greet prompt's and the greeting template's).
fn names_starting(typed: &str) -> Vec<String> {
    ["Ada", "Alan", "Grace", "Linus"]
        .iter()
        .filter(|n| n.to_lowercase().starts_with(&typed.to_lowercase()))
        .map(|n| n.to_string())
        .collect()
}

/// A tool's `_meta` naming the `ui://` page that shows its results.
fn app_meta(uri: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut meta = serde_json::Map::new();
    meta.insert("ui".into(), serde_json::json!({"resourceUri": uri}));
    meta
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let router = router();
    match mcp::serve(router).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-example: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
