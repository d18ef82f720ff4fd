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
GORELEASER_VERSION := v2.15.1
# Release tools, built once per version from the Go module proxy (krew's: krew/install_test.go).
TOOLS := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubectl-lanaccess/tools
GORELEASER := $(TOOLS)/goreleaser-$(GORELEASER_VERSION)/goreleaser
# The release's SBOM (syft) and signature (cosign) tools, called by goreleaser from PATH.
SYFT_VERSION := v1.57.2
COSIGN_VERSION := v2.6.5
SYFT := $(TOOLS)/syft-$(SYFT_VERSION)/syft
COSIGN := $(TOOLS)/cosign-$(COSIGN_VERSION)/cosign
RELEASE_PATH := PATH=$(dir $(SYFT)):$(dir $(COSIGN)):$$PATH
IMAGE_REPOSITORY ?= ghcr.io/lanaccess/kubectl-lanaccess
# goreleaser reads the repository's URL from its git remote and, without one (a local clone),
# knows neither the commit nor its date: give it the project's URL through git's environment.
GORELEASER_ENV := $(if $(shell git remote 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/lanaccess/kubectl-lanaccess.git)
LAB := $(GO) run ./lab/cmd/lab
# The plugin runs inside the lab's laptop namespace so that every packet, the system resolver's
# included, stays in the lab.
LAB_STATE ?= $(or $(LAB_STATE_DIR),/run/kubectl-lanaccess-lab)
# The lab's kubectl, built with its control plane (lab/versions.env).
LAB_KUBECTL := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubectl-lanaccess/lab/kubernetes-$(shell sed -n 's/^K8S_VERSION=//p' lab/versions.env)/kubectl
PREFIX ?= /usr/local

.PHONY: help build install test test-unit test-lab bench lint fuzz lab-up lab-down lab-status demo docs replays image release-check release tidy-check clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/kubectl-lanaccess
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubectl-lanaccess

install: build ## install the plugin and its completion helper in $(PREFIX)/bin (kubectl finds both on PATH)
	install -m 0755 $(BIN) $(PREFIX)/bin/kubectl-lanaccess
	install -m 0755 cmd/kubectl_complete-lanaccess/kubectl_complete-lanaccess $(PREFIX)/bin/kubectl_complete-lanaccess

# The lab is one instance and its tests run one at a time, waiting on the network far more than
# they compute: the unit tests (vet, then the race detector) run beside them on the idle CPU,
# niced so that the lab's processes and the plugin's probes come first; their log is printed
# once both are done.
test: ## the whole suite (root): the lab tests on a real cluster (Traefik's forwardAuth cases are proven there), the unit tests beside them
	[ "$$(id -u)" = 0 ] || { echo "the lab needs root (network namespaces)"; exit 1; }
	mkdir -p bin
	nice -n 10 $(MAKE) --no-print-directory test-unit > $(CURDIR)/bin/test-unit.log 2>&1 & unit=$$!; \
	  $(MAKE) --no-print-directory test-lab; rc=$$?; \
	  wait $$unit; rc2=$$?; echo "== make test-unit:"; cat $(CURDIR)/bin/test-unit.log; [ $$rc = 0 ] && [ $$rc2 = 0 ]

bench: build ## doctor vs the manual procedure on the lab: healthy, dead address, 30 addresses, 2,000 Services/10,000 pods, start-up (root, ~13 min)
	[ "$$(id -u)" = 0 ] || { echo "the lab needs root (network namespaces)"; exit 1; }
	bash lab/install-deps.sh
	$(LAB) up
	$(GO) run ./lab/cmd/bench $(BENCH_ARGS)

# The packages whose code runs goroutines, or lends its buffers to client-go's and net/http's:
# their tests run again under the race detector (issue 23: the exec output cap raced; issue 27:
# LA402's lookup begun with the run, vpn-trace's MTU sweeps beside the next hops).
RACE_PKGS := ./pkg/engine/ ./pkg/kube/... ./pkg/probe/... ./checks/netpath/ ./checks/vpn/... ./cmd/kubectl-lanaccess/internal/cli/ ./cmd/kubectl-lanaccess/internal/monitor/

test-unit: ## unit tests (no root, no lab), then the race detector on the packages with goroutines; the first run builds promtool (the monitor's rules) into ~/.cache
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -race -count=1 -timeout 30m $(RACE_PKGS)

# Every doctor, vpn-trace (--from-client included) and client-check run of the lab tests is also recorded and replayed offline to
# the same verdicts (docs/replay.md); REPLAY_EVERY=0 turns it off.
REPLAY_EVERY ?= 1

test-lab: ## bring the lab up (cached binaries) and run the lab tests against it
	[ "$$(id -u)" = 0 ] || { echo "the lab needs root (network namespaces)"; exit 1; }
	bash lab/install-deps.sh
	$(LAB) up
	@# checks/config's lab tests run the cached CoreDNS only, not the lab: they run beside the
	@# lab's own tests (which wait on the network more than they compute), one at a time.
	mkdir -p bin
	LANACCESS_REPLAY_EVERY=$(REPLAY_EVERY) $(GO) test -count=1 -tags lab -timeout 20m ./checks/config/ > $(CURDIR)/bin/test-lab-coredns.log 2>&1 & coredns=$$!; \
	  LANACCESS_REPLAY_EVERY=$(REPLAY_EVERY) $(GO) test -count=1 -tags lab -timeout 45m -p 1 ./lab/...; rc=$$?; \
	  wait $$coredns; rc2=$$?; cat $(CURDIR)/bin/test-lab-coredns.log; [ $$rc = 0 ] && [ $$rc2 = 0 ]

lint: ## golangci-lint, pinned, with .golangci.yml (the lab's tests included)
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

# Every fuzz target of the module, found by `go test -list` (it prints a package's matching
# names, then "ok <package>"), so that a new target is fuzzed without editing this file.
FUZZTIME ?= 10s
fuzz: ## run every fuzz target of the module, each for FUZZTIME (default 10s)
	@set -euo pipefail; mkdir -p bin; \
	targets="$$($(GO) test -vet=off -list '^Fuzz' ./... | \
		awk '/^Fuzz/ { t[n++] = $$1; next } /^ok / { for (i = 0; i < n; i++) print $$2, t[i]; n = 0 }')"; \
	[ -n "$$targets" ] || { echo "fuzz: no fuzz target found" >&2; exit 1; }; \
	echo "fuzz: $$(wc -l <<< "$$targets") targets, $(FUZZTIME) each"; \
	while read -r pkg target; do \
		echo "fuzz: $$pkg $$target"; \
		for try in 1 2; do \
			if $(GO) test "$$pkg" -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) < /dev/null > bin/fuzz.log 2>&1; then \
				cat bin/fuzz.log; break; \
			fi; \
			cat bin/fuzz.log; \
			if [ $$try = 1 ] && grep -q '^    context deadline exceeded$$' bin/fuzz.log && ! grep -q 'Failing input written\|panic:\|_test.go:' bin/fuzz.log; then \
				echo "fuzz: Go's coordinator race at the -fuzztime boundary (go.dev/issue/75804, fixed in Go 1.27), no failing input: once more"; \
				continue; \
			fi; \
			exit 1; \
		done; \
	done <<< "$$targets"

