#!/usr/bin/env bash
# Sourced by the build scripts: the machine-level cache of built artifacts.
#
# Everything the suites need that takes minutes to build (kube-apiserver,
# etcd, the node binaries, kube-router, Kueue, CoreDNS, the images and their
# .debs, the pinned Go tools) lives once per machine under
# ${TOLOKAFORGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tolokaforge}, each under
# a key made of what built it (module files, versions, flags, the Go version),
# so a clean clone on a machine that built once finds it, and a changed
# source rebuilds only what it changes. A clone's bin/ holds symlinks into it.
# Writers build under a temporary name and rename, so two runs at once never
# see a half-written artifact (the loser of a race drops its copy).
# `make clean-cache` removes the whole cache.

tf_cache_root="${TOLOKAFORGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tolokaforge}"
tf_go_version="$(go env GOVERSION 2>/dev/null || echo unknown)/$(go env GOARCH 2>/dev/null || echo unknown)"

# tf_key FILE|-... : a short digest of the files (and stdin for "-") plus the
# Go toolchain, the part of a cache key that says what built the artifact.
tf_key() {
  { echo "$tf_go_version"; for f in "$@"; do if [[ "$f" == - ]]; then cat; else cat "$f"; fi; done; } |
    sha256sum | cut -c1-20
}

# tf_cached KEY DEST CMD...: makes DEST a symlink to the cache entry KEY (a
# path under the cache root, file or directory), running CMD first when the
# entry is missing. CMD writes the entry at "$TF_OUT" (a temporary path in
# the cache's filesystem). Logs "cache: reusing KEY" or "cache: built KEY in
# N s" on stderr, so a run's log says what it rebuilt.
tf_cached() {
  local key="$1" dest="$2"
  shift 2
  local path="$tf_cache_root/$key"
  if [[ -e "$path" ]]; then
    echo "cache: reusing $key" >&2
  else
    mkdir -p "$(dirname "$path")"
    local tmp="$path.tmp.$$.$RANDOM" t0=$SECONDS
    rm -rf "$tmp"
    echo "cache: building $key (first build of this key on this machine)" >&2
    if ! TF_OUT="$tmp" "$@"; then
      rm -rf "$tmp"
      echo "cache: building $key failed" >&2
      return 1
    fi
    # rename(2) is atomic; a directory a concurrent run renamed first makes
    # mv -T fail, and that run's copy (built from the same key) is kept.
    mv -T "$tmp" "$path" 2>/dev/null || rm -rf "$tmp"
    echo "cache: built $key in $((SECONDS - t0)) s" >&2
  fi
  if [[ -n "$dest" ]]; then
    mkdir -p "$(dirname "$dest")"
    ln -sfn "$path" "$dest"
  fi
}

# tf_go_binary KIND NAME MODULE-DIR PACKAGE-DIR LDFLAGS DEST: a static Go
# binary of the package at MODULE-DIR/PACKAGE-DIR, keyed by the module's
# go.mod and go.sum, the package's main.go, the flags and the Go toolchain.
tf_go_binary() {
  local kind="$1" name="$2" mod="$3" pkg="$4" flags="$5" dest="$6"
  # shellcheck disable=SC2016
  tf_cached "$kind/$name-$(tf_key "$mod/go.mod" "$mod/go.sum" "$mod/$pkg/main.go" - <<<"$flags")" "$dest" \
    bash -c 'cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags="$2" -o "$TF_OUT" "./$3"' _ "$mod" "$flags" "$pkg"
}

# tf_tree_key: a key of every file of the checkout git would commit (tracked
# or not ignored, as they are on disk now; a symlink by its target), for the
# artifacts built from the project's own source.
tf_tree_key() {
  git ls-files -z --cached --others --exclude-standard | sort -zu |
    while IFS= read -r -d '' f; do
      if [[ -L "$f" ]]; then
        printf 'link %s %s\n' "$f" "$(readlink "$f")"
      elif [[ -f "$f" ]]; then
        printf 'file %s\n' "$f"
        cat "$f"
      fi
    done | tf_key -
}
