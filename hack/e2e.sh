#!/usr/bin/env bash
# `make e2e`: builds what is missing (node binaries and kube-router, the pause
# image, CoreDNS's image, the project's images, the fake LLM's image, Kueue's
# image and install, dist/install.yaml), brings up the single-node cluster of
# test/nodecluster, runs the e2e suite against it and tears it down, also
# when the suite fails or is interrupted. Needs root (containerd, kubelet,
# iptables).
#
# Everything built lands in the machine's cache (hack/cache.sh) under a key
# of what built it; the project's own artifacts (its images, the fake LLM's,
# bin/e2e/tolokaforge) are keyed by the checkout's source files, so a second
# clone of the same commit rebuilds nothing. Each stage is timed.
# E2E_BENCH_TRIALS sets the benchmark Campaign's size (CI's default 40;
# make e2e-full runs 100). E2E_BUILD_ONLY=1 (make e2e-build) stops once
# everything is built: it warms a machine's cache without a cluster.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source hack/cache.sh
[[ "$(id -u)" == 0 ]] || { echo "e2e: needs root (it runs containerd, kubelet and kube-proxy)" >&2; exit 2; }
export TIMINGS="$root/bin/e2e-timings.txt"
# stage NAME CMD...: runs CMD in this shell (errexit applies; a failure ends
# the script) and records its time; the EXIT trap records a failed stage.
stage_name="" stage_t0=0
stage() {
  stage_name="$1" stage_t0=$SECONDS
  shift
  echo "== $stage_name" >&2
  "$@"
  hack/timed.sh record "$stage_name" $((SECONDS - stage_t0)) 0
  stage_name=""
}
teardown="" # set once the cluster may exist
on_exit() {
  local rc=$?
  [[ -n "$stage_name" ]] && hack/timed.sh record "$stage_name" $((SECONDS - stage_t0)) "$rc"
  if [[ -n "$teardown" ]]; then
    local t0=$SECONDS
    $teardown || rc=$?
    hack/timed.sh record "cluster down" $((SECONDS - t0)) "$rc"
  fi
  hack/timed.sh summary
  exit "$rc"
}
hack/timed.sh reset
trap on_exit EXIT

