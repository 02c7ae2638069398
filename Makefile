# weir's build. `make run` runs an example pipeline on embedded weir;
# `make test` runs the tests.
GO ?= go
BIN := bin

.PHONY: all build run test vet fmt fuzz vr vr-prism bench bench-python bench-nexmark bench-backfill bench-checkpoint

all: build

build:
	$(GO) build -o $(BIN)/weir ./cmd/weir

run:
	$(GO) run ./pipelines/wordcount --runner=weir

vet:
	$(GO) vet ./...

# The browser tests (webui, and cmd/weir's against weir serve) run in
# headless Chromium, which chromium.sh installs once; they fail, not skip,
# in make test. The Kafka tests run on kfake and on a real Kafka broker
# that kafka.sh starts for the run in bin/kafka-test (fresh each time) and
# stops after it; its subtests fail, not skip, without it. The PostgreSQL
# sink's tests run against the server postgres.sh installs and starts (and
# leaves running, for the next run: make postgres-stop); they fail, not
# skip, without it.
#
# Then the packages whose goroutines share memory run again under -race
# (docs/reliability.md has the times), on kfake.
test: vet
	internal/tools/kafka.sh run $(BIN)/kafka-test -- env WEIR_REQUIRE_KAFKA=1 \
		WEIR_REQUIRE_CHROMIUM=1 WEIR_CHROMIUM=$$(internal/tools/chromium.sh) \
		WEIR_REQUIRE_POSTGRES=1 WEIR_PG_URL=$$(internal/tools/postgres.sh start) $(GO) test ./...
	$(GO) test -race ./executor/... ./jobview/... ./telemetry/... ./webui/... \
		./fnapi/... ./checkpoint/... ./state/... ./kafka/... ./expansion/... ./internal/contain/...
	$(GO) test -race ./runner/...
	$(MAKE) vr-smoke
	$(MAKE) python-test
	$(MAKE) java-test
	$(MAKE) java-vr-smoke

# Every fuzz target (func FuzzXxx), one after another, FUZZTIME each, found
# by internal/tools/fuzz.sh; see docs/reliability.md. Not part of make test:
# plain go test runs the seeds in testdata/fuzz.
FUZZTIME ?= 1m
FUZZMINIMIZE ?= 100x
FUZZRUN ?= .
fuzz:
	FUZZTIME=$(FUZZTIME) FUZZMINIMIZE=$(FUZZMINIMIZE) FUZZRUN=$(FUZZRUN) GO=$(GO) internal/tools/fuzz.sh

# The connector conformance suite (connector/conformance) against every
# connector's sink and source, Kafka's on kfake and on a real broker that
# kafka.sh starts for the run (as make test's), PostgreSQL's on the server
# postgres.sh starts, and its table in docs/connectors.md, which it
# rewrites; the run's exit status is the suites'. make test runs the same
# tests, without the table.
CONFORMANCE_PKGS := ./kafka ./filesink ./teststream ./pgsink
.PHONY: conformance
conformance:
	rm -rf $(BIN)/conformance && mkdir -p $(BIN)/conformance
	internal/tools/kafka.sh run $(BIN)/kafka-conformance -- env WEIR_REQUIRE_KAFKA=1 \
		WEIR_REQUIRE_POSTGRES=1 WEIR_PG_URL=$$(internal/tools/postgres.sh start) \
		WEIR_CONFORMANCE_OUT=$(CURDIR)/$(BIN)/conformance $(GO) test -count=1 -run 'Conformance' $(CONFORMANCE_PKGS); \
	status=$$?; $(GO) run ./internal/tools/conformance -in $(BIN)/conformance -doc docs/connectors.md && exit $$status

# The web UI's browser tests (webui, webui/uitest) in headless Chromium.
# `make chromium` installs Debian's chromium once (internal/tools/chromium.sh)
# and prints its path; ui-test fails, rather than skips, without it.
# ui-screenshots rewrites docs/ui/*.png from the fake job of webui's test.
.PHONY: chromium ui-test ui-screenshots
chromium:
	@internal/tools/chromium.sh
ui-test:
	WEIR_REQUIRE_CHROMIUM=1 WEIR_CHROMIUM=$$(internal/tools/chromium.sh) $(GO) test ./webui/...
