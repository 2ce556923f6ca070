# Tolokaforge operator. `make demo` runs the main job locally, `make test` runs
# everything CI runs. Every tool is installed into bin/ from the Go module proxy
# (or Debian's packages for protoc), pinned below.

SHELL := /usr/bin/env bash -o pipefail
ROOT := $(abspath .)
BIN := $(ROOT)/bin
export PATH := $(BIN):$(PATH)
export GOBIN := $(BIN)
# The machine-level cache of built artifacts (hack/cache.sh): a clean clone on
# a machine that built once reuses them; `make clean-cache` removes it.
TF_CACHE ?= $(or $(TOLOKAFORGE_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tolokaforge)
export TOLOKAFORGE_CACHE := $(TF_CACHE)

PROTOC_GEN_GO_VERSION ?= v1.36.12
PROTOC_GEN_GO_GRPC_VERSION ?= v1.6.2
CONTROLLER_GEN_VERSION ?= v0.23.0
STATICCHECK_VERSION ?= v0.8.2
SPEC_PROTO ?= $(ROOT)/../shared/spec/runner.proto

GO_TEST_FLAGS ?= -race -count=1
# Suites that start a control plane (they skip, saying why, without KUBEBUILDER_ASSETS).
ENVTEST_PKGS = ./api/v1alpha1/... ./controllers/... ./test/podsim/... ./test/kueueenv/...
ENVTEST_PKG_RE = /api/v1alpha1(/|$$)|/controllers(/|$$)|/test/podsim(/|$$)|/test/kueueenv(/|$$)
# The Kueue suites (controllers/kueue, test/kueueenv) also need Kueue itself:
# hack/build-kueue.sh builds it once into bin/kueue (KUEUE_ASSETS).

.PHONY: all help build docs tools protoc python-deps generate manifests verify-generated verify-proto verify-imports \
        vet lint test test-unit test-envtest envtest kueue bench fuzz demo clean build-dev

all: build

help: ## Show the targets, by section.
	@awk 'BEGIN {FS = ":.*## "} \
	  /^## ---- / {s = $$0; sub(/^## ---- /, "", s); sub(/ -+$$/, "", s); printf "\n%s\n", s} \
	  /^[a-zA-Z_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

## ---- main ------------------------------------------------------------------
build: ## Build the tolokaforge binary into bin/, and beside it tolokaforge-toolexec (the runner's tool limits wrapper) and tolokaforge-execagent (static: PID 1 of a terminal task's container).
	go build -o $(BIN)/tolokaforge ./cmd/tolokaforge
	go build -o $(BIN)/tolokaforge-toolexec ./runner/proc/toolexec
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o $(BIN)/tolokaforge-execagent ./cmd/tolokaforge-execagent

build-dev: ## bin/tolokaforge-dev: the binary plus `dev` (links envtest, the pod simulator and the fake LLM), and tolokaforge-toolexec.
	go build -tags dev -o $(BIN)/tolokaforge-dev ./cmd/tolokaforge
	go build -o $(BIN)/tolokaforge-toolexec ./runner/proc/toolexec

## ---- tools ----------------------------------------------------------------
tools: protoc python-deps $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/controller-gen $(BIN)/staticcheck ## Install protoc (Debian) and the pinned Go tools.

# python-deps: Debian's python3 with pydantic and email-validator, which the
# Python tool host's tests and the upstream packs' tools (food_delivery_2) need,
# and grpcio and protobuf, which the runner's foreign (Python) gRPC client test needs.
python-deps:
	@test -x /usr/bin/python3 && /usr/bin/python3 -c 'import pydantic, email_validator, pytest, yaml, grpc, google.protobuf' 2>/dev/null || { \
	  echo "installing python3, python3-pydantic, python3-email-validator, python3-pytest, python3-yaml, python3-grpcio, python3-protobuf (Debian)"; \
	  (apt-get update -qq && apt-get install -y -qq python3 python3-pydantic python3-email-validator python3-pytest python3-yaml python3-grpcio python3-protobuf) >/dev/null; }

protoc:
	@command -v protoc >/dev/null || { echo "installing protobuf-compiler (Debian)"; \
	  (apt-get update -qq && apt-get install -y -qq protobuf-compiler) >/dev/null; }

$(BIN)/protoc-gen-go:
	hack/go-tool.sh $@ google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(BIN)/protoc-gen-go-grpc:
	hack/go-tool.sh $@ google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(BIN)/controller-gen:
	hack/go-tool.sh $@ sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
$(BIN)/staticcheck:
	hack/go-tool.sh $@ honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## ---- code generation --------------------------------------------------------
generate: protoc $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/controller-gen ## Regenerate gRPC code and deepcopy.
	hack/generate-proto.sh
	controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...

manifests: $(BIN)/controller-gen ## Regenerate CRDs and RBAC under config/.
	controller-gen crd:allowDangerousTypes=true rbac:roleName=tolokaforge-manager \
	  paths=./api/... paths=./controllers/... \
	  output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

verify-proto: ## The proto must stay byte-identical to the spec's.
	@if [[ -f "$(SPEC_PROTO)" ]]; then cmp api/runnerpb/runner.proto "$(SPEC_PROTO)" \
	  && echo "runner.proto is byte-identical to the spec"; \
	else echo "spec proto not found at $(SPEC_PROTO); skipping byte check"; fi

docs: ## Regenerate docs/cli (the command reference) from the command tree; make test fails when it is stale.
	go run -tags dev ./cmd/gendocs docs/cli

verify-generated: verify-proto tools ## Fail when generated code or manifests are stale.
	hack/verify-generated.sh

## ---- checks -----------------------------------------------------------------
verify-imports: ## Fail when an import breaks the layout rules (api/ a leaf, ...).
	hack/verify-imports.sh

# -race: vet compiles every dependency to type-check against it; with the
# tests' own flags it compiles them once for both (on a machine with nothing
# built that was a second whole compile of Kubernetes' packages, ~15 minutes).
vet: ## go vet every package (the command line in both builds).
	go vet -race ./...
	go vet -race -tags dev ./cmd/...

lint: $(BIN)/staticcheck ## gofmt check and staticcheck.
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$unformatted" ]]; then \
	  echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	staticcheck ./...
	staticcheck -tags dev ./cmd/...

## ---- tests -----------------------------------------------------------------
envtest: ## Build kube-apiserver and etcd from source; prints KUBEBUILDER_ASSETS.
	@hack/build-envtest.sh

kueue: ## Build Kueue v0.17.0 (hack/kueue) with its CRDs and webhooks into bin/kueue; prints KUEUE_ASSETS.
	@nice -n 10 hack/build-kueue.sh

test-unit: ## Unit tests only (envtest suites skip).
	env -u KUBEBUILDER_ASSETS go test $(GO_TEST_FLAGS) ./...

test-envtest: ## The suites that run against kube-apiserver and etcd (and Kueue).
	KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" KUEUE_ASSETS="$$(hack/build-kueue.sh)" go test $(GO_TEST_FLAGS) -timeout 30m $(ENVTEST_PKGS)

# Each stage is timed (hack/timed.sh) and the summary names the slowest
# packages: the unit packages and the envtest suites run as two stages.
test: ## Everything CI runs, each stage timed.
	@hack/timed.sh reset
	@hack/timed.sh tools $(MAKE) --no-print-directory tools
	@hack/timed.sh "build envtest + kueue" bash -c 'hack/build-envtest.sh >/dev/null && hack/build-kueue.sh >/dev/null'
	@hack/timed.sh verify-generated $(MAKE) --no-print-directory verify-generated
	@hack/timed.sh verify-imports $(MAKE) --no-print-directory verify-imports
	@hack/timed.sh vet $(MAKE) --no-print-directory vet
	@hack/timed.sh lint $(MAKE) --no-print-directory lint
	@hack/timed.sh "go test (unit)" env -u KUBEBUILDER_ASSETS -u KUEUE_ASSETS \
	  go test $(GO_TEST_FLAGS) -timeout 40m $$(go list ./... | grep -v -E '$(ENVTEST_PKG_RE)')
	@hack/timed.sh "go test (envtest suites)" env KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" KUEUE_ASSETS="$$(hack/build-kueue.sh)" \
	  go test $(GO_TEST_FLAGS) -timeout 40m $(ENVTEST_PKGS)
	@# The command line again as the dev build links it (`dev`, pack validate's stand-in judge).
	@hack/timed.sh "go test (dev build)" go test $(GO_TEST_FLAGS) -tags dev -timeout 10m ./cmd/...
	@hack/timed.sh summary

## ---- measure and run ---------------------------------------------------------
bench: build ## Benchmarks; figures are printed as ratios against in-run baselines.
	KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" KUEUE_ASSETS="$$(hack/build-kueue.sh)" go test -p 1 -run '^$$' -bench . -benchmem -benchtime=$${BENCHTIME:-1x} -timeout 60m ./... | tee bin/bench.txt

.PHONY: bench-scale
bench-scale: ## A 10,000-trial campaign (not part of test or bench); prints RSS growth per 1,000 trials.
	BENCH_SCALE=1 KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test -run '^$$' -bench '^BenchmarkCampaignScale$$' -benchtime=1x -timeout 120m ./controllers/campaign

fuzz: ## Run every fuzz target briefly (seeds also run as regression cases in `make test`).
	@for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-10s} $$pkg || exit 1; \
	  done; done

