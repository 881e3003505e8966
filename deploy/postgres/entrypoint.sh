#!/bin/sh
# First start: a cluster in $PGDATA with POSTGRES_USER (password
# POSTGRES_PASSWORD, scram-sha-256 from any address) owning POSTGRES_DB.
# Then PostgreSQL in the foreground, as the container's main process.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-host=scram-sha-256 --auth-local=trust \
    --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" > /dev/null
  rm -f "$pwfile"
  printf "listen_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  if [ "$db" != "postgres" ]; then
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start > /dev/null
    psql -q -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres \
      -c "CREATE DATABASE \"$db\" OWNER \"$user\""
    pg_ctl -D "$PGDATA" -m fast -w stop > /dev/null
  fi
fi
exec postgres -D "$PGDATA"
