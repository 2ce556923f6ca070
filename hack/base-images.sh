#!/usr/bin/env bash
# `make base-images`: the base images terminal tasks' Dockerfiles start
# FROM, made from Debian's packages (no image registry is reachable from
# this machine; Debian's mirror is), and put into buildah's local storage
# under the name the Dockerfiles use, so `tolokaforge pack build` (buildah
# bud --pull=missing) finds them offline.
#
#   docker.io/library/debian:bookworm-slim  mmdebstrap --variant=minbase,
#       docs, man pages, info and locales trimmed as the official slim
#       image trims them (the dpkg excludes stay in the image, so packages
#       a Dockerfile installs are trimmed too), APT sources as the official
#       image has them (bookworm, bookworm-updates, bookworm-security).
#
# Each image is an OCI archive in the machine cache (hack/cache.sh), keyed by
# the suite, this script's text and the mirror's Release date (the ISO week
# when the mirror does not answer), so a second run only re-imports it, and
# not even that when buildah's storage holds the image of the same key
# (its label io.tolokaforge.base-key). Prints each image's name and key.
# Needs root (buildah's storage, mmdebstrap's root mode); installs
# mmdebstrap, buildah and docker-registry with apt-get when missing.
# BASE_SUITES (default bookworm) and DEBIAN_MIRROR override.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source hack/cache.sh
[[ "$(id -u)" == 0 ]] || { echo "base-images: needs root (buildah's storage, mmdebstrap)" >&2; exit 2; }

missing=()
for p in mmdebstrap buildah docker-registry uidmap; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "base-images: installing ${missing[*]} (Debian)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
fi

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
script_text="$(cat "$root/hack/base-images.sh")"

# build_debian SUITE: the rootfs tar of mmdebstrap, committed as a one-layer
# image and written to $TF_OUT as an OCI archive.
build_debian() {
  local suite="$1" name="$2" key="$3" tmp ctr
  tmp="$(mktemp -d)"
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  nice -n 10 mmdebstrap --quiet --variant=minbase --format=tar --skip=output/dev \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    "$suite" "$tmp/rootfs.tar" \
    "deb $mirror $suite main" "deb $mirror $suite-updates main" "deb $security $suite-security main" >&2
  ctr="$(buildah from scratch)"
  buildah add --quiet "$ctr" "$tmp/rootfs.tar" / >/dev/null
  buildah config --cmd '["bash"]' --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --label io.tolokaforge.base-key="$key" --os linux --arch "$(go env GOARCH 2>/dev/null || dpkg --print-architecture)" "$ctr"
  buildah commit --quiet --rm "$ctr" "$name" >/dev/null
  buildah push --quiet "$name" "oci-archive:$TF_OUT:$name" >&2
}

# import NAME KEY ARCHIVE: into buildah's storage unless the image of that
# key is there already.
import() {
  local name="$1" key="$2" archive="$3" have
  have="$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "io.tolokaforge.base-key"}}' "$name" 2>/dev/null || true)"
  if [[ "$have" == "$key" ]]; then
    echo "base-images: $name (key $key) already in buildah's storage" >&2
    return
  fi
  local t0=$SECONDS id
  id="$(buildah pull --quiet "oci-archive:$archive" | tail -1)"
  buildah tag "$id" "$name"
  echo "base-images: imported $name (key $key) in $((SECONDS - t0)) s" >&2
}

for suite in ${BASE_SUITES:-bookworm}; do
  name="docker.io/library/debian:$suite-slim"
  release="$(curl -fsS --max-time 10 "$mirror/dists/$suite/Release" 2>/dev/null | sed -n 's/^Date: //p' | head -1 || true)"
  [[ -n "$release" ]] || release="week $(date -u +%G-W%V)"
  key="$(tf_key - <<<"$suite $mirror $security $release $script_text")"
  tf_cached "base-images/debian-$suite-slim-$key.oci.tar" "" build_debian "$suite" "$name" "$key"
  import "$name" "$key" "$tf_cache_root/base-images/debian-$suite-slim-$key.oci.tar"
  echo "$name $key"
done
