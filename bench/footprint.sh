#!/usr/bin/env bash
# The footprint of a small server: the README's one-tool calculator on stdio, written once on our
# library (`mcp-stack`, default features off, as the README's "Writing a server" says) and once on
# rmcp 3.11 (`server`, `macros`, `transport-io`), each built from scratch in release mode in its
# own project and target directory, one after the other. Prints each one's crate count (distinct
# names and versions in `cargo tree -e normal`), whether any crate of its build compiles C (a
# `cc` build dependency), its clean build time, and the ratio ours / rmcp.
#
#   bash bench/footprint.sh            # in a temporary directory, removed afterwards
#   FOOTPRINT_DIR=/tmp/fp bash bench/footprint.sh   # keep the projects there
#
# Downloads happen before the clock starts (`cargo fetch`); the builds are timed alone, so run it
# on a quiet machine. Exit status 1 when ours has more than 100 crates or compiles C.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${FOOTPRINT_DIR:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

write_ours() {
  local dir=$work/ours
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<EOF
[package]
name = "calculator-mcp-stack"
version = "0.1.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
mcp-stack = { path = "$repo/crates/mcp", default-features = false }
schemars = "1"
serde = { version = "1", features = ["derive"] }
tokio = { version = "1", features = ["macros", "rt"] }
EOF
  cat >"$dir/src/main.rs" <<'EOF'
use mcp::server::{RequestContext, Router, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `sum`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sum { a: f64, b: f64 }

async fn sum(args: Sum, _cx: RequestContext) -> Result<String, ToolError> {
    Ok(format!("{} + {} = {}", args.a, args.b, args.a + args.b))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let router = Router::new()
        .info("calculator", "1.0.0")
        .tool("sum", "Adds two numbers. Call this for any addition.", sum);
    mcp::serve(router).await
}
EOF
}

write_rmcp() {
  local dir=$work/rmcp
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<'EOF'
[package]
name = "calculator-rmcp"
version = "0.1.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
rmcp = { version = "=3.11.0", default-features = false, features = ["server", "macros", "transport-io"] }
schemars = "1"
serde = { version = "1", features = ["derive"] }
tokio = { version = "1", features = ["macros", "rt"] }
EOF
  cat >"$dir/src/main.rs" <<'EOF'
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `sum`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sum { a: f64, b: f64 }

#[derive(Clone)]
struct Calculator { tool_router: ToolRouter<Self> }

#[tool_router(router = tool_router)]
impl Calculator {
    /// Adds two numbers. Call this for any addition.
    #[tool(name = "sum")]
    async fn sum(&self, Parameters(Sum { a, b }): Parameters<Sum>) -> String {
        format!("{a} + {b} = {}", a + b)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Calculator {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Calculator { tool_router: Calculator::tool_router() };
    server.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}
EOF
}

crates_of() {
  (cd "$1" && cargo tree -e normal --prefix none | sed 's/ (\*)//; s/ (proc-macro)//' | sort -u | wc -l)
}

compiles_c() {
  if (cd "$1" && cargo tree -e normal,build --prefix none | grep -qE '^cc v'); then echo yes; else echo no; fi
}

build_seconds() {
  local dir=$1
  (cd "$dir" && cargo fetch -q)
  rm -rf "$dir/target"
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --release -q)
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'
}

write_ours
write_rmcp
ours_crates=$(crates_of "$work/ours")
rmcp_crates=$(crates_of "$work/rmcp")
ours_c=$(compiles_c "$work/ours")
rmcp_c=$(compiles_c "$work/rmcp")
ours_s=$(build_seconds "$work/ours")
rmcp_s=$(build_seconds "$work/rmcp")

printf '%-28s %7s %10s %14s\n' "calculator on" crates "compiles C" "clean build s"
printf '%-28s %7s %10s %14.1f\n' "mcp-stack (no defaults)" "$ours_crates" "$ours_c" "$ours_s"
printf '%-28s %7s %10s %14.1f\n' "rmcp 3.11 (server,macros,io)" "$rmcp_crates" "$rmcp_c" "$rmcp_s"
awk -v a="$ours_s" -v b="$rmcp_s" 'BEGIN { printf "build time ratio ours / rmcp: %.2f\n", a / b }'

if [ "$ours_crates" -gt 100 ] || [ "$ours_c" = yes ]; then
  echo "footprint target missed: at most 100 crates and no C" >&2
  exit 1
fi
