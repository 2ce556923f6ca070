#!/usr/bin/env bash
# Builds the node components of the e2e cluster (kubelet, kube-scheduler,
# kube-controller-manager, kube-proxy) from k8s.io/kubernetes through the Go
# module proxy into bin/node, as hack/build-envtest.sh builds kube-apiserver and
# etcd into bin/k8s, and kube-router (v2.1.0's network policy controller alone,
# the cluster's NetworkPolicy enforcer, from hack/kuberouter, a module of its
# own; test clusters only), each into the machine's cache (hack/cache.sh)
# keyed by its module files, flags and Go version and linked into bin/node: a
# binary this machine already built from the same inputs is reused. CoreDNS runs as a pod: hack/e2e.sh
# builds its image from hack/coredns.
# Also builds the harness CLI (bin/node/cluster) and the pause image. Prints the
# directory. Run it under `nice`: the first build takes minutes on two cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/cache.sh"
out="${NODE_ASSETS_DIR:-$root/bin/node}"
src="$root/hack/node"
k8s_version="v1.37.2"
mkdir -p "$out"

# Without the stamp every binary reports v0.0.0-master+$Format:%H$, and the
# node's kubeletVersion would say so.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

build() { # name [module-dir package-dir]
  tf_go_binary node "$1" "${2:-$src}" "${3:-$1}" "$ldflags" "$out/$1"
}

for name in ${NODE_COMPONENTS:-kubelet kube-proxy kube-scheduler kube-controller-manager kube-router}; do
  if [[ "$name" == coredns ]]; then
    build coredns "$root/hack/coredns" .
  elif [[ "$name" == kube-router ]]; then
    build kube-router "$root/hack/kuberouter" .
  else
    build "$name"
  fi
done
echo "$out"