missing=()
# ipset: kube-router, which enforces NetworkPolicy on the node, needs it;
# docker-registry: the cluster's image registry (test/nodecluster).
for p in containerd runc containernetworking-plugins iptables ipset docker-registry; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "e2e: installing ${missing[*]} (Debian)" >&2
  install_debs() { (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null; }
  stage "apt-get install" install_debs
fi
# The harness itself first, against the real containerd: a checkout at a
# long path, a process that exits before it is ready (seconds; it must not skip).
stage "nodecluster tests" env E2E_REQUIRE_NODE=1 go test -count=1 ./test/nodecluster/

build_binaries() {
  k8s_bin="$(nice -n 10 hack/build-envtest.sh)"
  node_bin="$(nice -n 10 hack/build-node.sh)"
  nice -n 10 hack/build-kueue.sh >/dev/null
  go build -o "$node_bin/cluster" ./test/nodecluster/cmd/cluster
}
stage "build binaries (envtest, node, kube-router, kueue)" build_binaries
version="$(sed -n 's/^var version = "\(.*\)"$/\1/p' cmd/tolokaforge/version.go)"
img_dir="$root/bin/image"
arch="$(go env GOARCH)"
python_debs="python3 python3-yaml python3-pydantic python3-email-validator"

# Cache keys. The image tool's own sources shape every image; the project's
# artifacts are keyed by every file of the checkout git would commit.
image_tool_key="$(cat hack/image/go.mod hack/image/go.sum hack/image/*.go | tf_key -)"
src_key="$(tf_key - <<<"$(tf_tree_key) $image_tool_key $version")"

make_image() { # make-target image-name [make vars]...
  local target="$1" name="$2" tmp
  shift 2
  tmp="$(mktemp -d "$TF_OUT.d.XXXX")"
  nice -n 10 make --no-print-directory "$target" IMAGE_DIR="$tmp" "$@" >/dev/null &&
    mv "$tmp/$name.tar" "$TF_OUT"
  local rc=$?
  rm -rf "$tmp"
  return $rc
}
image_single() { # module package ref
  (cd hack/image && nice -n 10 go run . single --module "$1" --package "$2" --ref "$3" --tarball "$TF_OUT" >/dev/null)
}
fetch_debs() {
  (cd hack/image && go run . debs --cache "$TF_OUT" --arch "$arch" $python_debs)
}
build_cli() {
  CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$TF_OUT" ./cmd/tolokaforge
}
kueue_install() {
  local src
  src="$(cd hack/kueue && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"
  "$root/bin/kustomize" build "$src/config/default" > "$TF_OUT"
}

# The image, the Python runner image (Debian's python3, .debs fetched once
# per machine) and dist/install.yaml; bin/e2e/tolokaforge, for the suite's
# `pack import` as a user runs it, is built with the image binary's flags,
# so it costs a link, not a second build of every package.
build_images() {
  make --no-print-directory "$root/bin/kustomize" >/dev/null
  tf_cached "debs/$arch-$(tf_key - <<<"$python_debs")" "$root/bin/debs/$arch" fetch_debs
  tf_cached "images/tolokaforge-$src_key.tar" "$img_dir/tolokaforge.tar" make_image image tolokaforge
  tf_cached "images/tolokaforge-python-$src_key.tar" "$img_dir/tolokaforge-python.tar" \
    make_image image-python tolokaforge-python DEB_CACHE="$root/bin/debs/$arch/"
  tf_cached "e2e/tolokaforge-$src_key" "$root/bin/e2e/tolokaforge" build_cli
  nice -n 10 make --no-print-directory release >/dev/null
  tf_cached "images/pause-$image_tool_key.tar" "$img_dir/pause.tar" \
    bash -c 'cd hack/image && go run . pause --tarball "$TF_OUT" >/dev/null'
  # The fake OpenAI-compatible LLM (test/fakellm) as a pod: the judged
  # Trial's provider, reached by its Service name.
  tf_cached "images/fakellm-$src_key.tar" "$img_dir/fakellm.tar" \
    image_single "$root" ./test/fakellm/cmd/fakellm "$fakellm_image"
  # CoreDNS (hack/coredns) as the kube-system pod the runners' NetworkPolicy
  # admits DNS to; test/nodecluster names this image.
  tf_cached "images/coredns-$(cat hack/coredns/go.mod hack/coredns/go.sum hack/coredns/*.go <(echo "$image_tool_key") | tf_key -).tar" \
    "$img_dir/coredns.tar" image_single "$root/hack/coredns" tolokaforge.io/hack/coredns tolokaforge.local/coredns:1
  # Kueue v0.17.0 as a pod: the binary hack/build-kueue.sh builds, as a
  # single-binary image, and Kueue's own install (its config/default)
  # rendered with kustomize; the suite adapts it as a cluster admin would.
  local kueue_key
  kueue_key="$(cat hack/kueue/go.mod hack/kueue/go.sum <(echo "$image_tool_key") | tf_key -)"
  tf_cached "images/kueue-$kueue_key.tar" "$img_dir/kueue.tar" \
    image_single "$root/hack/kueue" sigs.k8s.io/kueue/cmd/kueue "$kueue_image"
  tf_cached "kueue/install-$(tf_key - <<<"$kueue_key $(readlink -f "$root/bin/kustomize")")" \
    "$root/bin/kueue/install.yaml" kueue_install
}
fakellm_image="tolokaforge.local/fakellm:1"
kueue_image="tolokaforge.local/kueue:v0.17.0"
stage "build images" build_images
# debian:bookworm-slim made from Debian's packages (mmdebstrap) into
# buildah's storage, so a terminal task's unmodified `FROM
# debian:bookworm-slim` builds offline; cached in the machine cache.
stage "base images" nice -n 10 hack/base-images.sh
if [[ "${E2E_BUILD_ONLY:-0}" == 1 ]]; then
  echo "e2e: everything the suite needs is built (E2E_BUILD_ONLY=1: no cluster)" >&2
  exit 0
fi

dir="$root/bin/cluster"
cluster() { "$node_bin/cluster" "$@" --dir "$dir" --k8s-bin "$k8s_bin" --node-bin "$node_bin"; }
cluster down   # a cluster an earlier run left behind (killed before its trap)
teardown="cluster down"
cluster_up() {
  kubeconfig="$(cluster up --image "$img_dir/pause.tar" --image "$img_dir/tolokaforge.tar" \
    --image "$img_dir/tolokaforge-python.tar" --image "$img_dir/fakellm.tar" --image "$img_dir/coredns.tar" \
    --image "$img_dir/kueue.tar")"
  containerd_sock="$("$node_bin/cluster" containerd --dir "$dir")"
  # The node's registry (its storage is in the machine cache: images that
  # `pack build` pushed in an earlier run are reused by digest).
  registry="$("$node_bin/cluster" registry --dir "$dir")"
}
stage "cluster up" cluster_up

stage "e2e suite (E2E_BENCH_TRIALS=${E2E_BENCH_TRIALS:-40})" env E2E_KUBECONFIG="$kubeconfig" E2E_KUBECTL="$k8s_bin/kubectl" E2E_IMAGE="tolokaforge:$version" \
  E2E_PYTHON_IMAGE="tolokaforge:$version-python" E2E_FAKELLM_IMAGE="$fakellm_image" \
  E2E_KUEUE_IMAGE="$kueue_image" E2E_KUEUE_MANIFEST="$root/bin/kueue/install.yaml" E2E_TOLOKAFORGE="$root/bin/e2e/tolokaforge" \
  E2E_CLUSTER_DIR="$dir" E2E_BENCH_OUT="$root/bin/e2e-bench.txt" E2E_BENCH_JSON="$root/bin/e2e-bench.json" \
  E2E_CONTAINERD="$containerd_sock" E2E_REGISTRY="$registry" E2E_TASKS="${E2E_TASKS:+$(realpath "$E2E_TASKS")}" \
  go test -count=1 -v -timeout 40m ./test/e2e/ -ginkgo.v ${E2E_FLAGS:-}
