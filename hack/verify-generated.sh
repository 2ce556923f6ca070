#!/usr/bin/env bash
# Regenerates everything derived from sources (gRPC code, deepcopy, CRDs, RBAC)
# and fails when the result differs from the files on disk, restoring them, so a
# stale generated file can never land.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
paths=(api/runnerpb api/execagentpb api/v1alpha1/zz_generated.deepcopy.go config/crd/bases config/rbac)
saved="$(mktemp -d)"
trap 'rm -rf "$saved"' EXIT
for p in "${paths[@]}"; do
  mkdir -p "$saved/$(dirname "$p")"
  cp -a "$p" "$saved/$p"
done
make -s generate manifests >/dev/null
status=0
for p in "${paths[@]}"; do
  if ! diff -r "$saved/$p" "$p" >/tmp/verify-generated.diff 2>&1; then
    echo "stale generated files under $p (run 'make generate manifests'):" >&2
    head -50 /tmp/verify-generated.diff >&2
    status=1
  fi
done
if [[ $status -ne 0 ]]; then
  for p in "${paths[@]}"; do rm -rf "$p"; cp -a "$saved/$p" "$p"; done
  exit 1
fi
echo "generated code and manifests are up to date"
