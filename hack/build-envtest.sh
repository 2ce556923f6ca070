#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver, etcd) from the Go module
# proxy into bin/k8s, skipping binaries that are already built for the pinned
# versions. Prints the directory to use as KUBEBUILDER_ASSETS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${ENVTEST_ASSETS_DIR:-$root/bin/k8s}"
mkdir -p "$out"

build() { # name module-dir package
  local name="$1" src="$2" pkg="${3:-.}"
  local stamp="$out/.$name.stamp"
  local want
  want="$(cat "$src/go.mod" "$src/go.sum" "$src/$pkg/main.go" | sha256sum | cut -d' ' -f1)"
  if [[ -x "$out/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  echo "building $name from $src (first build takes minutes)" >&2
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "$want" > "$stamp"
}

build etcd "$root/hack/envtest/etcd"
build kube-apiserver "$root/hack/envtest/kube-apiserver"
build kubectl "$root/hack/envtest/kube-apiserver" ./kubectl
echo "$out"
