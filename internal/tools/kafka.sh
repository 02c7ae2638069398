#!/usr/bin/env bash
# A real Apache Kafka broker for weir's tests: one KRaft node that is
# broker and controller at once, on loopback, its log in a folder.
#
#   internal/tools/kafka.sh start [DIR [PORT]]  start (or find running) the
#                        broker of DIR; print its bootstrap address
#                        (127.0.0.1:PORT). PORT defaults to a free one; a
#                        DIR formatted before keeps its ports and its data,
#                        so stop then start is a broker restart.
#   internal/tools/kafka.sh stop [DIR]          stop it (SIGTERM, then
#                        SIGKILL after 30 s); the data stays
#   internal/tools/kafka.sh kill [DIR]          SIGKILL it, as a crash
#   internal/tools/kafka.sh run DIR -- CMD...   start a fresh broker in DIR
#                        (DIR is emptied first), run CMD with
#                        WEIR_KAFKA_BROKERS set to it, stop it; exits
#                        with CMD's status
#   internal/tools/kafka.sh classpath           resolve the jars; print the
#                        classpath
#
# DIR defaults to bin/kafka. The jars are org.apache.kafka:kafka_2.13 and
# its runtime dependencies (the version is in internal/tools/kafka/pom.xml),
# resolved by Maven into ~/.m2 once; later starts run offline. The broker
# is a JVM: java (17 or newer) and mvn must be on the PATH. Its log is
# DIR/server.log.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
pomdir=$here/kafka
cpfile=$pomdir/target/classpath.txt

die() { echo "kafka.sh: $*" >&2; exit 1; }

