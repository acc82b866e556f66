#!/usr/bin/env bash
# Three instances of an MCP server behind nginx on one machine, sharing Redis:
#
#   deploy/cluster/run.sh start DIR SERVER_BINARY PORT [SERVER_ARGS...]
#       Redis on PORT+1 (nothing on disk), nodes on PORT+2..PORT+4, nginx on PORT:
#       clients use http://127.0.0.1:PORT/mcp. Pids go to DIR/*.pid. Prints the URL.
#   deploy/cluster/run.sh stop DIR
#
# Needs redis-server and nginx (Debian: apt-get install redis-server nginx).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

wait_port() { for _ in $(seq 200); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "nothing listens on $1" >&2; return 1; }

start() {
    local dir=$1 server=$2 port=$3; shift 3
    mkdir -p "$dir"/{body,proxy,fastcgi,uwsgi,scgi}
    local redis_port=$((port + 1))
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
        > "$dir/redis.log" 2>&1 &
    echo $! > "$dir/redis.pid"
    wait_port "$redis_port"
    for i in 1 2 3; do
        "$server" --http "127.0.0.1:$((port + 1 + i))" --store "redis://127.0.0.1:$redis_port" "$@" \
            > "$dir/node$i.log" 2>&1 &
        echo $! > "$dir/node$i.pid"
    done
    for i in 1 2 3; do wait_port $((port + 1 + i)); done
    sed -e "s|@PORT@|$port|g" -e "s|@NODE1@|$((port + 2))|g" -e "s|@NODE2@|$((port + 3))|g" \
        -e "s|@NODE3@|$((port + 4))|g" -e "s|@DIR@|$dir|g" "$here/nginx.conf.in" > "$dir/nginx.conf"
    nginx -p "$dir" -c "$dir/nginx.conf" > "$dir/nginx.log" 2>&1 &
    echo $! > "$dir/nginx.pid.launcher"
    wait_port "$port"
    echo "http://127.0.0.1:$port/mcp"
}

stop() {
    local dir=$1
    for f in "$dir"/nginx.pid "$dir"/nginx.pid.launcher "$dir"/node*.pid "$dir"/redis.pid; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: $0 start DIR SERVER_BINARY PORT [SERVER_ARGS...] | stop DIR" >&2; exit 2 ;;
esac
