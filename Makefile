# kubectl-lanaccess. `make help` lists the targets.
SHELL := /usr/bin/env bash
GO ?= go
BIN := bin/kubectl-lanaccess
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w \
  -X github.com/lanaccess/kubectl-lanaccess/pkg/version.version=$(VERSION) \
  -X github.com/lanaccess/kubectl-lanaccess/pkg/version.commit=$(COMMIT) \
  -X github.com/lanaccess/kubectl-lanaccess/pkg/version.date=$(DATE)
GOLANGCI_LINT_VERSION := v2.15.0
LAB := $(GO) run ./lab/cmd/lab
# The plugin runs inside the lab's laptop namespace so that every packet, the system resolver's
# included, stays in the lab.
LAB_STATE ?= $(or $(LAB_STATE_DIR),/run/kubectl-lanaccess-lab)
PREFIX ?= /usr/local

.PHONY: help build install test test-unit test-lab bench lint fuzz lab-up lab-down lab-status demo release-check tidy-check clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/kubectl-lanaccess
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubectl-lanaccess

install: build ## install the plugin as $(PREFIX)/bin/kubectl-lanaccess (kubectl finds it on PATH)
	install -m 0755 $(BIN) $(PREFIX)/bin/kubectl-lanaccess

test: test-unit test-lab ## the whole suite: unit tests, then the lab tests on a real cluster (root)

bench: build ## doctor vs the manual procedure on the lab: healthy, dead address, 30 addresses, 2,000 Services/10,000 pods, start-up (root, ~13 min)
	[ "$$(id -u)" = 0 ] || { echo "the lab needs root (network namespaces)"; exit 1; }
	bash lab/install-deps.sh
	$(LAB) up
	$(GO) run ./lab/cmd/bench $(BENCH_ARGS)

test-unit: ## unit tests (no root, no lab); the first run builds promtool (the monitor's rules) into ~/.cache
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

test-lab: ## bring the lab up (cached binaries) and run the lab tests against it
	[ "$$(id -u)" = 0 ] || { echo "the lab needs root (network namespaces)"; exit 1; }
	bash lab/install-deps.sh
	$(LAB) up
	$(GO) test -count=1 -tags lab -timeout 45m -p 1 ./lab/...

lint: ## golangci-lint, pinned
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

fuzz: ## a short run of every fuzz target
	$(GO) test ./pkg/corefile -run '^$$' -fuzz FuzzParse -fuzztime 20s
	$(GO) test ./pkg/procnet -run '^$$' -fuzz FuzzParse -fuzztime 20s

lab-up: ## start the lab (idempotent); prints the kubeconfig and how to run the plugin
	bash lab/install-deps.sh
	$(LAB) up

lab-down: ## remove every namespace, process, rule and file the lab made
	$(LAB) down

lab-status: ## show what the lab runs
	$(LAB) status

demo: build lab-up ## the main job on the lab: doctor and vpn-trace, run from the lab's LAN laptop
	@echo; echo "$$ kubectl lanaccess doctor --ca-file $(LAB_STATE)/pki/ca.crt"
	@ip netns exec laptop $(BIN) doctor --kubeconfig $(LAB_STATE)/kubeconfig --ca-file $(LAB_STATE)/pki/ca.crt || true
	@echo; echo "$$ kubectl lanaccess vpn-trace -n vpn --from-client"
	@ip netns exec laptop $(BIN) vpn-trace -n vpn --from-client --kubeconfig $(LAB_STATE)/kubeconfig || true

release-check: ## goreleaser check and a snapshot build
	$(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1 check
	$(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1 release --snapshot --clean --skip=publish
	bash krew/render.sh dist dist/krew/lanaccess.yaml
	bash krew/validate.sh krew/lanaccess.yaml dist/krew/lanaccess.yaml

tidy-check: ## fail when go mod tidy would change go.mod or go.sum
	$(GO) mod tidy && git diff --exit-code go.mod go.sum

clean: ## remove build outputs
	rm -rf bin dist