.PHONY: e2e node
node: ## Build kubelet, kube-proxy, kube-scheduler, kube-controller-manager and kube-router (bin/node) from source.
	@nice -n 10 hack/build-node.sh

e2e: ## Single-node cluster on this machine (containerd, runc, CNI; root), the e2e suite, teardown (CI's benchmark sizes).
	hack/e2e.sh

.PHONY: e2e-build
e2e-build: ## Build everything make e2e needs into the machine cache, without a cluster.
	E2E_BUILD_ONLY=1 hack/e2e.sh

.PHONY: e2e-full
e2e-full: ## make e2e with the full benchmark sizes (a 100-Trial Campaign instead of CI's 40).
	E2E_BENCH_TRIALS=$${E2E_BENCH_TRIALS:-100} hack/e2e.sh

.PHONY: base-images
base-images: ## Base images for terminal tasks' Dockerfiles (debian:bookworm-slim) from Debian's packages (mmdebstrap), cached, into buildah's storage (root).
	hack/base-images.sh

.PHONY: clean-cache
clean-cache: ## Remove the machine-level build cache ($(TF_CACHE)); bin/'s links into it then rebuild on use.
	rm -rf "$(TF_CACHE)"

demo: build-dev ## Start a local control plane and run the sample trials.
	KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" hack/demo.sh

