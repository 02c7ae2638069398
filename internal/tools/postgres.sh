#!/bin/sh
# postgres.sh runs a throwaway PostgreSQL server for weir's tests (the
# PostgreSQL sink, pgsink; `make postgres`, `make test`).
#
#   postgres.sh start   start the server unless it runs; print its URL
#   postgres.sh url     print the URL of the running server, or fail
#   postgres.sh stop    stop it (the data folder stays for the next start)
#
# The server is Debian's PostgreSQL: if no initdb is found under
# /usr/lib/postgresql, the `postgresql` package is installed (apt-get
# update once, then install; this needs root, as on the project's
# machines). Its cluster lives in $WEIR_PG_DIR (default
# /tmp/weir-postgres-UID): made once by initdb, kept between runs, reused
# while it runs. It listens on a free loopback port picked at the first
# start and kept in $WEIR_PG_DIR/port, with no Unix socket, and trusts
# every local connection: it is for tests, never for data.
#
# For speed it runs with fsync, synchronous_commit and full_page_writes
# off: a commit is acknowledged before its WAL reaches the disk. That
# loses commits only if the server or the machine crashes, which no test
# does (the crash tests kill weir, never PostgreSQL). Do not copy these
# settings anywhere that matters.
#
# PostgreSQL refuses to run as root, so as root the server runs as the
# `postgres` user the package creates, which owns $WEIR_PG_DIR; as any
# other user it runs as that user.
#
# Only the URL goes to stdout, so callers can write
# WEIR_PG_URL=$(internal/tools/postgres.sh start); everything else goes to
# stderr.
set -eu

dir=${WEIR_PG_DIR:-/tmp/weir-postgres-$(id -u)}
data=$dir/data
db=weir

die() {
	echo "postgres.sh: $*" >&2
	exit 1
}

# bindir finds the newest installed PostgreSQL's programs.
bindir() {
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

install() {
	command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and apt-get is not available; install PostgreSQL (initdb, pg_ctl under /usr/lib/postgresql/VERSION/bin)"
	[ "$(id -u)" = 0 ] || die "PostgreSQL is not installed and installing it needs root (apt-get install postgresql)"
	echo "postgres.sh: installing Debian's postgresql package" >&2
	export DEBIAN_FRONTEND=noninteractive
	# One update: a fresh machine's package lists may be empty or stale.
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends postgresql >&2
}

# as runs a command as the server's user.
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

running() {
	[ -f "$dir/port" ] && as "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1
}

url() {
	echo "postgres://postgres@127.0.0.1:$(cat "$dir/port")/$db?sslmode=disable"
}

# freeport asks the kernel for a free loopback port.
freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
	if ! bin=$(bindir); then
		install
		bin=$(bindir) || die "apt-get installed postgresql, but no initdb is under /usr/lib/postgresql"
	fi
	mkdir -p "$dir"
	if [ "$(id -u)" = 0 ]; then
		chown postgres: "$dir"
		chmod 700 "$dir"
	fi
	if running; then
		url
		return
	fi
	if [ ! -f "$data/PG_VERSION" ]; then
		rm -rf "$data"
		as "$bin/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
			die "initdb failed; see $dir/initdb.log"
	fi
	port=$(cat "$dir/port" 2>/dev/null || true)
	if [ -z "$port" ] || ! python3 -c 'import socket,sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null; then
		port=$(freeport)
	fi
	echo "$port" | as tee "$dir/port" >/dev/null
	# The server must not inherit the lock (fd 9) or the caller's output:
	# it would hold the lock, and a caller reading our stdout to its end,
	# for as long as it runs.
	as "$bin/pg_ctl" start -D "$data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		</dev/null >>"$dir/pg_ctl.log" 2>&1 9>&- ||
		die "the server did not start; see $dir/server.log"
	if ! as "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
		as "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"
	fi
	url
}

stop() {
	bin=$(bindir) || return 0
	if running; then
		as "$bin/pg_ctl" stop -D "$data" -m fast -w >&2
	fi
}

case "${1:-start}" in
start)
	# Two starts at once (make test in two shells) must not race initdb.
	mkdir -p "$dir"
	exec 9>"$dir.lock"
	flock 9
	start
	;;
url)
	bin=$(bindir) || die "PostgreSQL is not installed"
	running || die "no server runs in $dir; run internal/tools/postgres.sh start (make postgres)"
	url
	;;
stop) stop ;;
*) die "usage: postgres.sh [start|url|stop]" ;;
esac
