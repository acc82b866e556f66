#!/usr/bin/env bash
# Fuzzing that follows coverage: the cargo-fuzz targets in fuzz/ (libFuzzer, on the nightly
# toolchain; the project's own build stays on stable and never sees fuzz/).
#
#   bash scripts/fuzz.sh                     # every target, MCP_FUZZ_SECONDS each (default 60)
#   bash scripts/fuzz.sh http_post 3600      # one target, for an hour
#   MCP_FUZZ_JOBS=4 bash scripts/fuzz.sh ... # N processes for each target (default 1)
#
# Each target starts from its seeds (fuzz/seeds/TARGET, inputs taken from the tests, kept in the
# repository) and from what it found before (fuzz/corpus/TARGET, not kept). A crash, a timeout
# (10 s) or an input that takes 2 GiB stops the run: libFuzzer saves it in fuzz/artifacts/TARGET
# and prints how to run it again. Figures per target (executions, coverage) are in
# target/fuzz/logs/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${MCP_FUZZ_SECONDS:-60}
jobs=${MCP_FUZZ_JOBS:-1}
only=${1:-}
[ $# -ge 2 ] && seconds=$2

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "== installing the nightly toolchain (rustup), which cargo-fuzz needs" >&2
    rustup toolchain install nightly --profile minimal >&2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz (crates.io)" >&2
    cargo install cargo-fuzz --locked >&2
fi

# No sanitizer: the code is safe Rust (unsafe_code is denied), and without ASan every execution
# is several times faster. Debug assertions on, so that an overflow is a crash.
build=(+nightly fuzz build --sanitizer none --debug-assertions --target-dir target/fuzz)
run=(+nightly fuzz run --sanitizer none --debug-assertions --target-dir target/fuzz)

targets=$(cargo +nightly fuzz list)
if [ -n "$only" ]; then
    grep -qx "$only" <<<"$targets" || { echo "no fuzz target $only; there are: $(echo $targets)" >&2; exit 2; }
    targets=$only
fi

echo "== building the fuzz targets" >&2
cargo "${build[@]}" $([ -n "$only" ] && echo "$only")

mkdir -p target/fuzz/logs
for target in $targets; do
    mkdir -p "fuzz/corpus/$target"
    log="target/fuzz/logs/$target.log"
    echo "== fuzzing $target for ${seconds}s (${jobs} job(s))" >&2
    parallel=()
    [ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs") # else one process, one core
    status=0
    cargo "${run[@]}" "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "${parallel[@]}" >"$log" 2>&1 || status=$?
    # The last status line: executions, coverage (cov: edges, ft: features), corpus.
    grep -E '^#[0-9]+' "$log" | tail -1 >&2 || true
    grep -E 'stat::number_of_executed_units' "$log" | tail -1 >&2 || true
    if [ "$status" -ne 0 ]; then
        tail -40 "$log" >&2
        echo "== $target failed: see $log and fuzz/artifacts/$target" >&2
        exit "$status"
    fi
done
