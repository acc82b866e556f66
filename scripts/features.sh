#!/usr/bin/env bash
# mcp-stack feature by feature: each feature alone (and none, and all together) compiles and
# passes clippy with warnings denied, so that code under `cfg(not(feature = ...))` is linted too.
#
#   bash scripts/features.sh              # every feature
#   bash scripts/features.sh client tls   # only these
set -euo pipefail
cd "$(dirname "$0")/.."
features=("$@")
if [ ${#features[@]} -eq 0 ]; then
    # Every feature the manifest lists, read from it (so a new one is never forgotten), but
    # `default` and the hidden `fuzzing`.
    mapfile -t features < <(sed -n '/^\[features\]/,/^\[/p' crates/mcp/Cargo.toml |
        sed -n 's/^\([a-z][a-z0-9-]*\) = .*/\1/p' | grep -v -x -e default -e fuzzing)
    # And the set the cargo-fuzz crate builds the library with, read from fuzz/Cargo.toml (its
    # line `mcp = { package = "mcp-stack", ... features = [...] }`): cargo unifies more features
    # into the fuzz build (the servers it fuzzes ask for theirs), but this set is linted alone.
    fuzz=$(sed -n 's/^mcp = {.*package = "mcp-stack".*features = \[\(.*\)\].*/\1/p' fuzz/Cargo.toml | tr -d ' "')
    if [ -z "$fuzz" ]; then
        echo "scripts/features.sh: cannot read the features fuzz/Cargo.toml asks of mcp-stack" >&2
        exit 1
    fi
    features=("" "${features[@]}" "$fuzz" "ALL")
fi
for feature in "${features[@]}"; do
    case "$feature" in
        "") set -- --no-default-features; label="no feature" ;;
        ALL) set -- --all-features; label="all features" ;;
        *) set -- --no-default-features --features "$feature"; label="$feature" ;;
    esac
    printf '== clippy -p mcp-stack, %s\n' "$label" >&2
    cargo clippy -p mcp-stack --locked --lib "$@" -- -D warnings
done
