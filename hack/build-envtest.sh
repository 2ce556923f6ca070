#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver, etcd) from the Go module
# proxy into bin/k8s, skipping binaries that are already built for the pinned
# versions. Prints the directory to use as KUBEBUILDER_ASSETS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
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

build() { # name module-dir package
  local name="$1" src="$2" pkg="${3:-.}"
  local stamp="$out/.$name.stamp"
  local want
  want="$(cat "$src/go.mod" "$src/go.sum" "$src/$pkg/main.go" <(echo "$ldflags") | sha256sum | cut -d' ' -f1)"
  if [[ -x "$out/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  echo "building $name from $src (first build takes minutes)" >&2
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "$want" > "$stamp"
}

build etcd "$root/hack/envtest/etcd"
build kube-apiserver "$root/hack/envtest/kube-apiserver"
build kubectl "$root/hack/envtest/kube-apiserver" ./kubectl
echo "$out"
