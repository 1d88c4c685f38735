#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the priors store tests and benchmark.
#
# Prints shell lines on stdout, for `eval "$(bash .ci/postgres.sh)"`:
#   export GREENROOM_TEST_POSTGRES_URL=postgresql://greenroom:...@127.0.0.1:PORT/greenroom_test
#   export GREENROOM_TEST_POSTGRES_STOP='...'   (stops the server and removes its files)
# Everything else goes to stderr. Exits non-zero when no server could be started.
#
# The cluster lives in a fresh temp dir, listens on 127.0.0.1 only, on a free port, and
# runs as an unprivileged user (`postgres`, or a created `greenroom-pg`, when run as
# root; the calling user otherwise). PostgreSQL is installed with apt-get when missing.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

find_bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v initdb)")"
        return 0
    fi
    return 1
}

if ! bindir=$(find_bindir); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        log "installing PostgreSQL with apt-get"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
        bindir=$(find_bindir) || { log "PostgreSQL installed but initdb/pg_ctl not found"; exit 1; }
    else
        log "PostgreSQL (initdb, pg_ctl) not found and cannot be installed here"
        exit 1
    fi
fi

# who runs the server: initdb refuses root
if [ "$(id -u)" = 0 ]; then
    if id postgres >/dev/null 2>&1; then
        pguser=postgres
    else
        pguser=greenroom-pg
        id "$pguser" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$pguser"
    fi
    as_user() { runuser -u "$pguser" -- "$@"; }
else
    pguser=$(id -un)
    as_user() { "$@"; }
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/greenroom-pg.XXXXXX")
chmod 700 "$dir"
[ "$(id -u)" = 0 ] && chown "$pguser" "$dir"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
password=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
dbuser=greenroom
dbname=greenroom_test

as_user sh -c "umask 077; printf '%s\n' '$password' > '$dir/pwfile'"
as_user "$bindir/initdb" -D "$dir/data" -U "$dbuser" --pwfile="$dir/pwfile" \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >&2 \
    || as_user "$bindir/initdb" -D "$dir/data" -U "$dbuser" --pwfile="$dir/pwfile" \
        --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --no-locale >&2
rm -f "$dir/pwfile"

as_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=100" start >&2 \
    || { log "server did not start; its log:"; cat "$dir/server.log" >&2 || true; exit 1; }

PGPASSWORD=$password "$bindir/createdb" -h 127.0.0.1 -p "$port" -U "$dbuser" "$dbname" >&2

if [ "$(id -u)" = 0 ]; then
    stop="runuser -u $pguser -- $bindir/pg_ctl -D $dir/data -m fast -w stop >/dev/null 2>&1; rm -rf $dir"
else
    stop="$bindir/pg_ctl -D $dir/data -m fast -w stop >/dev/null 2>&1; rm -rf $dir"
fi
log "PostgreSQL $("$bindir/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir)"
printf 'export GREENROOM_TEST_POSTGRES_URL=%q\n' "postgresql://$dbuser:$password@127.0.0.1:$port/$dbname"
printf 'export GREENROOM_TEST_POSTGRES_STOP=%q\n' "$stop"
