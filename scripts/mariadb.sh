#!/usr/bin/env bash
# A throwaway MariaDB server for sqlweave's tests and for trying sqlweave on a live MySQL-family database.
#
#   scripts/mariadb.sh start            install MariaDB if missing, create the data folder, start it; print its URL
#   scripts/mariadb.sh load NAME FILE   (re)create database NAME from a SQLite/DuckDB file or data files (a CSV,
#                                       Parquet, JSON or Excel file or a folder of them; sqlweave's loader), or
#                                       from a .sql dump
#   scripts/mariadb.sh url [NAME]       the SQLAlchemy URL of the server (or of database NAME)
#   scripts/mariadb.sh status           running or not
#   scripts/mariadb.sh stop             stop the server and remove its folder
#
# The server lives in $SQLWEAVE_MARIADB_DIR (default: .mariadb/ in the repository), listens on 127.0.0.1 only, on
# a free port (or $SQLWEAVE_MARIADB_PORT), with a socket in the same folder. Its user "sqlweave" may connect from
# this machine only, with no password. Table names keep their case, as on any MariaDB or MySQL server on Linux.
# It is tuned for tests (no flush at commit). Never point it at data you want to keep. Run as root, the server
# runs as an unprivileged system user (mysql, or sqlweave-db when that does not exist), and a missing MariaDB is
# installed from Debian's packages. Every command is idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DB_DIR="${SQLWEAVE_MARIADB_DIR:-$ROOT/.mariadb}"
PY="${SQLWEAVE_PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi

die() { echo "mariadb.sh: $*" >&2; exit 1; }