clean: ## Remove the binary and benchmark output.
	rm -rf bin/tolokaforge bin/tolokaforge-dev bin/tolokaforge-toolexec bin/tolokaforge-execagent bin/bench.txt cover.out

## ---- image and release --------------------------------------------------------
# The image is built without a Docker daemon by hack/image (go-containerregistry,
# pinned in hack/image/go.mod, a module of its own so the operator's go.mod stays
# free of it). The version is `var version` in cmd/tolokaforge/version.go: the image tag, the
# chart's appVersion and config/manager's newTag (test/release checks they agree).
KUSTOMIZE_VERSION ?= v5.8.2
HELM_VERSION ?= v3.22.0
VERSION ?= $(shell sed -n 's/^var version = "\(.*\)"$$/\1/p' $(ROOT)/cmd/tolokaforge/version.go)
IMAGE_NAME ?= tolokaforge
IMG ?= $(IMAGE_NAME):$(VERSION)
REGISTRY ?=
IMAGE_ARCH ?= $(shell go env GOARCH)
# The Python runner image (packs' Python tools, .py MCP servers, Python
# checks): Debian's python3 and these packages with their dependencies,
# fetched once with apt-get download into $(DEB_CACHE) (hack/image debs; a
# lock file pins versions and SHA-256s) and rebuilt offline from there.
# PYTHON_BASE=REF builds on a registry image instead, for those who have one.
PYTHON_DEBS ?= python3 python3-yaml python3-pydantic python3-email-validator
DEB_CACHE ?= $(TF_CACHE)/debs/$(IMAGE_ARCH)
PYTHON_BASE ?=
IMAGE_DIR ?= $(BIN)/image
DIST ?= $(ROOT)/dist
IMAGE_TOOL = go -C $(ROOT)/hack/image run .

.PHONY: image image-python image-push release release-tools

$(BIN)/kustomize:
	hack/go-tool.sh $@ sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
$(BIN)/helm:
	hack/go-tool.sh $@ helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
release-tools: $(BIN)/kustomize $(BIN)/helm

image: ## OCI layout bin/image/tolokaforge (+ a `kind load image-archive` tarball); no Docker daemon.
	$(IMAGE_TOOL) build --source $(ROOT) --version $(VERSION) --name $(IMAGE_NAME) --arch $(IMAGE_ARCH) \
	  --out $(IMAGE_DIR)/tolokaforge --tarball $(IMAGE_DIR)/tolokaforge.tar

image-python: ## The Python runner image bin/image/tolokaforge-python from Debian's python3 (.debs cached in $(DEB_CACHE)); no registry.
ifeq ($(PYTHON_BASE),)
	$(IMAGE_TOOL) debs --cache $(DEB_CACHE) --arch $(IMAGE_ARCH) $(PYTHON_DEBS)
	$(IMAGE_TOOL) build --source $(ROOT) --version $(VERSION)-python --name $(IMAGE_NAME) --arch $(IMAGE_ARCH) \
	  --debs $(DEB_CACHE) --out $(IMAGE_DIR)/tolokaforge-python --tarball $(IMAGE_DIR)/tolokaforge-python.tar
else
	$(IMAGE_TOOL) build --source $(ROOT) --version $(VERSION)-python --name $(IMAGE_NAME) --arch $(IMAGE_ARCH) \
	  --base $(PYTHON_BASE) --out $(IMAGE_DIR)/tolokaforge-python --tarball $(IMAGE_DIR)/tolokaforge-python.tar
endif

image-push: ## Build, then push the image to $(REGISTRY)/$(IMAGE_NAME):$(VERSION) (credentials: ~/.docker/config.json).
	@[[ -n "$(REGISTRY)" ]] || { echo "image-push: set REGISTRY, e.g. make image-push REGISTRY=registry.example.com/team" >&2; exit 2; }
	$(MAKE) --no-print-directory image
	$(IMAGE_TOOL) push --layout $(IMAGE_DIR)/tolokaforge --ref $(REGISTRY)/$(IMAGE_NAME):$(VERSION)

release: $(BIN)/kustomize ## dist/install.yaml (CRDs, namespace, RBAC, manager) for $(IMG); the chart is config/helm/tolokaforge.
	KUSTOMIZE=$(BIN)/kustomize IMG=$(IMG) DIST=$(DIST) hack/release.sh
