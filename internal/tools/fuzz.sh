#!/bin/sh
# Runs every fuzz target (func FuzzXxx in a _test.go file) in turn, each for
# FUZZTIME (default 1m) on one worker; a target that fails leaves its
# crashing input in its package's testdata/fuzz, and the script goes on to
# the next and exits 1 at the end. Prints each target's last progress
# line, which carries its execs.
#
# FUZZMINIMIZE bounds how long each input is minimized (default 100x, a
# hundred runs). go test minimizes every input that finds new coverage,
# not only crashers, for up to a minute by default, and counts none of
# those runs: on targets whose inputs are large (FuzzBuild's pipelines)
# that left a one-minute run with a handful of executions.
#
# FUZZRUN, a regular expression, picks the targets by name (default all).
set -e
FUZZTIME=${FUZZTIME:-1m}
FUZZMINIMIZE=${FUZZMINIMIZE:-100x}
FUZZRUN=${FUZZRUN:-.}
failed=
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in $(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do
	pkg=./$(dirname "${f#./}")
	for t in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f" | grep -E "$FUZZRUN"); do
		echo "== $pkg $t"
		if ! $GO test "$pkg" -run '^$' -fuzz "^$t\$" -fuzztime="$FUZZTIME" -fuzzminimizetime="$FUZZMINIMIZE" -parallel=1 >"$out" 2>&1; then
			cat "$out"
			failed="$failed $pkg.$t"
			continue
		fi
		grep 'execs:' "$out" | tail -1
	done
done
if [ -n "$failed" ]; then
	echo "failed:$failed"
	exit 1
fi
