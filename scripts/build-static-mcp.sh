#!/usr/bin/env bash
# Builds `mcp` linked statically (glibc's static-pie): no dynamic loader, no libgcc_s, and a
# process image with fewer mappings, so it starts about 0.25 ms sooner on the machine this was
# measured on, and runs on any x86_64 Linux whatever its glibc. Host names still resolve through
# /etc/hosts and DNS (built into static glibc); NSS modules such as mDNS or LDAP are not loaded.
#
#   bash scripts/build-static-mcp.sh     # -> target/x86_64-unknown-linux-gnu/dist/mcp
#
# Built with the `dist` profile (fat LTO, one codegen unit), as published binaries are.
#
# An explicit --target keeps the flag off build scripts and proc-macros, which cannot be static.
set -euo pipefail
cd "$(dirname "$0")/.."
triple=x86_64-unknown-linux-gnu
RUSTFLAGS="-C target-feature=+crt-static" cargo build --profile dist --locked -p mcp-stack-cli --bin mcp --target "$triple"
echo "target/$triple/dist/mcp"
