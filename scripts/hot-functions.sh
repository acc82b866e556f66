#!/usr/bin/env bash
# Writes crates/mcp-build/src/hot-functions.txt: the functions a stdio MCP server runs when a host
# starts it and calls it, which `mcp_build::link_binaries` lays out together at the start of the
# binary's code (see crates/mcp-build/README.md).
#
#   bash scripts/hot-functions.sh       # needs valgrind (Debian: apt-get install valgrind)
#
# How: `mcp-example` (every transport and option built in, as servers of ours are) is run under
# callgrind for a host's session on stdio pipes: initialize, the three lists, 2,000 `echo` calls
# and one of each other kind a host sends (another tool, a resource read, a prompt, ping). It is
# built four ways, since what the optimizer inlines, and so which functions exist at all,
# changes with the profile and with the features other packages of a build unify: `dist` and
# `release`, each alone and beside `mcp-bench` (as the benchmarks build it). Every function that
# ran in any of them becomes a pattern: its mangled name without the hash that `rustc` appends,
# so that the list still names the same functions after a rebuild, in another profile, or in
# another binary. A pattern that matches more than 256 KiB of code (a generic function whose
# instances are mostly cold) is left out: where the one hot instance stands it costs what one
# fault maps (a 64 KiB window, or a large folio of the page cache: up to 256 KiB were seen),
# while its cold twins together would cost more. The server's own functions (`mcp_example::`)
# are left out too: the list is the library's and its dependencies' (and `main`, which rustc
# writes for every binary).
#
# Run it again when the stdio path changes much: a stale list costs only memory, never
# correctness (a pattern that matches nothing is ignored by the linker).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build() { # NAME PROFILE CARGO-ARGS...
    local name=$1 profile=$2
    shift 2
    # Profiled as the linker lays it out without the list: valgrind attributes code outside
    # `.text` to no object, and the list must not depend on the list it replaces.
    MCP_HOT_LAYOUT=0 cargo build --profile "$profile" --locked "$@" >&2
    mkdir -p "$work/$name"
    cp "target/$profile/mcp-example" "$work/$name/server"
}
build dist-alone dist -p mcp-example --bin mcp-example
build dist-bench dist -p mcp-example -p mcp-bench --bin mcp-example --bin bench-stdio --bin stdio-floor
build release-alone release -p mcp-example --bin mcp-example
build release-bench release -p mcp-example -p mcp-bench --bin mcp-example --bin bench-stdio --bin stdio-floor

python3 - "$work/session.jsonl" <<'PY'
import json, sys
def req(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m)
lines = [
    req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    req(1, "tools/list"), req(2, "resources/list"), req(3, "prompts/list"), req(4, "ping"),
    req(5, "tools/call", {"name": "sum", "arguments": {"a": 1, "b": 2}}),
    req(6, "resources/read", {"uri": "example://about"}),
    req(7, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
]
lines += [req(10 + i, "tools/call", {"name": "echo", "arguments": {"text": "hello"}}) for i in range(2000)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY

for dir in "$work"/*/; do
    # Pipes, as a host gives a server: the session is read as it arrives, answers go out as made.
    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="${dir}callgrind.out" "${dir}server" \
        < <(cat "$work/session.jsonl") 2>"${dir}valgrind.log" | cat >"${dir}answers.jsonl"
    answers=$(wc -l <"${dir}answers.jsonl")
    [ "$answers" -eq 2008 ] || { echo "$dir: the server answered $answers of 2008 requests" >&2; exit 1; }
    nm -S --defined-only "${dir}server" >"${dir}symbols.txt"
done

python3 - crates/mcp-build/src/hot-functions.txt "$work"/*/ <<'PY'
import bisect, collections, re, sys
out, dirs = sys.argv[1], sys.argv[2:]
CAP = 256 * 1024


def pattern(name):
    """The section name's pattern: the mangled name without what changes from build to build."""
    # What LLVM appends to a renamed local or cloned function (`.llvm.123`, `.7320`) varies.
    name, suffixed = re.subn(r"(\.llvm)?\.\d+$", "", name)
    if name.startswith("_ZN"):  # legacy mangling: the hash is the last path element
        return re.sub(r"17h[0-9a-f]{16}E$", "17h*", name)
    if name.startswith("_R"):  # v0 mangling (the standard library): crate disambiguators vary
        name = re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", name)
    return name + "*" if suffixed else name


def executed(profile, binary):
    """(address, function) of every instruction callgrind saw run in the binary's own file."""
    seen, names, objects = set(), {}, {}
    in_binary, function, last, after_call = False, None, 0, False
    for line in open(profile):
        if line.startswith(("ob=", "cob=", "fn=", "cfn=")):
            key, _, rest = line.strip().partition("=")
            number, _, name = rest.partition(" ")
            table = objects if key.endswith("ob") else names
            if name:
                table[number] = name
            if key == "ob":
                in_binary = objects.get(number) == binary
            elif key == "fn":
                function = names.get(number)
        elif line.startswith("calls="):
            after_call = True  # the next cost line is the call's, not an instruction of this function
        elif line[:1] in "0123456789+-*" and line.strip():
            token = line.split()[0]
            if token.startswith("0x"):
                last = int(token, 16)
            elif token[0] in "+-":
                last += int(token)
            if after_call:
                after_call = False
            elif in_binary:
                seen.add((last, function))
    return seen


def hot_patterns(directory):
    """The patterns of the functions that ran in one build, and the code each pattern matches."""
    ran = executed(directory + "callgrind.out", directory + "server")
    functions = []
    for line in open(directory + "symbols.txt"):
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            functions.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    functions.sort()
    starts = [f[0] for f in functions]
    # Where callgrind loaded the file: `main`'s lowest address seen against its address in the file.
    main_at = next(f[0] for f in functions if f[2] == "main")
    bias = min(a for a, fn in ran if fn == "main") - main_at
    hot = set()
    for address, _ in ran:
        i = bisect.bisect_right(starts, address - bias) - 1
        if i >= 0 and functions[i][0] <= address - bias < functions[i][0] + functions[i][1]:
            hot.add(i)
    size_of = collections.Counter()
    for _, size, name in functions:
        size_of[pattern(name)] += size
    return {pattern(functions[i][2]) for i in hot}, size_of, sum(functions[i][1] for i in hot)


kept, left_out = set(), set()
for d in dirs:
    patterns, size_of, hot_bytes = hot_patterns(d)
    library = {p for p in patterns if "11mcp_example" not in p and p != "_start"}
    small = {p for p in library if size_of[p] <= CAP}
    kept |= small
    left_out |= library - small
    print(f"{d}: {hot_bytes} bytes of code ran; {len(small)} patterns kept", file=sys.stderr)
left_out -= kept
with open(out, "w") as f:
    f.write("# Written by scripts/hot-functions.sh: the functions a stdio MCP server runs for a host's\n")
    f.write("# session, as patterns of their mangled names (a glob stands for the hash). Run it again\n")
    f.write("# rather than editing by hand.\n")
    for p in sorted(kept):
        f.write(p + "\n")
print(f"{len(kept)} patterns kept, {len(left_out)} left out (each matches more than {CAP} bytes)", file=sys.stderr)
PY
echo "crates/mcp-build/src/hot-functions.txt" >&2
