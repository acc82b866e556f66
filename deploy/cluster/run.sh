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

# Five consecutive ports nothing listens on and nothing is bound to, outside the range the
# kernel hands out for outgoing connections when possible.
free_base() {
    python3 - <<'PY'
import random, socket
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
low, high = (int(n) for n in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
ranges = [r for r in ((20000, low - 5), (high + 1, 65530)) if r[1] - r[0] > 100] or [(low, high - 5)]
for _ in range(200):
    first, last = random.choice(ranges)
    base = random.randint(first, last)
    if all(free(base + i) for i in range(5)):
        print(base)
        break
else:
    raise SystemExit("no five free ports in a row")
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
    [ "$port" = 0 ] && port=$(free_base)
    mkdir -p "$dir"/{body,proxy,fastcgi,uwsgi,scgi}
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
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: $0 start DIR SERVER_BINARY PORT [SERVER_ARGS...] | stop DIR" >&2; exit 2 ;;
esac
