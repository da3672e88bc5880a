#!/usr/bin/env bash
# A throwaway PostgreSQL server for sqlweave's tests and for trying sqlweave on a live database.
#
#   scripts/postgres.sh start            install PostgreSQL if missing, create the cluster, start it; print its URL
#   scripts/postgres.sh load NAME FILE   (re)create database NAME from a SQLite/DuckDB file or data files (a CSV,
#                                        Parquet, JSON or Excel file or a folder of them; sqlweave's loader), or
#                                        from a .sql dump (psql -f)
#   scripts/postgres.sh url [NAME]       the SQLAlchemy URL of the server (or of database NAME)
#   scripts/postgres.sh status           running or not
#   scripts/postgres.sh stop             stop the server and remove its folder
#
# The cluster lives in $SQLWEAVE_PG_DIR (default: .pg/ in the repository), listens on 127.0.0.1 only, on a free
# port (or $SQLWEAVE_PG_PORT), with a socket in the same folder, and trusts connections from this machine only
# (superuser "postgres", no password). It is tuned for tests: no fsync. Never point it at data you want to keep.
# Run as root, the server runs as an unprivileged system user (postgres, or sqlweave-pg when that does not
# exist), and a missing PostgreSQL is installed from Debian's packages. Every command is idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PG_DIR="${SQLWEAVE_PG_DIR:-$ROOT/.pg}"
PY="${SQLWEAVE_PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi

die() { echo "postgres.sh: $*" >&2; exit 1; }

find_bin() {
  if [ -n "${SQLWEAVE_PG_BIN:-}" ] && [ -x "$SQLWEAVE_PG_BIN/initdb" ]; then echo "$SQLWEAVE_PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"; return
  fi
}

install_pg() {
  if [ "$(id -u)" != 0 ]; then
    die "PostgreSQL is not installed and this is not root, so it cannot be installed here.
Install it (Debian/Ubuntu: sudo apt-get install -y postgresql), or set SQLWEAVE_PG_BIN to the folder holding initdb and pg_ctl."
  fi
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and there is no apt-get to install it with; set SQLWEAVE_PG_BIN."
  echo "postgres.sh: installing PostgreSQL from Debian's packages ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q postgresql >&2; then
    apt-get update -q >&2 || true
    apt-get install -y -q postgresql >&2 || die "apt-get install postgresql failed (see above)."
  fi
}

BIN="$(find_bin)"
need_bin() {
  if [ -z "$BIN" ]; then install_pg; BIN="$(find_bin)"; fi
  [ -n "$BIN" ] || die "PostgreSQL's initdb and pg_ctl were not found after installing; set SQLWEAVE_PG_BIN."
}
psql_bin() { if [ -n "$BIN" ] && [ -x "$BIN/psql" ]; then echo "$BIN/psql"; else command -v psql || die "psql not found"; fi; }

# The server never runs as root: pick (or create) an unprivileged system user.
RUN_USER=""
pick_user() {
  [ "$(id -u)" = 0 ] || return 0
  if id -u postgres >/dev/null 2>&1; then RUN_USER=postgres
  else
    id -u sqlweave-pg >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sqlweave-pg || die "cannot create the system user sqlweave-pg"
    RUN_USER=sqlweave-pg
  fi
}
as_pg() {  # run a server command as the server's user, from a folder it can read
  if [ -n "$RUN_USER" ]; then (cd "$PG_DIR" && runuser -u "$RUN_USER" -- "$@"); else (cd "$PG_DIR" && "$@"); fi
}

port() { cat "$PG_DIR/port" 2>/dev/null || true; }
running() { [ -f "$PG_DIR/data/PG_VERSION" ] && [ -n "$BIN" ] && as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; }
url() { echo "postgresql+psycopg://postgres@127.0.0.1:$(port)/${1:-postgres}"; }
free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null \
    || python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
sql() {  # sql DB STATEMENT...: run statements as the superuser
  local db="$1"; shift
  PGOPTIONS="-c client_min_messages=warning" "$(psql_bin)" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(port)" -U postgres -d "$db" "$@"
}

cmd_start() {
  need_bin
  pick_user
  if running; then url; return 0; fi
  if [ -d "$PG_DIR" ] && [ ! -f "$PG_DIR/.sqlweave-pg" ] && [ -n "$(ls -A "$PG_DIR")" ]; then
    die "$PG_DIR exists and is not a sqlweave PostgreSQL folder; choose another SQLWEAVE_PG_DIR."
  fi
  mkdir -p "$PG_DIR"
  touch "$PG_DIR/.sqlweave-pg"
  if [ -n "$RUN_USER" ]; then chown "$RUN_USER" "$PG_DIR"; fi
  if ! as_pg test -w "$PG_DIR"; then
    die "the server's user ${RUN_USER:-$(id -un)} cannot write to $PG_DIR (a parent folder is private?); set SQLWEAVE_PG_DIR to a folder it can reach, e.g. under /tmp."
  fi
  if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
    rm -rf "$PG_DIR/data"
    as_pg "$BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$PG_DIR/initdb.log" 2>&1 \
      || { cat "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
    # Trust connections from this machine only: the socket and loopback, nothing else.
    printf '%s\n' "local all all trust" "host all all 127.0.0.1/32 trust" "host all all ::1/128 trust" \
      | as_pg tee "$PG_DIR/data/pg_hba.conf" >/dev/null
    local sockets="$PG_DIR"
    [ ${#PG_DIR} -le 90 ] || sockets=""  # a socket path must fit in 107 bytes: TCP only then
    printf '%s\n' "listen_addresses = '127.0.0.1'" "unix_socket_directories = '$sockets'" \
      "fsync = off" "synchronous_commit = off" "full_page_writes = off" "max_connections = 40" \
      "shared_buffers = 64MB" "log_min_messages = warning" "timezone = 'UTC'" \
      | as_pg tee -a "$PG_DIR/data/postgresql.conf" >/dev/null
  fi
  local p="${SQLWEAVE_PG_PORT:-$(free_port)}"
  echo "$p" >"$PG_DIR/port"
  as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -o "-p $p" -w -t 60 start >/dev/null \
    || { tail -n 20 "$PG_DIR/server.log" >&2 || true; die "the server did not start (log: $PG_DIR/server.log)"; }
  url
}

cmd_stop() {
  pick_user
  [ -d "$PG_DIR" ] || return 0
  [ -f "$PG_DIR/.sqlweave-pg" ] || die "$PG_DIR is not a sqlweave PostgreSQL folder; not removing it."
  if running; then as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 60 stop >/dev/null; fi
  rm -rf "$PG_DIR"
}

cmd_status() {
  pick_user
  if running; then echo "running: $(url)"; else echo "not running"; return 3; fi
}

cmd_load() {
  [ $# -eq 2 ] || die "usage: scripts/postgres.sh load NAME FILE"
  local name="$1" file="$2"
  [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || die "database name must be lower-case letters, digits and _: $name"
  [ -f "$file" ] || [ -d "$file" ] || die "no such file or folder: $file"
  pick_user
  running || cmd_start >/dev/null
  sql postgres -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" -c "CREATE DATABASE \"$name\""
  case "$file" in
    *.sql) sql "$name" -f "$file" >/dev/null ;;
    *) "$PY" -m sqlweave.loading "$file" "$(url "$name")" >&2 ;;
  esac
  url "$name"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  url) pick_user; running || die "not running: scripts/postgres.sh start"; url "${2:-}" ;;
  load) shift; cmd_load "$@" ;;
  *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
