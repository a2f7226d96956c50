# director: build, test, benchmark, demo. `make help` lists the targets.
GO        ?= go
BIN       ?= bin/director
RACE_PKGS ?= ./...
export PATH := $(shell $(GO) env GOPATH)/bin:$(PATH)

.PHONY: help build install test test-race lint bench demo deps clean fuzz

help:
	@echo "make build   build $(BIN)"
	@echo "make install build and install it as $(PREFIX)/bin/director (PREFIX=/usr/local; sudo when needed)"
	@echo "make test    install what is missing, lint, all tests (real Chromium, real S3 server, real SQLite), race tests"
	@echo "make bench   benchmarks against tar czf / tar -I zstd, S3 and workflow overhead"
	@echo "make demo    install what is missing, build, and run the whole story on a local demo site"
	@echo "make fuzz    run each fuzz target for FUZZTIME (default 30s)"

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/director

PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/director

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: deps lint
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)

test-race:
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)

FUZZTIME ?= 30s
fuzz:
	$(GO) test ./snapshot/ -run '^$$' -fuzz '^FuzzRestore$$' -fuzztime $(FUZZTIME)
	$(GO) test ./snapshot/ -run '^$$' -fuzz '^FuzzParseManifest$$' -fuzztime $(FUZZTIME)

# bench prints every figure the issues ask for, each measured side by side in
# one run: archive create/restore against tar czf and tar -I zstd (150 MB and
# 600 MB trees), snapshot+upload and download+restore against a local S3
# server with and without encryption, and a 20-step workflow against plain
# chromedp. About 10 minutes on a quiet 2-core machine.
bench: deps
	$(GO) run ./bench -size 150
	$(GO) run ./bench -size 600 -reps 1 -chromium ""
	$(GO) run ./bench_store -size 600
	$(GO) run ./bench_workflow -n 5
	$(GO) test -run '^$$' -bench . -benchmem ./snapshot/ ./encrypt/ ./storage/

# deps installs what the tests and the demo need on a Debian machine.
deps:
	@bash .ci/deps

demo: build
	@DIRECTOR_DEPS_S3=0 bash .ci/deps
	@bash scripts/demo.sh $(BIN)

clean:
	rm -rf bin
