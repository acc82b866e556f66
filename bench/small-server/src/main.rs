//! `small-server`: a stdio server as the README's "Writing a server" shows it, on `mcp-stack`
//! with default features off (no command line, HTTP, TLS, OAuth or client). `bench-stdio` measures
//! it beside `mcp-example` (which carries every transport) and the no-framework floor.
//! `small-server --library-features` prints the library's features it was built with, on stderr
//! (stdout is the protocol's).

use mcp::server::{RequestContext, Router, ToolError};
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

/// A point of `plot`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Point {
    /// Across.
    x: f64,
    /// Up.
    y: f64,
}

/// Arguments of `plot`: nested, so checked by the general (or, built without `jsonschema`, the
/// structural) schema checks rather than the flat ones.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Plot {
    /// The points, in order.
    points: Vec<Point>,
}

async fn plot(args: Plot, _cx: RequestContext) -> Result<String, ToolError> {
    let lengths: f64 = args.points.windows(2).map(|w| (w[1].x - w[0].x).hypot(w[1].y - w[0].y)).sum();
    Ok(format!("{} points, {lengths} long", args.points.len()))
}

async fn echo(args: Echo, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(args.text)
}

async fn sum(args: Sum, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("{} + {} = {}", args.a, args.b, args.a + args.b))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("--library-features") {
        // For `bench-stdio`, which measures this server only as built on its own.
        eprintln!("{}", mcp::FEATURES.join(","));
        return Ok(());
    }
    let router = Router::new()
        .info("small-server", env!("CARGO_PKG_VERSION"))
        .tool("echo", "Returns the text it is given, unchanged.", echo)
        .tool("sum", "Adds two numbers and returns \"a + b = c\".", sum)
        .tool("plot", "Says how many points a line has and how long it is.", plot);
    mcp::serve(router).await
}
