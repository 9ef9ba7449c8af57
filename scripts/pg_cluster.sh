#!/usr/bin/env bash
# scripts/pg_cluster.sh — a throw-away PostgreSQL server for tests and benchmarks: Debian's
# `postgresql` binaries, a cluster initialised in a temporary directory as an unprivileged user
# (created, with no login, when this runs as root: PostgreSQL refuses to run as root), listening
# on loopback and a unix socket at a free port, trusting local connections.
#   scripts/pg_cluster.sh start DIR   initialises DIR (once) and starts the server; prints the
#                                     superuser DSN (postgresql://…) on stdout
#   scripts/pg_cluster.sh restart DIR / stop DIR   (start DIR again starts it on the same port)
set -euo pipefail
cmd=${1:?start|restart|stop DIR}
dir=${2:?DIR}
bin=${FATHOM_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bin/initdb" ] || { echo "pg_cluster: no PostgreSQL server (apt-get install postgresql)" >&2; exit 1; }
user=${FATHOM_PG_USER:-fathom-pg}

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
  if [ "$(id -u)" -eq 0 ] && ! id "$user" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  fi
  if [ ! -d "$dir/data" ]; then
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown "$user" "$dir"
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' > "$dir/port"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1
  fi
  port=$(cat "$dir/port")
  # fsync off: a test cluster is thrown away, and on a busy CI disk fsync dominates.
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" \
    start >/dev/null
  echo "postgresql://postgres@127.0.0.1:$port/postgres"
  ;;
restart)
  as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m fast restart >/dev/null
  ;;
stop)
  [ -d "$dir/data" ] && as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >/dev/null || true
  ;;
*)
  echo "pg_cluster: unknown command $cmd" >&2; exit 2
  ;;
esac
