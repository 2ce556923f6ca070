#!/usr/bin/env bash
# Builds Kueue (the controller, sigs.k8s.io/kueue/cmd/kueue at the version
# hack/kueue/go.mod pins) from the Go module proxy into bin/kueue/kueue, and
# copies from the module what a test needs to run it: its CRDs into
# bin/kueue/crds, with each conversion webhook's clientConfig filled in (the
# plain bases lack it and Kueue's CA injection waits for it; the Service is
# kueue-system/kueue-webhook-service, as Kueue's own install names it), and its
# webhook configurations into bin/kueue/webhooks.yaml. test/kueueenv points
# both at the local process by URL. Both live in the machine's cache
# (hack/cache.sh) and are linked into bin/kueue: the binary keyed by
# hack/kueue's go.mod and go.sum and the Go version, the copies by those and
# this script. Prints the directory (KUEUE_ASSETS).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/cache.sh"
src="$root/hack/kueue"
out="${KUEUE_ASSETS_DIR:-$root/bin/kueue}"
mkdir -p "$out"

# shellcheck disable=SC2016
tf_cached "kueue/kueue-$(tf_key "$src/go.mod" "$src/go.sum")" "$out/kueue" \
  bash -c 'cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$TF_OUT" sigs.k8s.io/kueue/cmd/kueue' _ "$src"

# assets DIR: DIR/crds and DIR/webhooks.yaml from the Kueue module.
assets() {
  local dir="$1" moddir
  moddir="$(cd "$src" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"
  mkdir -p "$dir/crds"
  # The CRDs Kueue's own kustomization gives a conversion webhook
  # (config/components/crd/kustomization.yaml, patches/webhook_in_*.yaml).
  local convert=" localqueues clusterqueues cohorts workloads multikueueclusters " f name plural
  for f in "$moddir"/config/components/crd/bases/*.yaml; do
    name="$(basename "$f")"
    plural="${name#kueue.x-k8s.io_}"; plural="${plural%.yaml}"
    if [[ "$convert" == *" $plural "* ]]; then
      awk '{print} /^spec:$/ && !done {print "  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n        service:\n          name: kueue-webhook-service\n          namespace: kueue-system\n          path: /convert\n      conversionReviewVersions:\n      - v1"; done=1}' "$f" > "$dir/crds/$name"
    else
      cp "$f" "$dir/crds/$name"
    fi
    chmod 0644 "$dir/crds/$name"
  done
  install -m 0644 "$moddir/config/components/webhook/manifests.yaml" "$dir/webhooks.yaml"
}
export -f assets
export src
# shellcheck disable=SC2016
tf_cached "kueue/assets-$(tf_key "$src/go.mod" "$src/go.sum" "$0")" "$out/assets" bash -c 'set -euo pipefail; assets "$TF_OUT"'
# bin/kueue of a checkout from before the cache holds real copies.
[[ -L "$out/crds" ]] || rm -rf "$out/crds"
ln -sfn assets/crds "$out/crds"
ln -sfn assets/webhooks.yaml "$out/webhooks.yaml"
echo "$out"
