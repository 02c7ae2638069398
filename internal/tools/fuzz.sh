#!/bin/sh
# Runs every fuzz target (func FuzzXxx in a _test.go file) in turn, each for
# FUZZTIME (default 1m) on one worker, and stops at the first failure,
# whose crashing input go test leaves in the package's testdata/fuzz.
# Prints each target's last progress line, which carries its execs.
set -e
FUZZTIME=${FUZZTIME:-1m}
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in $(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do
	pkg=./$(dirname "${f#./}")
	for t in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f"); do
		echo "== $pkg $t"
		if ! $GO test "$pkg" -run '^$' -fuzz "^$t\$" -fuzztime="$FUZZTIME" -parallel=1 >"$out" 2>&1; then
			cat "$out"
			exit 1
		fi
		grep 'execs:' "$out" | tail -1
	done
done
