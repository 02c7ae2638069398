#!/usr/bin/env bash
# weir's Java side, against a weir serve of its own on free ports:
#
#   java/run.sh example   the word count, LOOPBACK then with an EXTERNAL
#                         worker pool (Beam's ExternalWorkerService); prints
#                         the counts (make run-java)
#   java/run.sh test      the same, checking the counts, then the pipelines
#                         of org.weir.examples.Pipelines, each checked by
#                         PAssert, one whose assertion is wrong, which
#                         must fail, one weir must refuse at submission,
#                         and KafkaRoundTrip (Beam Java's KafkaIO)
#                         against bin/kfake (make java-test)
#
# Extra arguments go to every Java program, e.g. java/run.sh test --streaming.
#
# Builds with Maven offline when ~/.m2 has everything, online otherwise
# (the first build downloads for minutes). Needs bin/weir (make build),
# and for test bin/kfake (make kfake).
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-example}
shift || true
extra=("$@")
weir=../bin/weir
[ -x "$weir" ] || { echo "java/run.sh: $weir missing; run make build" >&2; exit 1; }
kfake=../bin/kfake
[ "$mode" != test ] || [ -x "$kfake" ] || { echo "java/run.sh: $kfake missing; run make kfake" >&2; exit 1; }

mvn -B -q -o compile >/dev/null 2>&1 || mvn -B -q compile
cp="target/classes:$(cat target/classpath.txt)"
jvm=(java -Djava.util.logging.config.file=logging.properties -cp "$cp")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { # port pid what
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { echo "java/run.sh: $3 exited" >&2; return 1; }
    sleep 0.2
  done
  echo "java/run.sh: $3 did not listen on $1" >&2; return 1
}

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "java/run.sh: $*" >&2
  echo "--- weir serve's log:" >&2; tail -40 "$work/serve.log" >&2
  exit 1
}

job_port=$(free_port)
"$weir" serve --job-port="$job_port" --state-dir="$work/state" >"$work/serve.log" 2>&1 &
pids+=($!)
wait_port "$job_port" "${pids[-1]}" "weir serve"
endpoint=localhost:$job_port

pool_port=$(free_port)
PIPELINE_OPTIONS="{\"options\":{\"defaultEnvironmentConfig\":\"localhost:$pool_port\"}}" \
  "${jvm[@]}" org.apache.beam.fn.harness.ExternalWorkerService >"$work/pool.log" 2>&1 &
pids+=($!)
wait_port "$pool_port" "${pids[-1]}" "the Java worker pool"

# The word count's counts, sorted, as the example prints them.
want='age: 2
belief: 1
best: 1
darkness: 1
despair: 1
epoch: 2
foolishness: 1
hope: 1
incredulity: 1
it: 10
light: 1
of: 10
season: 2
spring: 1
the: 10
times: 2
was: 10
winter: 1
wisdom: 1
worst: 1'

wordcount() { # name flags...
  local name=$1; shift
  echo "== $name"
  if [ "$mode" = test ]; then
    "${jvm[@]}" org.weir.examples.WordCount --runner=WeirRunner --jobEndpoint="$endpoint" "$@" "${extra[@]}" \
      >"$work/$name.out" 2>"$work/$name.log" || { cat "$work/$name.log" >&2; fail "word count $name failed"; }
    grep 'staged' "$work/$name.log" || true
    diff <(echo "$want") "$work/$name.out" >&2 || fail "word count $name: wrong counts (diff: want, got)"
    echo "counts as expected"
  else
    "${jvm[@]}" org.weir.examples.WordCount --runner=WeirRunner --jobEndpoint="$endpoint" "$@" "${extra[@]}"
  fi
}

wordcount LOOPBACK --defaultEnvironmentType=LOOPBACK
wordcount EXTERNAL --defaultEnvironmentType=EXTERNAL --defaultEnvironmentConfig="localhost:$pool_port"

[ "$mode" = test ] || exit 0

echo "== pipelines (LOOPBACK)"
"${jvm[@]}" org.weir.examples.Pipelines --runner=WeirRunner --jobEndpoint="$endpoint" \
  --defaultEnvironmentType=LOOPBACK "${extra[@]}" >"$work/pipelines.out" 2>"$work/pipelines.log" || {
  cat "$work/pipelines.out"; fail "a Java pipeline failed"; }
cat "$work/pipelines.out"
echo "== a wrong assertion must fail"
if "${jvm[@]}" org.weir.examples.Pipelines wrong-gbk --runner=WeirRunner --jobEndpoint="$endpoint" \
  --defaultEnvironmentType=LOOPBACK >"$work/wrong.out" 2>&1; then
  fail "wrong-gbk passed: PAssert's failures do not fail jobs, so the passes above prove nothing"
fi
grep '^pipeline' "$work/wrong.out"
echo "== a pipeline weir cannot run is refused at submission"
"${jvm[@]}" org.weir.examples.Pipelines refused-time-sorted --runner=WeirRunner --jobEndpoint="$endpoint" \
  --defaultEnvironmentType=LOOPBACK >"$work/refused.out" 2>&1 || true
grep '^pipeline' "$work/refused.out" || true
# Refused, not run: no element reached the DoFn, and the error names the
# transform and the requirement's URN.
grep -q '^pipeline refused-time-sorted: REFUSED after 0 elements (FAILED): .*beam:requirement:pardo:time_sorted_input:v1.*transform "TimeSorted/' \
  "$work/refused.out" || fail "a time-sorted-input pipeline was not refused at submission with its transform and URN"

# Beam Java's own KafkaIO (KafkaRoundTrip) against kfake, franz-go's fake
# broker: a write, a bounded KafkaIO.read and a read of KafkaIO's
# splittable DoFn, all in the Java harness. Three partitions, so that the
# splittable DoFn's bundles hold several descriptors for weir to split.
echo "== kafka (LOOPBACK, kfake)"
kafka_port=$(free_port)
"$kfake" --port="$kafka_port" --partitions=3 >"$work/kfake.log" 2>&1 &
pids+=($!)
wait_port "$kafka_port" "${pids[-1]}" "kfake"
"${jvm[@]}" org.weir.examples.KafkaRoundTrip --bootstrapServers="127.0.0.1:$kafka_port" \
  --runner=WeirRunner --jobEndpoint="$endpoint" --defaultEnvironmentType=LOOPBACK "${extra[@]}" \
  >"$work/kafka.out" 2>"$work/kafka.log" || {
  cat "$work/kafka.out"; tail -40 "$work/kafka.log" >&2; fail "KafkaRoundTrip failed"; }
cat "$work/kafka.out"

n=$(( $(grep -c '^pipeline .*: PASS$' "$work/pipelines.out") + $(grep -c '^kafka .*: PASS$' "$work/kafka.out") + 4 ))
echo "java: $n passed, 0 failed"