ui-screenshots:
	WEIR_REQUIRE_CHROMIUM=1 WEIR_CHROMIUM=$$(internal/tools/chromium.sh) WEIR_UI_SCREENSHOTS=$(CURDIR)/docs/ui \
		$(GO) test ./webui -run 'TestBrowser$$' -count=1
	WEIR_REQUIRE_CHROMIUM=1 WEIR_CHROMIUM=$$(internal/tools/chromium.sh) WEIR_UI_SCREENSHOTS=$(CURDIR)/docs/ui \
		$(GO) test ./cmd/weir -run 'TestUIStreamingJob$$' -count=1

# A real Apache Kafka broker (KRaft, one node, on loopback) for running
# the tests against by hand: `make kafka` starts it in KAFKA_DIR (or finds
# it running) and prints its address, for WEIR_KAFKA_BROKERS; the first
# start resolves Kafka's jars with Maven into ~/.m2. `make kafka-stop`
# stops it; the data stays until KAFKA_DIR is removed. See docs/kafka.md.
KAFKA_DIR ?= $(BIN)/kafka
.PHONY: kafka kafka-stop
kafka:
	@internal/tools/kafka.sh start $(KAFKA_DIR)
kafka-stop:
	@internal/tools/kafka.sh stop $(KAFKA_DIR)

# The Python side: a virtual environment with python/requirements.txt
# (apache-beam pinned), made once and reused (python/venv.sh), and the
# tests under python/ against bin/weir, bin/kfake and the PostgreSQL
# server of postgres.sh.
PYTESTFLAGS ?=
.PHONY: python-env python-test kfake kafkaoffsets testcerts
python-env:
	@python/venv.sh >/dev/null
kfake:
	$(GO) build -o $(BIN)/kfake ./internal/tools/kfake
kafkaoffsets:
	$(GO) build -o $(BIN)/kafkaoffsets ./internal/tools/kafkaoffsets
# Test certificates made at test time (internal/tools/testcerts), for the
# scripts that test TLS; no key is ever committed.
testcerts:
	$(GO) build -o $(BIN)/testcerts ./internal/tools/testcerts
python-test: build kfake kafkaoffsets testcerts python-env
	export WEIR_REQUIRE_POSTGRES=1 WEIR_PG_URL=$$(internal/tools/postgres.sh start) && \
		cd python && "$$(./venv.sh)" -m pytest -q -rs $(PYTESTFLAGS)

# ValidatesRunner: Beam's own Go runner test packages against a job server in
# strict mode (see validatesrunner/README.md). VRFLAGS passes extra flags to
# the harness, e.g. VRFLAGS='-only primitives -run TestCoGBK' or
# VRFLAGS=--update-expectations.
VR := $(GO) run ./validatesrunner/cmd/vr
VRFLAGS ?=
.PHONY: vr-smoke
vr: build
	$(VR) -runner weir -server '$(BIN)/weir serve --job-port={port}' -expect validatesrunner/expected.txt $(VRFLAGS)
	$(MAKE) vr-python
	$(MAKE) vr-java
vr-prism: prism
	$(VR) -runner prism -server '$(BIN)/prism --job_port={port} --serve_http=false' $(VRFLAGS)
	$(MAKE) vr-python-prism
	$(MAKE) vr-java-prism
.PHONY: prism vr-python vr-python-prism vr-java vr-java-prism java-vr-smoke
prism:
	$(GO) build -o $(BIN)/prism github.com/apache/beam/sdks/v2/go/cmd/prism

# Beam's Python portable-runner suite (python/weir_runner_test.py) against
# weir or Prism, in batch and with --streaming; the JUnit reports are kept
# in validatesrunner/results/ and RESULTS.md re-rendered from them. The
# run's exit status is the suite's.
PYVR = export WEIR_PY_SUITE_SERVER=$(1); cd python && \
	WEIR_PY_SUITE_STREAMING= "$$(./venv.sh)" -m pytest -q -rfEs weir_runner_test.py --junitxml=../validatesrunner/results/python-$(1).xml; \
	status=$$?; WEIR_PY_SUITE_STREAMING=1 "$$(./venv.sh)" -m pytest -q -rfEs weir_runner_test.py --junitxml=../validatesrunner/results/python-$(1)-streaming.xml; \
	status=$$((status | $$?)); cd .. && $(VR) -render-only && exit $$status
vr-python: build python-env
	$(call PYVR,weir)
vr-python-prism: prism python-env
	$(call PYVR,prism)
