#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver, etcd, kubectl) from the Go
# module proxy into the machine's cache (hack/cache.sh), keyed by the module
# files, main package, flags and Go version, and links them into bin/k8s: a
# binary already built on this machine for the pinned versions is reused.
# Prints the directory to use as KUBEBUILDER_ASSETS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/cache.sh"
out="${ENVTEST_ASSETS_DIR:-$root/bin/k8s}"
mkdir -p "$out"

# The apiserver reports a real version (not v0.0.0-master+$Format:%H$): clients
# that parse it, Kueue among them, refuse the placeholder.
k8s_version="$(awk '$1 == "k8s.io/kubernetes" {print $2}' "$root/hack/envtest/kube-apiserver/go.mod")"
ldflags="-s -w"
if [[ -n "$k8s_version" ]]; then
  minor="$(echo "$k8s_version" | cut -d. -f2)"
  ldflags+=" -X k8s.io/component-base/version.gitVersion=$k8s_version"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
fi

build() { # name module-dir package-dir
  tf_go_binary k8s "$1" "$2" "${3:-.}" "$ldflags" "$out/$1"
}

build etcd "$root/hack/envtest/etcd"
build kube-apiserver "$root/hack/envtest/kube-apiserver"
build kubectl "$root/hack/envtest/kube-apiserver" ./kubectl
echo "$out"
