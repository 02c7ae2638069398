#!/usr/bin/env bash
# Beam's Java ValidatesRunner tests (the test classes of beam-sdks-java-core,
# category ValidatesRunner) against a job server of their own, on a free port:
#
#   java/vr.sh weir  [maven args]   against bin/weir serve
#   java/vr.sh prism [maven args]   against bin/prism (make prism)
#
# Surefire runs them with TestWeirRunner, a job-service client that waits for
# each job and fails the test with the job's errors; Prism is driven by the
# same client, so both runners run the same tests the same way. Maven args
# narrow the run, e.g. -Dtest='CombineTest*' (make test's subset).
#
# The reports are imported by the vr command into
# validatesrunner/results/java-<runner>[-<name>].json and RESULTS.md is
# rendered again (a narrowed run is stored under VR_JAVA_NAME, default
# "subset", and not rendered). For weir the run is checked against
# java/vr/known-weir.txt: a failure not listed, or a listed test that
# passes, fails the run.
set -euo pipefail
cd "$(dirname "$0")"
runner=${1:?usage: java/vr.sh weir|prism [maven args]}
shift
root=$(cd .. && pwd)
beam=$(sed -n 's|.*<beam.version>\(.*\)</beam.version>.*|\1|p' pom.xml)

# Excluded by category, as Prism's own Java suite excludes them: tests that
# need an expansion service of another SDK (cross-language) or the SDK's
# container image (the environment itself under test).
categories=org.apache.beam.sdk.testing.UsesExternalService,org.apache.beam.sdk.testing.UsesSdkHarnessEnvironment
case $runner in
weir) server=("$root/bin/weir" serve --job-port=PORT --state-dir=STATE) ;;
prism)
  server=("$root/bin/prism" --job_port=PORT --serve_http=false)
  # Prism's Java suite (runners/prism/java/build.gradle) also excludes these.
  categories+=,org.apache.beam.sdk.testing.UsesMultimapState,org.apache.beam.sdk.testing.UsesBoundedTrieMetrics
  ;;
*) echo "java/vr.sh: runner must be weir or prism" >&2; exit 2 ;;
esac
[ -x "${server[0]}" ] || { echo "java/vr.sh: ${server[0]} missing (make build / make prism)" >&2; exit 2; }

work=$(mktemp -d)
pid=
cleanup() {
  local status=$?
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true # under set -e, its 143 would be the script's
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
args=()
for a in "${server[@]}"; do a=${a//PORT/$port}; args+=("${a//STATE/$work/state}"); done
"${args[@]}" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 150); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "java/vr.sh: $runner exited" >&2; exit 2; }
  sleep 0.2
done

mvn -B -q -o -Pvr test-compile >/dev/null 2>&1 || mvn -B -q -Pvr test-compile
options="[\"--runner=TestWeirRunner\",\"--jobEndpoint=localhost:$port\",\"--defaultEnvironmentType=LOOPBACK\"]"
start=$(date -u +%s)
run_suite() { # maven flags...
  mvn -B "$@" -Pvr surefire:test -Dvr.options="$options" -Dvr.excludedGroups="$categories" \
    -Dvr.reports="$work/reports" "${tests[@]}" >"$work/mvn.log" 2>&1
}
tests=("$@")
set +e
# Offline first; online when something is missing from ~/.m2 (the first run
# fetches Surefire's JUnit provider). Failed tests do not fail Maven
# (testFailureIgnore): a non-zero status is a build that ran nothing.
run_suite -o || { rm -rf "$work/reports"; run_suite; }
mvn_status=$?
set -e
grep -E '^\[(INFO|WARNING|ERROR)\] Tests run:|FAIL' "$work/mvn.log" | tail -n 3 || true
if [ ! -d "$work/reports" ]; then
  tail -40 "$work/mvn.log" >&2
  echo "java/vr.sh: Maven ran no tests (status $mvn_status)" >&2
  exit 2
fi

# The tests each excluded category leaves out, counted for the table.
jar=$HOME/.m2/repository/org/apache/beam/beam-sdks-java-core/$beam/beam-sdks-java-core-$beam-tests.jar
mvn -B -q -o -Pvr dependency:build-classpath -Dmdep.outputFile="$work/cp.txt" -Dmdep.includeScope=test >/dev/null
java -cp "target/test-classes:target/classes:$(cat "$work/cp.txt")" org.weir.vr.Excluded $jar "$categories" >"$work/excluded.tsv"

name=
[ $# -gt 0 ] && name=${VR_JAVA_NAME:-subset}
known=
[ "$runner" = weir ] && known=java/vr/known-weir.txt
cd "$root"
go run ./validatesrunner/cmd/vr -java-import "$work/reports" -java-excluded "$work/excluded.tsv" \
  -java-known "$known" -runner "$runner" -java-name "$name" -java-seconds $(($(date -u +%s) - start)) -java-beam "$beam"
