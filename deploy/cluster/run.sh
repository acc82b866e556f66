#!/usr/bin/env bash
# Three instances of an MCP server behind nginx on one machine, sharing Redis:
#
#   deploy/cluster/run.sh start DIR SERVER_BINARY PORT [SERVER_ARGS...]
#       Redis on PORT+1 (nothing on disk), nodes on PORT+2..PORT+4, nginx on PORT:
#       clients use http://127.0.0.1:PORT/mcp. PORT 0 picks five free ports in a row.
#       Pids go to DIR/*.pid, logs to DIR/*.log. Prints the URL. If a part does not come up,
#       says which, prints its log, stops the others and exits 1.
#   deploy/cluster/run.sh stop DIR
#
# Needs redis-server and nginx (Debian: apt-get install redis-server nginx).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

listening() { (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# `ports pick`: five consecutive free ports, outside the range the kernel hands out for
# outgoing connections when it can. `ports check BASE`: fails unless BASE..BASE+4 are free.
ports() {
    python3 - "$@" <<'PY'
import random, socket, sys
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
def five_free(base):
    return 0 < base and base + 4 <= 65535 and all(free(base + i) for i in range(5))
if sys.argv[1] == "check":
    base = int(sys.argv[2])
    if not five_free(base):
        sys.exit(f"cluster: ports {base}..{base + 4} are not all free (nginx, Redis and three nodes need five in a row); pass another PORT, or 0")
    sys.exit(0)
low, high = (int(n) for n in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
ranges = [r for r in ((20000, low - 5), (high + 1, 65530)) if r[1] - r[0] > 100] or [(1024, 65530)]
for _ in range(500):
    first, last = random.choice(ranges)
    base = random.randint(first, last)
    if five_free(base):
        print(base)
        break
else:
    sys.exit("cluster: found no five free ports in a row")
PY
}

# Wait (up to 30 s) until PART, started as pid file DIR/PART.pid, listens on PORT. If it exits
# or never listens: say so with its log, stop everything started so far, fail.
wait_for() {
    local dir=$1 part=$2 port=$3
    for _ in $(seq 300); do
        listening "$port" && return 0
        kill -0 "$(cat "$dir/$part.pid")" 2>/dev/null || break
        sleep 0.1
    done
    echo "cluster: $part does not listen on $port; its log ($dir/$part.log):" >&2
    tail -n 20 "$dir/$part.log" >&2 || true
    [ -f "$dir/nginx-error.log" ] && tail -n 20 "$dir/nginx-error.log" >&2
    stop "$dir"
    exit 1
}

start() {
    local dir=$1 server=$2 port=$3; shift 3
    [[ "$port" =~ ^[0-9]+$ ]] || { echo "cluster: PORT must be a number (0 picks free ports), not '$port'" >&2; exit 2; }
    [ -x "$server" ] || { echo "cluster: $server is not an executable" >&2; exit 2; }
    mkdir -p "$dir"/{body,proxy,fastcgi,uwsgi,scgi}
    dir=$(cd "$dir" && pwd)
    for f in "$dir"/*.pid; do
        if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
            echo "cluster: $dir is running already (stop it first: $0 stop $dir)" >&2
            exit 1
        fi
    done
    if [ "$port" = 0 ]; then port=$(ports pick); else ports check "$port"; fi
    local redis_port=$((port + 1))
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
        > "$dir/redis.log" 2>&1 &
    echo $! > "$dir/redis.pid"
    wait_for "$dir" redis "$redis_port"
    for i in 1 2 3; do
        "$server" --http "127.0.0.1:$((port + 1 + i))" --store "redis://127.0.0.1:$redis_port" "$@" \
            > "$dir/node$i.log" 2>&1 &
        echo $! > "$dir/node$i.pid"
    done
    for i in 1 2 3; do wait_for "$dir" "node$i" $((port + 1 + i)); done
    sed -e "s|@PORT@|$port|g" -e "s|@NODE1@|$((port + 2))|g" -e "s|@NODE2@|$((port + 3))|g" \
        -e "s|@NODE3@|$((port + 4))|g" -e "s|@DIR@|$dir|g" "$here/nginx.conf.in" > "$dir/nginx.conf"
    nginx -p "$dir" -c "$dir/nginx.conf" > "$dir/nginx.log" 2>&1 &
    echo $! > "$dir/nginx.pid" # with `daemon off` this is the master, which writes the same pid
    wait_for "$dir" nginx "$port"
    echo "http://127.0.0.1:$port/mcp"
}

stop() {
    local dir=$1
    for f in "$dir"/nginx.pid "$dir"/node*.pid "$dir"/redis.pid; do
        [ -f "$f" ] && { kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; }
    done
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: $0 start DIR SERVER_BINARY PORT [SERVER_ARGS...] | stop DIR" >&2; exit 2 ;;
esac
