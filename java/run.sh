#!/usr/bin/env bash
# weir's Java side, against a weir serve of its own on free ports:
#
#   java/run.sh example   the word count, LOOPBACK then with an EXTERNAL
#                         worker pool (Beam's ExternalWorkerService); prints
#                         the counts (make run-java)
#   java/run.sh test      the same, checking the counts, then the pipelines
#                         of org.weir.examples.Pipelines, each checked by
#                         PAssert, the word count through weir proxy to a
#                         server with TLS, client certificates and a
#                         token, one whose assertion is wrong, which
#                         must fail, one weir must refuse at submission,
#                         and KafkaRoundTrip (Beam Java's KafkaIO)
#                         against bin/kfake (make java-test), then a
#                         streaming job with checkpoints whose server is
#                         killed (SIGKILL) and which, submitted again to a
#                         new server on the same --state-dir, resumes from
#                         its checkpoint
#
# Extra arguments go to every Java program, e.g. java/run.sh test --streaming.
#
# Builds with Maven offline when ~/.m2 has everything, online otherwise
# (the first build downloads for minutes). Needs bin/weir (make build),
# and for test bin/kfake and bin/testcerts (make kfake testcerts).
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
serve_log=$work/serve.log # the log fail shows: the server of the step that runs
fail() {
  echo "java/run.sh: $*" >&2
  echo "--- weir serve's log ($(basename "$serve_log")):" >&2; tail -40 "$serve_log" >&2
  exit 1
}
wait_for() { # seconds command...: poll the command until it succeeds; false if it never did
  local secs=$1; shift
  for _ in $(seq $((secs * 5))); do
    "$@" && return 0
    sleep 0.2
  done
  return 1
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

# Beam Java's job client (ManagedChannelFactory: plaintext, no token, as
# PortableRunner's) cannot reach a weir serve that requires TLS, client
# certificates and a token; weir proxy, on loopback, forwards it there
# with its own (docs/security.md).
echo "== word count through weir proxy to a server with TLS, client certificates and a token"
testcerts=../bin/testcerts
[ -x "$testcerts" ] || fail "$testcerts missing; run make testcerts"
certs=$work/certs
"$testcerts" "$certs"
echo "java-test-token-0123456789abcdef" >"$certs/token"
secure_port=$(free_port)
serve_log=$work/serve-secure.log
"$weir" serve --job-port="$secure_port" --state-dir="$work/state-secure" --http-addr= \
  --tls-cert="$certs/server.pem" --tls-key="$certs/server-key.pem" --tls-client-ca="$certs/ca.pem" \
  --auth-token-file="$certs/token" >"$serve_log" 2>&1 &
pids+=($!)
wait_port "$secure_port" "${pids[-1]}" "weir serve (secured)"
proxy_port=$(free_port)
"$weir" proxy --listen="localhost:$proxy_port" --endpoint="localhost:$secure_port" \
  --tls-ca="$certs/ca.pem" --tls-cert="$certs/client.pem" --tls-key="$certs/client-key.pem" \
  --token-file="$certs/token" >"$work/proxy.log" 2>&1 &
pids+=($!)
wait_port "$proxy_port" "${pids[-1]}" "weir proxy"
secure_endpoint=$endpoint
endpoint=localhost:$proxy_port
wordcount proxied --defaultEnvironmentType=LOOPBACK
endpoint=$secure_endpoint
"$weir" jobs --endpoint="localhost:$secure_port" --tls-ca="$certs/ca.pem" --tls-cert="$certs/client.pem" \
  --tls-key="$certs/client-key.pem" --token-file="$certs/token" | grep -q DONE ||
  fail "the proxied word count is not DONE on the secured server"
serve_log=$work/serve.log

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


# CheckpointResume counts the ticks of an UnboundedSource (a splittable
# DoFn in Beam's Java SDK, its checkpoint mark in the restriction) in a
# stateful DoFn and appends "tick count" to a file. Its server is killed
# as in a crash once two checkpoints are complete; the job, submitted again
# under its name to a new server on the same state dir, must resume: its
# first line goes on from the checkpoint (from scratch it would be "0 1"),
# the source's position and the count together (count = tick + 1).
echo "== a streaming job resumes from its checkpoint after weir serve is killed"
ck=$work/checkpoint
ck_name=java-checkpoint-resume
ck_dir=$ck/state/jobs/$ck_name/checkpoints
mkdir -p "$ck"
ck_serve() { # run: a weir serve on the state dir; sets ck_port, ck_weir
  ck_port=$(free_port)
  serve_log=$ck/serve-$1.log
  "$weir" serve --job-port="$ck_port" --state-dir="$ck/state" >"$serve_log" 2>&1 &
  ck_weir=$!
  pids+=("$ck_weir")
  wait_port "$ck_port" "$ck_weir" "weir serve"
}
ck_submit() { # run: the job, in the background; sets ck_java
  "${jvm[@]}" org.weir.examples.CheckpointResume --runner=WeirRunner --jobEndpoint="localhost:$ck_port" \
    --defaultEnvironmentType=LOOPBACK --streaming --jobName="$ck_name" --weirCheckpointInterval=1s \
    --output="$ck/$1.ticks" >"$ck/$1.out" 2>"$ck/$1.log" &
  ck_java=$!
  pids+=("$ck_java")
}
ck_fail() { # run message
  echo "--- the $1 run's output:" >&2; tail -20 "$ck/$1.out" >&2; tail -20 "$ck/$1.log" >&2
  fail "$2"
}
latest() { # the newest completed checkpoint: a folder chk-N with its MANIFEST (0: none)
  local m=0 c id
  for c in "$ck_dir"/chk-*[0-9]; do
    [ -f "$c/MANIFEST" ] || continue
    id=${c##*/chk-}
    if [ "$id" -gt "$m" ]; then m=$id; fi
  done
  echo "$m"
}
ticks() { [ -f "$ck/$1.ticks" ] && wc -l <"$ck/$1.ticks" || echo 0; }
gone() { ! kill -0 "$1" 2>/dev/null; }
running() { ! gone "$ck_java" || ck_fail "$1" "the job's submitter exited"; }
counting() { running "$1" && [ "$(ticks "$1")" -gt "$2" ]; }
checkpointed() { running first && [ "$(latest)" -ge "$1" ]; }

ck_serve first
ck_submit first
wait_for 90 counting first 0 || ck_fail first "the first run counted no tick in 90s"
# Two more checkpoints after the first tick: the first of them may have
# been triggered before it, the second only once the first had completed,
# so it covers counting already done.
since=$(latest)
wait_for 60 checkpointed $((since + 2)) || ck_fail first "no two checkpoints completed in $ck_dir in 60s"
kill -KILL "$ck_weir" # as a crash: nothing is flushed or stopped
wait "$ck_weir" 2>/dev/null || true
# Its LOOPBACK workers lost their server: it goes too, as a crash would
# take it (SIGTERM, then SIGKILL if it lingers).
kill "$ck_java" 2>/dev/null || true
wait_for 10 gone "$ck_java" || kill -KILL "$ck_java" 2>/dev/null || true
wait "$ck_java" 2>/dev/null || true
read -r _ before < <(tail -1 "$ck/first.ticks") || true
[ "${before:-0}" -gt 1 ] || ck_fail first "the first run counted ${before:-nothing} before the kill"
echo "first run: counted to $before; checkpoints: $(cd "$ck_dir" && echo chk-*)"

ck_serve second
ck_submit second
wait_for 90 counting second 5 || ck_fail second "the restored run counted no 6 ticks in 90s"
wait_for 10 grep -q '^message: .*restored from checkpoint' "$ck/second.out" ||
  ck_fail second "the job did not say it was restored from a checkpoint"
grep -o 'restored from checkpoint [0-9]*' "$ck/second.out"
read -r tick count < <(head -1 "$ck/second.ticks") || true
echo "the restored run starts at tick $tick, count $count"
# From scratch it would be tick 0, count 1. Restored, the count goes on
# from the checkpoint's (at most what the first run had counted: it went
# on after its last checkpoint), and so does the source, one count a tick.
[ "$tick" -gt 0 ] && [ "$count" -gt 1 ] || ck_fail second "the restored run started over: tick $tick, count $count"
[ "$count" -le $((before + 1)) ] || ck_fail second "the restored run's count $count is past the first run's $before"
[ "$count" -eq $((tick + 1)) ] || ck_fail second "tick $tick counted $count: the source's position and the count were not restored together"
job=$(sed -n 's/^job //p' "$ck/second.out" | head -1)
"$weir" cancel --endpoint="localhost:$ck_port" "$job" >/dev/null || ck_fail second "cancelling job $job failed"
wait "$ck_java" || ck_fail second "the restored job did not end CANCELLED"
grep '^job ended' "$ck/second.out"

n=$(( $(grep -c '^pipeline .*: PASS$' "$work/pipelines.out") + $(grep -c '^kafka .*: PASS$' "$work/kafka.out") + 6 ))
echo "java: $n passed, 0 failed"
