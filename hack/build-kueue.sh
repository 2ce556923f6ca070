#!/usr/bin/env bash
# Builds Kueue (the controller, sigs.k8s.io/kueue/cmd/kueue at the version
# hack/kueue/go.mod pins) from the Go module proxy into bin/kueue/kueue, and
# copies from the module what a test needs to run it: its CRDs into
# bin/kueue/crds, with each conversion webhook's clientConfig filled in (the
# plain bases lack it and Kueue's CA injection waits for it; the Service is
# kueue-system/kueue-webhook-service, as Kueue's own install names it), and its
# webhook configurations into bin/kueue/webhooks.yaml. test/kueueenv points
# both at the local process by URL. The binary is rebuilt only when
# hack/kueue's go.mod or go.sum change (a stamp), the copies when this script
# does too. Prints the directory (KUEUE_ASSETS).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/hack/kueue"
out="${KUEUE_ASSETS_DIR:-$root/bin/kueue}"
mkdir -p "$out"

bin_want="$(cat "$src/go.mod" "$src/go.sum" | sha256sum | cut -d' ' -f1)"
if [[ ! -x "$out/kueue" || ! -f "$out/.kueue.stamp" || "$(cat "$out/.kueue.stamp")" != "$bin_want" ]]; then
  echo "building kueue from $src (first build takes minutes)" >&2
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/kueue.tmp" sigs.k8s.io/kueue/cmd/kueue)
  mv "$out/kueue.tmp" "$out/kueue"
  echo "$bin_want" > "$out/.kueue.stamp"
fi

assets_want="$(cat "$src/go.mod" "$src/go.sum" "$0" | sha256sum | cut -d' ' -f1)"
if [[ -d "$out/crds" && -f "$out/webhooks.yaml" && -f "$out/.assets.stamp" && "$(cat "$out/.assets.stamp")" == "$assets_want" ]]; then
  echo "$out"
  exit 0
fi
moddir="$(cd "$src" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"
rm -rf "$out/crds.tmp" && mkdir -p "$out/crds.tmp"
# The CRDs Kueue's own kustomization gives a conversion webhook
# (config/components/crd/kustomization.yaml, patches/webhook_in_*.yaml).
convert=" localqueues clusterqueues cohorts workloads multikueueclusters "
for f in "$moddir"/config/components/crd/bases/*.yaml; do
  name="$(basename "$f")"
  plural="${name#kueue.x-k8s.io_}"; plural="${plural%.yaml}"
  if [[ "$convert" == *" $plural "* ]]; then
    awk '{print} /^spec:$/ && !done {print "  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n        service:\n          name: kueue-webhook-service\n          namespace: kueue-system\n          path: /convert\n      conversionReviewVersions:\n      - v1"; done=1}' "$f" > "$out/crds.tmp/$name"
  else
    cp "$f" "$out/crds.tmp/$name"
  fi
  chmod 0644 "$out/crds.tmp/$name"
done
rm -rf "$out/crds" && mv "$out/crds.tmp" "$out/crds"
install -m 0644 "$moddir/config/components/webhook/manifests.yaml" "$out/webhooks.yaml"
echo "$assets_want" > "$out/.assets.stamp"
echo "$out"
