#!/usr/bin/env bash
# `make e2e`: builds what is missing (node binaries and kube-router, the pause
# image, CoreDNS's image, the project's images, the fake LLM's image,
# dist/install.yaml),
# brings up the single-node cluster of test/nodecluster, runs the e2e suite
# against it and tears it down, also when the suite fails or is interrupted.
# Needs root (containerd, kubelet, iptables).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
[[ "$(id -u)" == 0 ]] || { echo "e2e: needs root (it runs containerd, kubelet and kube-proxy)" >&2; exit 2; }

missing=()
# ipset: kube-router, which enforces NetworkPolicy on the node, needs it.
for p in containerd runc containernetworking-plugins iptables ipset; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "e2e: installing ${missing[*]} (Debian)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
fi

k8s_bin="$(nice -n 10 hack/build-envtest.sh)"
node_bin="$(nice -n 10 hack/build-node.sh)"
go build -o "$node_bin/cluster" ./test/nodecluster/cmd/cluster
version="$(sed -n 's/^var version = "\(.*\)"$/\1/p' cmd/tolokaforge/version.go)"
img_dir="$root/bin/image"
# The image, the Python runner image (Debian's python3, .debs cached in
# bin/debs) and dist/install.yaml; bin/e2e/tolokaforge, for the suite's
# `pack import` as a user runs it, is built with the image binary's flags, so
# it costs a link, not a second build of every package.
nice -n 10 make --no-print-directory image image-python release >/dev/null
CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$root/bin/e2e/tolokaforge" ./cmd/tolokaforge
(cd hack/image && go run . pause --tarball "$img_dir/pause.tar" >/dev/null)
# The fake OpenAI-compatible LLM (test/fakellm) as a pod: the judged Trial's
# provider, reached by its Service name.
fakellm_image="tolokaforge.local/fakellm:1"
(cd hack/image && nice -n 10 go run . single --module "$root" --package ./test/fakellm/cmd/fakellm \
  --ref "$fakellm_image" --tarball "$img_dir/fakellm.tar" >/dev/null)

# CoreDNS (hack/coredns) as the kube-system pod the runners' NetworkPolicy
# admits DNS to; test/nodecluster names this image.
(cd hack/image && nice -n 10 go run . single --module "$root/hack/coredns" --package tolokaforge.io/hack/coredns \
  --ref tolokaforge.local/coredns:1 --tarball "$img_dir/coredns.tar" >/dev/null)
# Kueue v0.17.0 as a pod: the binary hack/build-kueue.sh builds, as a
# single-binary image, and Kueue's own install (its config/default) rendered
# with kustomize; the suite adapts it as a cluster admin would.
kueue_image="tolokaforge.local/kueue:v0.17.0"
nice -n 10 hack/build-kueue.sh >/dev/null
(cd hack/image && nice -n 10 go run . single --module "$root/hack/kueue" --package sigs.k8s.io/kueue/cmd/kueue \
  --ref "$kueue_image" --tarball "$img_dir/kueue.tar" >/dev/null)
kueue_src="$(cd hack/kueue && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"
"$root/bin/kustomize" build "$kueue_src/config/default" > "$root/bin/kueue/install.yaml"

dir="$root/bin/cluster"
cluster() { "$node_bin/cluster" "$@" --dir "$dir" --k8s-bin "$k8s_bin" --node-bin "$node_bin"; }
cluster down   # a cluster an earlier run left behind (killed before its trap)
trap 'cluster down' EXIT
kubeconfig="$(cluster up --image "$img_dir/pause.tar" --image "$img_dir/tolokaforge.tar" \
  --image "$img_dir/tolokaforge-python.tar" --image "$img_dir/fakellm.tar" --image "$img_dir/coredns.tar" \
  --image "$img_dir/kueue.tar")"

E2E_KUBECONFIG="$kubeconfig" E2E_KUBECTL="$k8s_bin/kubectl" E2E_IMAGE="tolokaforge:$version" \
E2E_PYTHON_IMAGE="tolokaforge:$version-python" E2E_FAKELLM_IMAGE="$fakellm_image" \
E2E_KUEUE_IMAGE="$kueue_image" E2E_KUEUE_MANIFEST="$root/bin/kueue/install.yaml" E2E_TOLOKAFORGE="$root/bin/e2e/tolokaforge" \
E2E_CLUSTER_DIR="$dir" E2E_BENCH_OUT="$root/bin/e2e-bench.txt" \
E2E_CONTAINERD="$dir/containerd/containerd.sock" \
  go test -count=1 -v -timeout 40m ./test/e2e/ -ginkgo.v ${E2E_FLAGS:-}