lab-up: ## start the lab (idempotent); prints the kubeconfig and how to run the plugin
	bash lab/install-deps.sh
	$(LAB) up

lab-down: ## remove every namespace, process, rule and file the lab made
	$(LAB) down

lab-status: ## show what the lab runs
	$(LAB) status

demo: build lab-up ## the main job on the lab: doctor and vpn-trace, run from the lab's LAN laptop
	@echo; echo "$$ kubectl lanaccess manifests rbac-doctor | kubectl apply -f -"
	@echo "$$ kubectl lanaccess manifests rbac-helpers | kubectl apply -f -   # opt-in: LA201's helper pods"
	@{ $(BIN) manifests rbac-doctor; echo ---; $(BIN) manifests rbac-helpers; } | $(LAB_KUBECTL) --kubeconfig $(LAB_STATE)/kubeconfig apply -f - >/dev/null
	@echo; echo "$$ kubectl lanaccess doctor --ca-file $(LAB_STATE)/pki/ca.crt"
	@ip netns exec laptop $(BIN) doctor --kubeconfig $(LAB_STATE)/kubeconfig --ca-file $(LAB_STATE)/pki/ca.crt || true
	@echo; echo "$$ kubectl lanaccess vpn-trace -n vpn --from-client"
	@ip netns exec laptop $(BIN) vpn-trace -n vpn --from-client --kubeconfig $(LAB_STATE)/kubeconfig || true

image: ## the container image of this checkout (linux/amd64, linux/arm64; tag "dev" unless a release) as an OCI layout in bin/image
	rm -rf bin/image
	for arch in amd64 arm64; do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/linux_$$arch/kubectl-lanaccess ./cmd/kubectl-lanaccess || exit 1; \
	done
	$(GO) run ./cmd/build-image --binary linux/amd64=bin/linux_amd64/kubectl-lanaccess --binary linux/arm64=bin/linux_arm64/kubectl-lanaccess --out bin/image

