#!/usr/bin/env bash
# stack.sh: start (or reuse) the servers the service needs on this machine, run a command
# with their addresses in the environment, and stop whatever this script started when the
# command ends or on Ctrl-C.
#
#   scripts/stack.sh COMMAND [ARGS...]
#
# PostgreSQL: DATABASE_URL (and MIGRATION_DATABASE_URL) if set; otherwise a private cluster
#   under .data/postgres on 127.0.0.1:${ACCOUNTABLE_PG_PORT:-54329}, made from the machine's
#   PostgreSQL binaries (Debian's postgresql package is installed when they are missing and
#   we are root), with an owner role and a service role.
# Temporal:   TEMPORAL_ADDRESS if set; otherwise the pinned Temporal CLI dev server on
#   127.0.0.1:${ACCOUNTABLE_TEMPORAL_PORT:-7233} (Web UI on the port + 1000), built once
#   into a cache outside the clone so fresh clones reuse it.
# Witness:    the C2SP tlog-witness litewitness and its witnessctl (filippo.io/torchwood),
#   built once into the same cache; the tests run litewitness as a process of its own
#   (ACCOUNTABLE_LITEWITNESS_BIN, ACCOUNTABLE_WITNESSCTL_BIN).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data="$root/.data"
mkdir -p "$data/logs"

TEMPORAL_CLI_VERSION=v1.5.1
TORCHWOOD_VERSION=v0.6.1
cache_bin="${XDG_CACHE_HOME:-$HOME/.cache}/accountable/bin"
pg_port="${ACCOUNTABLE_PG_PORT:-54329}"
temporal_port="${ACCOUNTABLE_TEMPORAL_PORT:-7233}"
ui_port=$((temporal_port + 1000))

