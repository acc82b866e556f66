//! `mcp-example`: the smallest useful MCP server, for trying hosts and clients against.
//!
//! Tools `echo {text}`, `sum {a, b}`, `now`, `wait {ms}`, `countdown {ms}` (a task when the client
//! follows tasks), `confirm {question}` (asks the user) and `announce {uri}` (tells subscribers a
//! resource changed), a static resource, a resource template and a prompt.
//! Serves stdio by default, Streamable HTTP with `--http ADDR`.

use mcp::server::{NoArgs, RequestContext, ResourceRequest, Router, ToolDef, ToolError};
use mcp::tasks::TaskSupport;
use mcp::types::prompts::PromptMessage;
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

/// The router being served, for tools that announce changes.
static ROUTER: std::sync::OnceLock<Router> = std::sync::OnceLock::new();

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
    let steps = (args.ms / 100).max(1);
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

async fn announce(args: Announce, _cx: RequestContext) -> Result<String, ToolError> {
    let router = ROUTER.get().ok_or_else(|| ToolError::new("the server is not serving yet"))?;
    router.notify_resource_updated(&args.uri);
    Ok(format!("subscribers of {} were told it changed", args.uri))
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
        .resource("example://about", "about", about)
        .resource_template("example://greeting/{name}", "greeting", greeting)
        .prompt("greet", "Asks the model for a short greeting of someone.", greet)
        .complete_prompt_argument("greet", "name", |typed: &str, _: &_| {
            ["Ada", "Alan", "Grace", "Linus"]
                .iter()
                .filter(|n| n.to_lowercase().starts_with(&typed.to_lowercase()))
                .map(|n| n.to_string())
                .collect()
        })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let router = router();
    let _ = ROUTER.set(router.clone());
    match mcp::serve(router).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-example: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
