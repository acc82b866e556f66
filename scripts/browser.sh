#!/usr/bin/env bash
# `mcp inspect` in a real browser: Debian's chromium, headless, driven by Playwright from PyPI
# (installed in a cache venv when missing). The checks run twice: against mcp-example speaking
# 2026-07-28, then the legacy handshake (--legacy).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${INTEROP_CACHE:-/tmp/mcp-interop-cache}
PLAYWRIGHT=${PLAYWRIGHT_VERSION:-1.49.1}
venv="$CACHE/playwright-$PLAYWRIGHT"
if ! "$venv/bin/python" -c 'import playwright' 2>/dev/null; then
    mkdir -p "$CACHE"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "playwright==$PLAYWRIGHT" >&2
fi
# axe-core from npm: the accessibility audit the checks inject into the page.
AXE=${AXE_VERSION:-4.14.1}
if [ ! -f "$CACHE/axe-$AXE/node_modules/axe-core/axe.min.js" ]; then
    npm install --prefix "$CACHE/axe-$AXE" --no-audit --no-fund --loglevel=error "axe-core@$AXE" >&2
fi
export AXE_JS="$CACHE/axe-$AXE/node_modules/axe-core/axe.min.js"
# Screenshots of every tab, for a person to look at.
export MCP_SCREENSHOTS=${MCP_SCREENSHOTS:-target/browser-screenshots}
chromium=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$chromium" ] && [ -x "$chromium" ] || { echo "browser tests: chromium not found (apt-get install chromium)" >&2; exit 1; }

# The package set and features of interop.sh and conformance.sh: nothing is compiled again.
cargo build --locked -q -p mcp-stack-cli -p mcp-example -p paypedia -p mcp-server-conformance \
    --features paypedia/tls,paypedia/auth,paypedia/redis,paypedia/sqlite
status=0
timeout 300 "$venv/bin/python" tests/browser/inspector.py ./target/debug/mcp ./target/debug/mcp-example ./target/debug/mcp-server-conformance "$chromium" || status=1
MCP_INSPECT_LEGACY=1 timeout 300 "$venv/bin/python" tests/browser/inspector.py ./target/debug/mcp ./target/debug/mcp-example ./target/debug/mcp-server-conformance "$chromium" || status=1
exit $status
