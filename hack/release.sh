#!/usr/bin/env bash
# Writes $DIST/install.yaml: config/default with the manager's image set to
# $IMG the way a user would (kustomize edit set image in config/manager), on a
# copy, so the checkout is never edited. config/default's replacement carries
# the image into $TOLOKAFORGE_IMAGE, the runner and dbservice pods' image.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
: "${IMG:?IMG is required, e.g. tolokaforge:v0.1.0}"
: "${DIST:?DIST is required}"
kustomize="${KUSTOMIZE:-$root/bin/kustomize}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/config"
for d in crd rbac manager default; do cp -R "$root/config/$d" "$work/config/$d"; done
(cd "$work/config/manager" && "$kustomize" edit set image "tolokaforge=$IMG")
mkdir -p "$DIST"
"$kustomize" build "$work/config/default" > "$DIST/install.yaml.tmp"
mv "$DIST/install.yaml.tmp" "$DIST/install.yaml"
echo "wrote $DIST/install.yaml (image $IMG)"