# classpath resolves the broker's jars once. The classpath file is kept
# only when every jar on it is still in ~/.m2 and the pom has not changed.
classpath() {
  if [ -s "$cpfile" ] && [ "$cpfile" -nt "$pomdir/pom.xml" ]; then
    local ok=1 jar
    IFS=: read -ra jars < "$cpfile"
    for jar in "${jars[@]}"; do [ -f "$jar" ] || { ok=0; break; }; done
    [ $ok = 1 ] && { cat "$cpfile"; return; }
  fi
  command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
  local args=(-B -q -Dstyle.color=never -f "$pomdir/pom.xml" dependency:build-classpath
    -Dmdep.outputFile="$cpfile" -Dmdep.includeScope=runtime)
  mvn -o "${args[@]}" >/dev/null 2>&1 || mvn "${args[@]}" >&2 || die "Maven could not resolve the broker's jars"
  cat "$cpfile"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# ours says whether pid is the broker of DIR: a pid file left by a
# broker that died may name another process by now.
ours() { tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qF "$2/server.properties"; }
alive() { [ -f "$1/broker.pid" ] && ours "$(cat "$1/broker.pid")" "$1"; }
port_of() { sed -n 's|^advertised.listeners=PLAINTEXT://127.0.0.1:||p' "$1/server.properties"; }

# configure writes DIR/server.properties for a broker on PORT whose
# controller listens on CPORT. Each setting says why it differs from
# Kafka's default; the rest are Kafka's defaults, as in production.
configure() {
  local dir=$1 port=$2 cport=$3
  cat > "$dir/server.properties" <<EOF
# One node, broker and KRaft controller in one process (combined mode).
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
# Internal topics default to 3 replicas, which one broker cannot host: the
# first consumer group or transaction would fail. One replica, and an
# in-sync minimum of one, for the offsets, transaction state and share
# group state topics and for every topic.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
default.replication.factor=1
# Kafka makes 50 partitions of __consumer_offsets and of
# __transaction_state at their first use, which takes seconds on a small
# machine and buys nothing on one broker.
offsets.topic.num.partitions=4
transaction.state.log.num.partitions=4
# A new consumer group waits 3 s for more members before its first
# rebalance; tests start one member at a time.
group.initial.rebalance.delay.ms=0
# Transactions whose timeout has passed are aborted by a sweep every 10 s
# by default; tests of timeouts should not wait that long for it.
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
# Topics are not created on first use: production clusters switch that
# off, and kfake's default is the same, so a test (or weir) that forgets
# to create its topic fails on both brokers alike.
auto.create.topics.enable=false
# Fewer threads than the defaults (3 network, 8 I/O), for a 2-core machine
# shared with the tests.
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
# No time-based retention. Tests and benchmarks write records stamped in
# the past (the crash test from 2026-01-01, the read benchmark from 2023),
# and Kafka deletes a segment once its newest timestamp is older than
# log.retention.ms (7 days by default): its retention check, every 5
# minutes and after a restart, moved the log start past readers in the
# middle of the log, which then failed with OFFSET_OUT_OF_RANGE.
log.retention.ms=-1
EOF
  cat > "$dir/log4j2.yaml" <<EOF
Configuration:
  Appenders:
    File:
      name: file
      fileName: "$dir/server.log"
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef: [{ref: file}]
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
      - name: kafka.coordinator.transaction
        level: INFO
      - name: org.apache.kafka.coordinator.transaction
        level: INFO
EOF
}

# launch formats DIR's log if it is new and starts the JVM. The heap is
# small and the collector serial: a test broker holds little, and the
# machine has two cores.
launch() {
  local dir=$1 cp=$2
  local jvm=(java -Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Dlog4j2.configurationFile="$dir/log4j2.yaml" -cp "$cp")
  if [ ! -f "$dir/data/meta.properties" ]; then
    local id
    # A Kafka cluster id is a UUID in URL-safe base64, which starts with
    # "-" one time in 64: the storage tool's argument parser then takes it
    # for an option and the format fails. Draw again until it does not.
    id=$(python3 -c 'import base64,uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"): break
print(s)')
    "${jvm[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" > "$dir/format.log" 2>&1 ||
      { cat "$dir/format.log" >&2; die "formatting $dir failed"; }
  fi
  : > "$dir/server.log"
  setsid "${jvm[@]}" kafka.Kafka "$dir/server.properties" > "$dir/stdout.log" 2>&1 < /dev/null &
  echo $! > "$dir/broker.pid"
}

# ready waits until the broker has started and answers on PORT; 1 when it
# exited or did not start within three minutes (a cold JVM on a busy
# 2-core machine takes tens of seconds).
ready() {
  local dir=$1 port=$2
  for _ in $(seq 900); do
    alive "$dir" || return 1
    grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null && answers "$port" && return 0
    sleep 0.2
  done
  return 1
}

start() {
  local dir=${1:-$root/bin/kafka} port=${2:-}
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if alive "$dir"; then
    port=$(port_of "$dir")
    ready "$dir" "$port" || die "the broker of $dir (pid $(cat "$dir/broker.pid")) does not answer; see $dir/server.log"
    echo "127.0.0.1:$port"
    return
  fi
  local cp
  cp=$(classpath)
  local fresh=0
  if [ -f "$dir/server.properties" ] && [ -f "$dir/data/meta.properties" ]; then
    [ -z "$port" ] || [ "$port" = "$(port_of "$dir")" ] || die "$dir was made for port $(port_of "$dir"), not $port"
  else
    fresh=1
  fi
  # Ports picked free here can be taken by someone else before the JVM
  # binds them: try again with new ones.
  for attempt in 1 2 3; do
    if [ $fresh = 1 ]; then
      rm -rf "$dir/data"
      configure "$dir" "${port:-$(free_port)}" "$(free_port)"
    fi
    launch "$dir" "$cp"
    if ready "$dir" "$(port_of "$dir")"; then
      echo "127.0.0.1:$(port_of "$dir")"
      return
    fi
    stop "$dir" >/dev/null 2>&1 || true
    if [ $fresh = 1 ] && [ -z "$port" ] && grep -q "Address already in use" "$dir/server.log" "$dir/stdout.log" 2>/dev/null; then
      continue
    fi
    break
  done
  tail -30 "$dir/server.log" "$dir/stdout.log" >&2 || true
  die "the broker in $dir did not start"
}

# stop ends the broker with SIGNAL (TERM: a clean shutdown, waited for up
# to 30 s, then KILL).
stop() {
  local dir=${1:-$root/bin/kafka} sig=${2:-TERM}
  [ -f "$dir/broker.pid" ] || return 0
  dir=$(cd "$dir" && pwd)
  local pid
  pid=$(cat "$dir/broker.pid")
  if ours "$pid" "$dir"; then
    kill -s "$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 150); do ours "$pid" "$dir" || break; sleep 0.2; done
    ours "$pid" "$dir" && kill -s KILL "$pid" 2>/dev/null
    while ours "$pid" "$dir"; do sleep 0.1; done
  fi
  rm -f "$dir/broker.pid"
}

run() {
  run_dir=$1 # global: the EXIT trap runs after run returns
  shift
  [ "${1:-}" = -- ] && shift
  [ $# -gt 0 ] || die "run: no command"
  stop "$run_dir" # a broker an interrupted run left
  rm -rf "$run_dir"
  local addr status=0
  trap 'stop "$run_dir"' EXIT
  trap 'exit 130' INT TERM
  addr=$(start "$run_dir")
  WEIR_KAFKA_BROKERS=$addr "$@" || status=$?
  return $status
}

main() {
  local cmd=${1:-}
  shift || true
  case $cmd in
    start) start "$@" ;;
    stop) stop "${1:-}" ;;
    kill) stop "${1:-}" KILL ;;
    run) [ $# -ge 1 ] || die "run DIR -- CMD..."; run "$@" ;;
    classpath) classpath ;;
    *) die "usage: kafka.sh start [DIR [PORT]] | stop [DIR] | kill [DIR] | run DIR -- CMD... | classpath" ;;
  esac
}

# One call and exit, so that bash, which reads a script as it runs it,
# reads nothing of this file after a long `run` (the file may have been
# edited meanwhile).
main "$@"
exit
