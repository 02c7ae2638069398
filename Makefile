# weir's build. `make run` runs an example pipeline on embedded weir;
# `make test` runs the tests.
GO ?= go
BIN := bin

.PHONY: all build run test vet fmt vr vr-prism bench

all: build

build:
	$(GO) build -o $(BIN)/weir ./cmd/weir

run:
	$(GO) run ./pipelines/wordcount --runner=weir

vet:
	$(GO) vet ./...

test: vet
	$(GO) test ./...
