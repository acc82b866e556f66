#!/usr/bin/env bash
# mcp-stack's public API against the listing checked in (crates/mcp/public-api.txt): every
# change of the surface shows in a diff. rustdoc's JSON needs the nightly toolchain.
#
#   bash scripts/public-api.sh           # compare; exits 1 with the diff when they differ
#   bash scripts/public-api.sh --bless   # write the listing anew (then review and commit it)
set -euo pipefail
cd "$(dirname "$0")/.."
listing=crates/mcp/public-api.txt
RUSTDOCFLAGS="--cfg docsrs" cargo +nightly rustdoc -q -p mcp-stack --locked --all-features --lib \
    -- -Z unstable-options --output-format json
json="${CARGO_TARGET_DIR:-target}/doc/mcp.json"
if [ "${1:-}" = "--bless" ]; then
    python3 scripts/public_api.py "$json" > "$listing"
    echo "wrote $listing ($(wc -l < "$listing") items)" >&2
    exit 0
fi
if ! diff -u "$listing" <(python3 scripts/public_api.py "$json"); then
    echo "mcp-stack's public API changed (above: - the listing, + the code). If the change is meant," >&2
    echo "run \`bash scripts/public-api.sh --bless\` and commit $listing with it." >&2
    exit 1
fi
echo "mcp-stack's public API matches $listing ($(wc -l < "$listing") items)" >&2