$(GORELEASER):
	GOBIN=$(dir $@) GOFLAGS=-trimpath $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

$(SYFT):
	GOBIN=$(dir $@) GOFLAGS=-trimpath $(GO) install github.com/anchore/syft/cmd/syft@$(SYFT_VERSION)

$(COSIGN):
	GOBIN=$(dir $@) GOFLAGS=-trimpath $(GO) install github.com/sigstore/cosign/v2/cmd/cosign@$(COSIGN_VERSION)

# The snapshot signs checksums.txt with a throwaway key pair made here (bin/snapshot-key, no
# password, never a release's key); the attest test verifies it with the public half.
release-check: $(GORELEASER) $(SYFT) $(COSIGN) ## snapshot archives, SBOMs, signed checksums and krew manifest (goreleaser), the image from them, krew installing every archive
	$(GORELEASER) check
	rm -rf bin/snapshot-key && mkdir -p bin/snapshot-key
	cd bin/snapshot-key && COSIGN_PASSWORD= $(COSIGN) generate-key-pair
	$(RELEASE_PATH) COSIGN_PASSWORD= COSIGN_KEY="$$(cat bin/snapshot-key/cosign.key)" $(GORELEASER_ENV) $(GORELEASER) release --snapshot --clean --skip=publish
	$(GO) run ./cmd/build-image --dist dist --out dist/image
	DIST=$(CURDIR)/dist SYFT=$(SYFT) COSIGN=$(COSIGN) COSIGN_PRIVATE_KEY=$(CURDIR)/bin/snapshot-key/cosign.key COSIGN_PUBLIC_KEY=$(CURDIR)/bin/snapshot-key/cosign.pub \
	  $(GO) test -count=1 -tags release -timeout 30m -v -run 'TestGoreleasersKrewManifest|TestTheReleaseImage|TestEveryArchiveHasAnSBOM|TestTheChecksumsAreSigned|TestTheImageIsSigned' ./krew/ ./pkg/release/image/ ./pkg/release/attest/

release: $(GORELEASER) $(SYFT) $(COSIGN) ## on a v* tag, in CI (OIDC token for keyless signing): publish the archives, SBOMs, signed checksums and the krew manifest (goreleaser), then push the image (docker credentials)
	$(RELEASE_PATH) $(GORELEASER) release --clean
	set -o pipefail; $(GO) run ./cmd/build-image --dist dist --out dist/image --push $(IMAGE_REPOSITORY) | tee dist/image-push.txt
	@# The pushed index signed keyless, and each platform's SBOM (syft, from the layout) attested
	@# on it; pkg/release/attest does the same with the snapshot's key against a test registry.
	set -euo pipefail; ref="$$(sed -n 's/^pushed //p' dist/image-push.txt)"; [ -n "$$ref" ]; \
	  $(COSIGN) sign --yes "$$ref"; \
	  for p in linux/amd64 linux/arm64; do \
	    f="dist/image.$${p/\//_}.spdx.json"; \
	    SYFT_CHECK_FOR_APP_UPDATE=false $(SYFT) scan oci-dir:dist/image --platform "$$p" -o "spdx-json=$$f"; \
	    $(COSIGN) attest --yes --type spdxjson --predicate "$$f" "$$ref"; \
	  done

# Every generated page: the catalogue's (docs/catalogue) and the commands' reference (docs/man,
# docs/cli: cobra's doc generator). The same tests, without -update, fail when a page is stale.
docs: ## regenerate the generated docs: catalogue pages, man pages and the commands' reference
	$(GO) test -count=1 ./checks/catalogue ./cmd/kubectl-lanaccess/internal/cli -run 'Pages' -update

replays: ## re-record the lab's replay cases (testdata/replays: bundles and verdicts) after a change to what the commands ask (root)
	[ "$$(id -u)" = 0 ] || { echo "the lab needs root (network namespaces)"; exit 1; }
	bash lab/install-deps.sh
	$(LAB) up
	LANACCESS_REPLAY_SAVE=$(CURDIR)/testdata/replays $(GO) test -count=1 -tags lab -timeout 15m -p 1 ./lab/e2e/ -run 'TestReplayGivesTheLiveVerdicts|TestRealWorkstation$$'

tidy-check: ## fail, showing the diff, when go mod tidy would change go.mod or go.sum (never writes them)
	$(GO) mod tidy -diff

clean: ## remove build outputs
	rm -rf bin dist
