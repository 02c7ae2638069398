#!/bin/sh
# chromium.sh prints the path of a headless-capable Chromium binary, for the
# web UI's browser tests (webui/uitest) and `make ui-test`.
#
# Order: $WEIR_CHROMIUM if set (it must be executable; nothing is
# installed), else /usr/bin/chromium if present, else Debian's `chromium`
# package is installed (apt-get update, then install without recommends;
# this needs root, as on the project's machines) and its path printed.
#
# Only the path goes to stdout, so callers can write
# WEIR_CHROMIUM=$(internal/tools/chromium.sh); apt's chatter goes to stderr,
# and only when something is installed. Running it again does nothing.
set -eu

if [ -n "${WEIR_CHROMIUM:-}" ]; then
	if [ ! -x "$WEIR_CHROMIUM" ]; then
		echo "chromium.sh: WEIR_CHROMIUM=$WEIR_CHROMIUM is not an executable file" >&2
		exit 1
	fi
	echo "$WEIR_CHROMIUM"
	exit 0
fi

bin=/usr/bin/chromium
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "chromium.sh: $bin is missing and apt-get is not available; install Chromium and set WEIR_CHROMIUM" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "chromium.sh: $bin is missing and installing it needs root (apt-get); install Chromium or set WEIR_CHROMIUM" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "chromium.sh: installing Debian's chromium package" >&2
# One update: a fresh machine's package lists may be empty or stale, and
# install would then fail to find the package.
apt-get update -q >&2
apt-get install -y -q --no-install-recommends chromium >&2

if [ ! -x "$bin" ]; then
	echo "chromium.sh: apt-get installed chromium but $bin is not there" >&2
	exit 1
fi
echo "$bin"
