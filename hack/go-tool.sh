#!/usr/bin/env bash
# hack/go-tool.sh DEST PACKAGE@VERSION: a pinned Go tool, built once per
# machine (and Go version) into the cache of hack/cache.sh, linked at DEST.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/cache.sh"
dest="$1" pkgver="$2"
name="$(basename "$dest")"
install_tool() {
  local gobin
  gobin="$(mktemp -d "$TF_OUT.gobin.XXXX")"
  # One binary per package; its name drops a major-version suffix (kustomize/v5).
  GOBIN="$gobin" go install "$pkgver" && mv "$gobin"/* "$TF_OUT"
  local rc=$?
  rm -rf "$gobin"
  return $rc
}
tf_cached "tools/$name-$(tf_key - <<<"$pkgver")" "$dest" install_tool
