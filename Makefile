# limbo's build. The README's two commands are `make run` and `make test`.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

BIN            := $(CURDIR)/bin
GO             ?= go
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT  := $(BIN)/golangci-lint
GOTEST_FLAGS   ?= -race -count=1
# The integration tests start one control plane per package; run packages one at a
# time so that two API servers never compete for the machine's two cores. Within a
# package, the tests that call t.Parallel (most: they wait on polls) run 6 at a time.
IT_FLAGS       ?= -p 1 -parallel 6 -timeout 30m
# The soak's long form (make soak); the short form runs with the integration tests.
SOAK_OPS       ?= 1500
SOAK_SEED      ?= 0
# `make run` starts a second control plane, a workload cluster for deorbit
# (examples/deorbit); RUN_ARGS= runs one.
RUN_ARGS       ?= --clusters 2

export LIMBO_BIN_DIR := $(BIN)

.PHONY: build
build: ## Build limbo, kubectl-limbo (with its kubectl completion script) and limbo-bench into bin/.
	$(GO) build -o $(BIN)/ ./cmd/...
	install -m 0755 cmd/kubectl-limbo/kubectl_complete-limbo $(BIN)/

# The version of the release archives of `make dist`: the tag being released.
VERSION        ?= $(shell git describe --tags --always --dirty)

.PHONY: dist
dist: ## Build kubectl-limbo's release archives, one per krew platform, and their checksums into dist/ (VERSION=v1.2.3).
	build/dist.sh $(VERSION) dist

.PHONY: cluster-bins
cluster-bins: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl from pinned modules (idempotent).
	build/cluster-bins.sh

$(CONTROLLER_GEN): build/tools/go.mod build/tools/go.sum
	cd build/tools && $(GO) build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

# golangci-lint is pinned in its own module (build/lint) and built once into bin/.
$(GOLANGCI_LINT): build/lint/go.mod build/lint/go.sum
	cd build/lint && $(GO) build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code and the CRDs in crds/.
	$(CONTROLLER_GEN) object paths=./pkg/apis/... crd:crdVersions=v1 output:crd:artifacts:config=crds

.PHONY: verify
verify: ## Fail when generated files are stale, code is unformatted, go.mod is not tidy, or go vet or golangci-lint complains.
	@snapshot=$$(mktemp -d); trap 'rm -rf "$$snapshot"' EXIT; \
	  cp -r crds "$$snapshot/crds"; find pkg/apis -name 'zz_generated*.go' -exec cp --parents {} "$$snapshot/" \; ; \
	  $(MAKE) --no-print-directory generate; \
	  if ! diff -r "$$snapshot/crds" crds >/dev/null || ! (cd "$$snapshot" && find pkg -name 'zz_generated*.go' | while read f; do cmp -s "$$f" "$(CURDIR)/$$f" || exit 1; done); then \
	    echo "verify: generated files were stale; they are regenerated now: commit them"; exit 1; fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "verify: not gofmt-formatted:"; echo "$$unformatted"; exit 1; fi
	@# go.mod and go.sum list what the code imports, no more and no less.
	@$(GO) mod tidy -diff >/dev/null 2>&1 || { echo "verify: go.mod or go.sum is not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	$(GO) vet ./...
	$(MAKE) --no-print-directory lint
	@echo "verify: ok"

.PHONY: test
test: verify cluster-bins ## Everything CI runs: verify, unit tests and integration tests, with -race.
	$(GO) test $(GOTEST_FLAGS) ./cmd/... ./pkg/...
	$(GO) test $(GOTEST_FLAGS) $(IT_FLAGS) ./it/...

.PHONY: unit
unit: ## Unit tests only.
	$(GO) test $(GOTEST_FLAGS) ./cmd/... ./pkg/...

.PHONY: it
it: cluster-bins ## Integration tests only.
	$(GO) test $(GOTEST_FLAGS) $(IT_FLAGS) ./it/...

.PHONY: run
run: cluster-bins build ## Start a local control plane with limbo's CRDs, the controller and the API simulators; Ctrl-C stops it.
	@echo "make run: kubectl is in bin/: export PATH=$(BIN):\$$PATH"
	$(BIN)/limbo dev --simulators $(RUN_ARGS)

.PHONY: bench
bench: cluster-bins ## Benchmark on a local control plane: converge (throttled and unthrottled) vs the raw-apply floor, no-op cost, deletion lateness, memory (docs/performance.md); BENCH_ARGS="-preset large" for 1,000 × 10.
	$(GO) build -o $(BIN)/ ./cmd/limbo ./cmd/limbo-bench
	$(BIN)/limbo-bench -limbo-bin $(BIN)/limbo $(BENCH_ARGS)

.PHONY: bench-peers
bench-peers: cluster-bins ## make bench plus kro (pinned in build/kro, built into bin/ on first use) converging the same workload, side by side; flags via BENCH_ARGS.
	$(GO) build -o $(BIN)/ ./cmd/limbo ./cmd/limbo-bench
	read -r crds version < <(build/kro.sh); \
	  $(BIN)/limbo-bench -limbo-bin $(BIN)/limbo -kro-bin $(BIN)/kro -kro-crds "$$crds" -kro-version "$$version" $(BENCH_ARGS)

.PHONY: soak
soak: cluster-bins ## The long soak (docs/reliability.md): SOAK_OPS operations (default 1500), random controller kills; SOAK_SEED=<seed> replays a run.
	LIMBO_SOAK_OPS=$(SOAK_OPS) LIMBO_SOAK_SEED=$(SOAK_SEED) $(GO) test -count=1 -timeout 120m -v -run 'TestSoak(Routes)?$$' ./it/soak

# FUZZ_TARGETS are package:target pairs; `make fuzz` runs each for FUZZTIME.
FUZZ_TARGETS := pkg/reference:FuzzResolvePath pkg/reference:FuzzSubstitute pkg/softdelete:FuzzParseDelay \
	pkg/softdelete:FuzzDecide pkg/softdelete:FuzzItemSetDecide \
	pkg/bundlespec:FuzzParse pkg/plugins:FuzzValidateSpec
FUZZTIME     ?= 2m

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 2m); their seed corpora also run in make test.
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz: $${t#*:} in ./$${t%%:*} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*} || exit 1; \
	done

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