# Beam's Java ValidatesRunner tests (beam-sdks-java-core's test classes,
# category ValidatesRunner) through Maven Surefire against weir or Prism
# (java/vr.sh); results in validatesrunner/results/java-<runner>.json and
# RESULTS.md. Against weir the run is checked against the known failures in
# java/vr/known-weir.txt. java-vr-smoke is make test's subset: a few
# classes, a couple of minutes.
JAVA_VR_SMOKE := PAssertTest,CreateTest,FlattenTest,GroupByKeyTest$$WindowTests,ParDoTest$$BasicTests,ParDoTest$$StateTests,ParDoTest$$TimerTests,MetricsTest*,CoGroupByKeyTest,WindowingTest,TestStreamTest
vr-java: build
	java/vr.sh weir
vr-java-prism: prism
	java/vr.sh prism
java-vr-smoke: build
	VR_JAVA_NAME=smoke java/vr.sh weir '-Dtest=$(JAVA_VR_SMOKE)'
vr-smoke: build
	$(VR) -runner weir -suite smoke -server '$(BIN)/weir serve --job-port={port}' -expect validatesrunner/expected.txt $(VRFLAGS)

# Beam's Go and Python load tests on weir and Prism side by side; writes
# docs/benchmarks.md. bench-python runs the Python tests alone and rewrites
# only their section ("Python load tests").
BENCHFLAGS ?=
bench:
	$(GO) run ./pipelines/loadbench -out docs/benchmarks.md $(BENCHFLAGS)
bench-python:
	$(GO) run ./pipelines/loadbench -out docs/benchmarks.md -python-only $(BENCHFLAGS)

# Nexmark (pipelines/nexmark: Beam's queries 0 to 12 and the bounded side
# input join in Go) on weir and Prism, alternating, 3 runs each: events per
# second, job server CPU seconds and peak memory per query, into the
# "Nexmark" section of docs/benchmarks.md. 1M events a run by default;
# NEXMARKFLAGS='-nexmark-events 10000000 -nexmark-runners weir' for the
# large runs, '-nexmark-modes batch,streaming' for streaming figures too.
NEXMARKFLAGS ?=
bench-nexmark:
	$(GO) run ./pipelines/loadbench -out docs/benchmarks.md -nexmark-only $(NEXMARKFLAGS)

# A Kafka backfill (12 partitions, three days of event time at uneven
# speeds, one-minute windows per key) with watermark alignment off and on:
# prints the peak window state of each run (see docs/kafka.md).
bench-backfill:
	$(GO) test ./runner -run TestBackfillBench -count=1 -v -timeout 30m -args -backfill

# Checkpoint duration against queue depth behind a deliberately slow stage,
# aligned, unaligned and aligned-timeout: prints the table of
# docs/benchmarks.md (Checkpoints under backpressure).
bench-checkpoint:
	$(GO) test ./runner -run TestCheckpointBackpressureBench -count=1 -v -timeout 30m -args -ckbench

# pipelines/python/wordcount.py on weir, LOOPBACK and with an EXTERNAL
# worker pool (python/run_example.py).
.PHONY: run-python
run-python: build python-env
	cd python && "$$(./venv.sh)" run_example.py

# The Java side (java/, Maven, Beam Java pinned in java/pom.xml): the word
# count on weir, LOOPBACK and with an EXTERNAL Java worker pool
# (java/run.sh); java-test also checks its counts and runs the pipelines of
# org.weir.examples.Pipelines, each checked by PAssert, and Beam Java's
# KafkaIO against bin/kfake (KafkaRoundTrip). Maven's ~/.m2 is the cache:
# the first build downloads, later ones run offline.
.PHONY: run-java java-test
run-java: build
	java/run.sh example
java-test: build kfake testcerts
	java/run.sh test

# A throwaway PostgreSQL server for the PostgreSQL sink's tests
# (internal/tools/postgres.sh: Debian's postgresql, installed if missing,
# a cluster in /tmp/weir-postgres-UID on a free loopback port, fsync off).
# `make postgres` starts it unless it runs and prints its URL, which the
# tests read from WEIR_PG_URL; `make postgres-stop` stops it.
.PHONY: postgres postgres-stop
postgres:
	@internal/tools/postgres.sh start
postgres-stop:
	@internal/tools/postgres.sh stop

# The crash test with the PostgreSQL sink alone (make test runs it with
# the other crash tests): ten SIGKILLs, then the table must equal the
# expected window sums exactly.
.PHONY: crash-pg
crash-pg:
	WEIR_REQUIRE_POSTGRES=1 WEIR_PG_URL=$$(internal/tools/postgres.sh start) \
		$(GO) test ./pipelines/crashjob -run 'TestCrashExactlyOncePostgres$$' -count=1 -v -timeout 15m