log() { printf 'stack: %s\n' "$*" >&2; }
die() { printf 'stack: error: %s\n' "$*" >&2; exit 1; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

started_pg=""
started_temporal=""
pg_ctl_cmd=()

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$started_temporal" ]; then
    log "stopping Temporal dev server (pid $started_temporal)"
    kill -TERM "$started_temporal" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$started_temporal" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$started_temporal" 2>/dev/null || true
  fi
  if [ -n "$started_pg" ]; then
    log "stopping PostgreSQL ($started_pg)"
    (cd / && "${pg_ctl_cmd[@]}" stop -D "$started_pg" -m fast >/dev/null 2>&1) || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- PostgreSQL -------------------------------------------------------------------------

find_pg_bindir() {
  local d
  if command -v pg_config >/dev/null 2>&1; then
    d=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  return 1
}

ensure_pg_binaries() {
  if pg_bindir=$(find_pg_bindir); then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "PostgreSQL binaries not found; installing Debian's postgresql package"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    pg_bindir=$(find_pg_bindir) || die "installed postgresql but found no initdb"
    return 0
  fi
  die "PostgreSQL 15+ binaries not found. Install them (Debian: sudo apt-get install postgresql) or set DATABASE_URL."
}

# remove_orphan_clusters removes the /var/tmp clusters of clones that are gone (a CI run's
# clean clone, a deleted worktree), which nothing else would: each holds a database of
# hundreds of MB. A cluster says which clone it serves in its clone file; one whose server
# still runs is kept.
remove_orphan_clusters() {
  local dir clone pid
  for dir in /var/tmp/accountable-*; do
    [ -f "$dir/clone" ] || continue
    clone=$(cat "$dir/clone")
    [ -d "$clone" ] && continue
    pid=$(head -1 "$dir/postgres/postmaster.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      continue
    fi
    log "removing the PostgreSQL cluster of $clone, which is gone ($dir)"
    rm -rf "$dir"
  done
}

start_postgres() {
  ensure_pg_binaries
  local pgdata="$data/postgres"
  pg_log="$data/logs/postgres.log"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    # The postgres user must be able to reach the data directory and the log; a clone under
    # a private directory (/root and mktemp -d are 0700) cannot be reached, so the cluster
    # and its log live under /var/tmp instead.
    mkdir -p "$pgdata"
    if ! runuser -u postgres -- test -x "$pgdata" 2>/dev/null; then
      remove_orphan_clusters
      local base
      base="/var/tmp/accountable-$(printf '%s' "$root" | sha256sum | cut -c1-12)"
      mkdir -p "$base/postgres"
      chmod 755 "$base"
      printf '%s\n' "$root" > "$base/clone"
      pgdata="$base/postgres"
      pg_log="$base/postgres.log"
    fi
    touch "$pg_log"
    chown postgres: "$pgdata" "$pg_log"
    chmod 700 "$pgdata"
    pg_ctl_cmd=(runuser -u postgres -- "$pg_bindir/pg_ctl")
    initdb_cmd=(runuser -u postgres -- "$pg_bindir/initdb")
  else
    mkdir -p "$pgdata"
    chmod 700 "$pgdata"
    pg_ctl_cmd=("$pg_bindir/pg_ctl")
    initdb_cmd=("$pg_bindir/initdb")
  fi
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    log "initialising a private PostgreSQL cluster in $pgdata"
    # (cd /): the postgres user may not be allowed into the current directory.
    (cd / && "${initdb_cmd[@]}" -D "$pgdata" -U accountable --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null) \
      || (cd / && "${initdb_cmd[@]}" -D "$pgdata" -U accountable --auth=trust -E UTF8 --no-locale >/dev/null) \
      || die "initdb failed for $pgdata"
  fi
  log "starting PostgreSQL on 127.0.0.1:$pg_port"
  # setsid keeps Ctrl-C from reaching the server directly; cleanup stops it in order.
  (cd / && setsid "${pg_ctl_cmd[@]}" start -D "$pgdata" -w -t 60 -l "$pg_log" \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories='' -c max_connections=300 -c idle_in_transaction_session_timeout=60s -c fsync=${ACCOUNTABLE_PG_FSYNC:-on}" >/dev/null) \
    || { tail -20 "$pg_log" >&2; die "PostgreSQL did not start (log: $pg_log)"; }
  started_pg="$pgdata"
}

if [ -z "${DATABASE_URL:-}" ]; then
  if port_open "$pg_port"; then
    log "reusing PostgreSQL already listening on 127.0.0.1:$pg_port"
  else
    start_postgres
  fi
  # Two roles (least privilege): the cluster's bootstrap superuser `accountable` owns the
  # schema and runs the migrations; the service connects as `accountable_service`, which
  # `accountable migrate` creates and which may only insert into and read the ledger. The
  # service's database is created on first use by `accountable migrate` (it connects to
  # "postgres" to do so).
  export MIGRATION_DATABASE_URL="postgres://accountable@127.0.0.1:$pg_port/accountable?sslmode=disable"
  export DATABASE_URL="postgres://accountable_service@127.0.0.1:$pg_port/accountable?sslmode=disable"
fi
# Tests that need a second cluster (a restore) use the same binaries.
if pg_bindir=$(find_pg_bindir); then export ACCOUNTABLE_PG_BINDIR="$pg_bindir"; fi

# --- Temporal ---------------------------------------------------------------------------

ensure_temporal_cli() {
  temporal_bin="$cache_bin/temporal-$TEMPORAL_CLI_VERSION"
  if [ -x "$temporal_bin" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || die "Go is needed to build the Temporal CLI"
  log "building the Temporal CLI $TEMPORAL_CLI_VERSION into $cache_bin (first time only, takes a few minutes)"
  mkdir -p "$cache_bin"
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && GOFLAGS=-mod=mod GOBIN="$tmp" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION") \
    || die "could not build the Temporal CLI"
  mv "$tmp/temporal" "$temporal_bin"
  rm -rf "$tmp"
}

start_temporal() {
  ensure_temporal_cli
  log "starting Temporal dev server on 127.0.0.1:$temporal_port (Web UI http://127.0.0.1:$ui_port)"
  setsid "$temporal_bin" server start-dev \
    --ip 127.0.0.1 --port "$temporal_port" --ui-port "$ui_port" \
    --db-filename "$data/temporal.db" --log-level warn \
    --dynamic-config-value matching.numTaskqueueReadPartitions=1 \
    --dynamic-config-value matching.numTaskqueueWritePartitions=1 \
    --search-attribute WorkspaceId=Keyword \
    >>"$data/logs/temporal.log" 2>&1 </dev/null &
  started_temporal=$!
  for _ in $(seq 1 300); do
    if port_open "$temporal_port" && "$temporal_bin" operator cluster health --address "127.0.0.1:$temporal_port" >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$started_temporal" 2>/dev/null || { tail -20 "$data/logs/temporal.log" >&2; die "Temporal dev server exited"; }
    sleep 0.2
  done
  die "Temporal dev server did not become healthy (log: $data/logs/temporal.log)"
}

if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  if port_open "$temporal_port"; then
    log "reusing Temporal already listening on 127.0.0.1:$temporal_port"
  else
    start_temporal
  fi
  export TEMPORAL_ADDRESS="127.0.0.1:$temporal_port"
  export TEMPORAL_UI_URL="${TEMPORAL_UI_URL:-http://127.0.0.1:$ui_port}"
fi
# The fault tests start (and stop) a Temporal dev server of their own with this CLI.
ensure_temporal_cli
export ACCOUNTABLE_TEMPORAL_BIN="$temporal_bin"

# --- the witness ------------------------------------------------------------------------

ensure_litewitness() {
  litewitness_bin="$cache_bin/litewitness-$TORCHWOOD_VERSION"
  witnessctl_bin="$cache_bin/witnessctl-$TORCHWOOD_VERSION"
  if [ -x "$litewitness_bin" ] && [ -x "$witnessctl_bin" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || die "Go is needed to build litewitness"
  log "building litewitness and witnessctl $TORCHWOOD_VERSION into $cache_bin (first time only)"
  mkdir -p "$cache_bin"
  local tmp
  tmp=$(mktemp -d)
  # witnessctl imports sigsum.org/sigsum-go, whose source the module proxy here refuses
  # (403): it is built in a module of its own that replaces sigsum-go with the two
  # functions witnessctl calls (scripts/witnessctl/sigsum-go, the same SHA-256 values).
  cp -r "$root/scripts/witnessctl/sigsum-go" "$tmp/sigsum-go"
  printf 'module witnessbuild\n\ngo 1.24\n\nrequire filippo.io/torchwood %s\n\nreplace sigsum.org/sigsum-go => ./sigsum-go\n' \
    "$TORCHWOOD_VERSION" > "$tmp/go.mod"
  (cd "$tmp" && GOFLAGS=-mod=mod go build -o "$tmp/litewitness" filippo.io/torchwood/cmd/litewitness &&
    GOFLAGS=-mod=mod go build -o "$tmp/witnessctl" filippo.io/torchwood/cmd/witnessctl) || die "could not build litewitness"
  mv "$tmp/litewitness" "$litewitness_bin"
  mv "$tmp/witnessctl" "$witnessctl_bin"
  rm -rf "$tmp"
}
ensure_litewitness
export ACCOUNTABLE_LITEWITNESS_BIN="$litewitness_bin" ACCOUNTABLE_WITNESSCTL_BIN="$witnessctl_bin"

# --- the command ------------------------------------------------------------------------

[ $# -gt 0 ] || die "usage: scripts/stack.sh COMMAND [ARGS...]"
# The command runs as a child (not exec) so that cleanup runs when it ends.
"$@" &
child=$!
trap 'kill -INT "$child" 2>/dev/null || true' INT
trap 'kill -TERM "$child" 2>/dev/null || true' TERM
set +e
wait "$child"; rc=$?
# wait returns early when a trapped signal arrives; wait again for the child to finish.
while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
set -e
exit "$rc"