find_server() { command -v mariadbd 2>/dev/null || { [ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd; } || true; }

install_mariadb() {
  if [ "$(id -u)" != 0 ]; then
    die "MariaDB is not installed and this is not root, so it cannot be installed here.
Install it (Debian/Ubuntu: sudo apt-get install -y mariadb-server)."
  fi
  command -v apt-get >/dev/null 2>&1 || die "MariaDB is not installed and there is no apt-get to install it with."
  echo "mariadb.sh: installing MariaDB from Debian's packages ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q mariadb-server >&2; then
    apt-get update -q >&2 || true
    apt-get install -y -q mariadb-server >&2 || die "apt-get install mariadb-server failed (see above)."
  fi
}

SERVER="$(find_server)"
need_server() {
  if [ -z "$SERVER" ]; then install_mariadb; SERVER="$(find_server)"; fi
  [ -n "$SERVER" ] || die "mariadbd was not found after installing."
  command -v mariadb-install-db >/dev/null 2>&1 || die "mariadb-install-db was not found."
}

# The server never runs as root: pick (or create) an unprivileged system user.
RUN_USER=""
pick_user() {
  [ "$(id -u)" = 0 ] || return 0
  if id -u mysql >/dev/null 2>&1; then RUN_USER=mysql
  else
    id -u sqlweave-db >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sqlweave-db || die "cannot create the system user sqlweave-db"
    RUN_USER=sqlweave-db
  fi
}
as_db() {  # run a command as the server's user, from a folder it can read
  if [ -n "$RUN_USER" ]; then (cd "$DB_DIR" && runuser -u "$RUN_USER" -- "$@"); else (cd "$DB_DIR" && "$@"); fi
}

port() { cat "$DB_DIR/port" 2>/dev/null || true; }
socket() { echo "$DB_DIR/mysqld.sock"; }
client() {  # client ARGS...: the command-line client as the server's root, over the socket
  local bin; bin="$(command -v mariadb || command -v mysql)" || die "the mariadb client was not found"
  "$bin" --no-defaults --protocol=socket --socket="$(socket)" -u root "$@"
}
running() { [ -S "$(socket)" ] && [ -f "$DB_DIR/server.pid" ] && kill -0 "$(cat "$DB_DIR/server.pid")" 2>/dev/null; }
url() { echo "mysql+pymysql://sqlweave@127.0.0.1:$(port)/${1:-}"; }
free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null \
    || python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

cmd_start() {
  need_server
  pick_user
  if running; then url; return 0; fi
  if [ -d "$DB_DIR" ] && [ ! -f "$DB_DIR/.sqlweave-mariadb" ] && [ -n "$(ls -A "$DB_DIR")" ]; then
    die "$DB_DIR exists and is not a sqlweave MariaDB folder; choose another SQLWEAVE_MARIADB_DIR."
  fi
  [ ${#DB_DIR} -le 90 ] || die "$DB_DIR is too long a path for the server's socket; set SQLWEAVE_MARIADB_DIR to a shorter one."
  mkdir -p "$DB_DIR"
  touch "$DB_DIR/.sqlweave-mariadb"
  if [ -n "$RUN_USER" ]; then chown "$RUN_USER" "$DB_DIR"; fi
  if ! as_db test -w "$DB_DIR"; then
    die "the server's user ${RUN_USER:-$(id -un)} cannot write to $DB_DIR (a parent folder is private?); set SQLWEAVE_MARIADB_DIR to a folder it can reach, e.g. under /tmp."
  fi
  local fresh=""
  if [ ! -d "$DB_DIR/data/mysql" ]; then
    rm -rf "$DB_DIR/data"
    as_db mariadb-install-db --no-defaults --datadir="$DB_DIR/data" --auth-root-authentication-method=socket \
      --skip-test-db ${RUN_USER:+--user="$RUN_USER"} >"$DB_DIR/install.log" 2>&1 \
      || { cat "$DB_DIR/install.log" >&2; die "mariadb-install-db failed"; }
    fresh=1
  fi
  local p="${SQLWEAVE_MARIADB_PORT:-$(free_port)}"
  echo "$p" >"$DB_DIR/port"
  rm -f "$DB_DIR/server.pid"
  as_db setsid "$SERVER" --no-defaults --datadir="$DB_DIR/data" --socket="$(socket)" --port="$p" \
    --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$DB_DIR/server.pid" --log-error="$DB_DIR/server.log" \
    --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --innodb-buffer-pool-size=64M \
    --character-set-server=utf8mb4 --default-time-zone=+00:00 --max-connections=60 </dev/null >/dev/null 2>&1 &
  local i
  for i in $(seq 1 120); do
    if [ -S "$(socket)" ] && client -e "SELECT 1" >/dev/null 2>&1; then break; fi
    sleep 0.5
  done
  client -e "SELECT 1" >/dev/null 2>&1 \
    || { tail -n 20 "$DB_DIR/server.log" >&2 || true; die "the server did not start (log: $DB_DIR/server.log)"; }
  if [ -n "$fresh" ]; then
    # sqlweave's user, from this machine only (the server listens on 127.0.0.1 alone)
    client -e "CREATE USER IF NOT EXISTS 'sqlweave'@'127.0.0.1'; GRANT ALL PRIVILEGES ON *.* TO 'sqlweave'@'127.0.0.1';"
  fi
  url
}

cmd_stop() {
  pick_user
  [ -d "$DB_DIR" ] || return 0
  [ -f "$DB_DIR/.sqlweave-mariadb" ] || die "$DB_DIR is not a sqlweave MariaDB folder; not removing it."
  if running; then
    local pid; pid="$(cat "$DB_DIR/server.pid")"
    kill "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$DB_DIR"
}

cmd_status() {
  pick_user
  if running; then echo "running: $(url)"; else echo "not running"; return 3; fi
}

cmd_load() {
  [ $# -eq 2 ] || die "usage: scripts/mariadb.sh load NAME FILE"
  local name="$1" file="$2"
  [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || die "database name must be lower-case letters, digits and _: $name"
  [ -f "$file" ] || [ -d "$file" ] || die "no such file or folder: $file"
  pick_user
  running || cmd_start >/dev/null
  client -e "DROP DATABASE IF EXISTS \`$name\`; CREATE DATABASE \`$name\` CHARACTER SET utf8mb4"
  case "$file" in
    *.sql) client "$name" <"$file" >/dev/null ;;
    *) "$PY" -m sqlweave.loading "$file" "$(url "$name")" >&2 ;;
  esac
  url "$name"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  url) pick_user; running || die "not running: scripts/mariadb.sh start"; url "${2:-}" ;;
  load) shift; cmd_load "$@" ;;
  *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
