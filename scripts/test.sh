#!/usr/bin/env bash
# The project's test command: everything a fresh machine needs, then every test.
#
#   bash scripts/test.sh            # unit, integration, end-to-end tests, conformance suite
#   MCP_FUZZ_SECONDS=60 bash ...    # also fuzz the decoder and the router for 60 s each, and
#                                   # every cargo-fuzz target for MCP_FUZZ_TARGET_SECONDS (10)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*" >&2; }

command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)" >&2; exit 2; }

# Debian packages the tests drive for real: a terminal multiplexer for the consent and form tests,
# PostgreSQL for crm-mcp, Redis and nginx for the multi-node tests (each test starts its own
# server on a free port, nothing on disk), chromium for the inspector's browser tests.
need_packages() {
    local missing=()
    for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]} (Debian packages)"
    local sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq >&2 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}
need_packages tmux tinyproxy curl postgresql postgresql-contrib redis-server nginx chromium python3-venv

# The real authorization server the OAuth tests start (npm oidc-provider, pinned by its lockfile).
fixture=tests/fixtures/oidc-as
if [ ! -d "$fixture/node_modules/oidc-provider" ] || [ "$fixture/package-lock.json" -nt "$fixture/node_modules" ]; then
    command -v npm >/dev/null || { echo "npm not found: install Node.js (the OAuth tests need it)" >&2; exit 2; }
    log "installing the test authorization server (npm ci in $fixture)"
    npm ci --prefix "$fixture" --no-audit --no-fund --loglevel=error >&2
fi

# The reference filesystem server, which files-mcp's comparison tests run beside ours.
fixture=tests/fixtures/files-reference
if [ ! -d "$fixture/node_modules/@modelcontextprotocol/server-filesystem" ] || [ "$fixture/package-lock.json" -nt "$fixture/node_modules" ]; then
    log "installing the reference filesystem server (npm ci in $fixture)"
    npm ci --prefix "$fixture" --no-audit --no-fund --loglevel=error >&2
fi

# The Python SDK servers the tests put behind the gateway (MCP_TEST_PY_SDK1, MCP_TEST_PY_SDK2_OTEL)
# and the OTLP receiver's Python (MCP_TEST_OTEL_PY).
CACHE=${INTEROP_CACHE:-/tmp/mcp-interop-cache}
mkdir -p "$CACHE"
# shellcheck source=python-sdks.sh
source scripts/python-sdks.sh

log "cargo test --workspace"
env -u MCP_FUZZ_SECONDS cargo test --workspace --locked

log "mcp-stack feature by feature: clippy, warnings denied, on each feature alone and all together"
bash scripts/features.sh
log "mcp-stack's documentation with every feature (as docs.rs builds it): no warnings"
RUSTDOCFLAGS="--cfg docsrs -D warnings" cargo +nightly doc -p mcp-stack --locked --all-features --no-deps
log "mcp-stack's public API against the listing checked in (crates/mcp/public-api.txt)"
bash scripts/public-api.sh
log "the stdio core keeps its layers and its footprint"
cargo test -p mcp-stack --locked --no-default-features --lib --test architecture
log "OpenTelemetry (feature otel): spans of three processes in one trace, to a real OTLP receiver"
cargo test -p mcp-stack --locked --features otel --lib --test otel
log "OpenTelemetry in the host: a question, its model requests and its tool calls in one trace"
cargo test -p mcp-stack-host --locked --features otel --test otel
log "OpenTelemetry end to end: mcp chat, mcp gateway, our HTTP server and a Python SDK v2 server in one trace"
cargo test -p mcp-stack-cli --locked --features otel --test otel
# Alone, so that cargo gives it only its own features: a stdio server without `jsonschema`,
# whose nested arguments the structural checks judge.
cargo test -p mcp-bench-small-server --locked
# mcp-example as it ships (without `jsonschema`, which the workspace build above unifies in): its
# arguments judged by the flat and structural checks, over a real pipe.
cargo test -p mcp-example --locked --test stdio

log "official conformance suite: mcp-server-conformance (server) and mcp-client-conformance (client)"
bash scripts/conformance.sh

log "interoperability with the official TypeScript and Python SDKs"
bash scripts/interop.sh

log "mcp inspect in headless chromium (Playwright)"
bash scripts/browser.sh

if [ -n "${MCP_FUZZ_SECONDS:-}" ]; then
    log "fuzzing the envelope decoder and the router, ${MCP_FUZZ_SECONDS}s each"
    # --workspace, as above: the same feature unification, so nothing is compiled again.
    cargo test --workspace --locked --test fuzz -- --nocapture
    log "the cargo-fuzz targets (libFuzzer, nightly), ${MCP_FUZZ_TARGET_SECONDS:-10}s each"
    MCP_FUZZ_SECONDS=${MCP_FUZZ_TARGET_SECONDS:-10} bash scripts/fuzz.sh
fi
