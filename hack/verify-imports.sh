#!/usr/bin/env bash
# Enforces the dependency rules of the layout (docs/architecture.md, each doc.go):
#   api/...          a leaf: imports only api/... and libraries
#   dbservice/...    api/... and dbservice/...
#   runner/...       api/..., dbservice/client and runner/...
#   examples/...     api/... and examples/...
#   controllers/...  api/..., runner/client, dbservice/client and controllers/...
#   results/...      what controllers/ may import, controllers/... and results/...
#                    (results/local embeds the runner and the DB service: the
#                    in-process stack of `trial run`, `pack validate`, `regrade`)
#   cmd/...          the command line (cmd/tolokaforge and its package cli):
#                    anything but test/...; nothing outside cmd/ imports it
#   test/...         anything but cmd/...
#   production code  never imports test/... One stated exception: in the
#                    `-tags dev` build (`make demo`) cmd/tolokaforge/cli's
#                    dev.go imports test/devcluster; both builds are
#                    checked, so the default build must not, and nothing
#                    else under test/ may be imported by the dev build
# Flags are parsed only by the main programs (cmd/..., whose package cli is
# the binary's command line, and the programs under hack/ and test/): no
# other package imports "flag" or github.com/spf13/pflag (nor cobra), so
# libraries take plain Go values. Stated exceptions: `runner` and
# `dbservice`, whose Main parses the container args the controller writes
# into their pods (the pod contract, docs/architecture.md).
# Only non-test imports count: tests may reach across to exercise the real
# parts. Input: `go list` of the module's default and `-tags dev` builds, or
# the files named by $IMPORTS_FILE and $IMPORTS_FILE_DEV (lines "PKG IMPORT
# IMPORT ...", PKG ending in ":main" for a package main), which is how its own
# test plants a bad edge.
set -euo pipefail
cd "$(dirname "$0")/.."
mod="$(go list -m)"
if [[ -n "${IMPORTS_FILE:-}${IMPORTS_FILE_DEV:-}" ]]; then
  edges="$(cat "${IMPORTS_FILE:-/dev/null}")"
  dev_edges="$(cat "${IMPORTS_FILE_DEV:-/dev/null}")"
else
  format='{{.ImportPath}}{{if eq .Name "main"}}:main{{end}} {{join .Imports " "}}'
  edges="$(go list -f "$format" ./...)"
  dev_edges="$(go list -tags dev -f "$format" ./...)"
fi
awk -v mod="$mod" '
function rel(p) { return p == mod ? "." : substr(p, length(mod) + 2) }
function under(p, dir) { return p == dir || index(p, dir "/") == 1 }
function allowed(from, to) {
  if (under(from, "api"))         return under(to, "api")
  if (under(from, "dbservice"))   return under(to, "api") || under(to, "dbservice")
  if (under(from, "runner"))      return under(to, "api") || under(to, "runner") || to == "dbservice/client"
  if (under(from, "examples"))    return under(to, "api") || under(to, "examples")
  if (under(from, "controllers")) return under(to, "api") || under(to, "controllers") || to == "runner/client" || to == "dbservice/client"
  if (from == "results/local" && (under(to, "runner") || under(to, "dbservice"))) return 1
  if (under(from, "results"))     return under(to, "api") || under(to, "controllers") || under(to, "results") || to == "runner/client" || to == "dbservice/client"
  if (under(to, "cmd"))           return under(from, "cmd")
  if (under(from, "test"))        return 1
  if (under(from, "cmd"))         return !under(to, "test") || (dev && from == "cmd/tolokaforge/cli" && to == "test/devcluster")
  return 0
}
# The command line (cmd/...) parses flags; so do, as the pod contract, the
# runner and the DB service their container args.
function flagExempt(p) { return under(p, "cmd") || p == "runner" || p == "dbservice" }
function isFlagLib(p) { return p == "flag" || p == "github.com/spf13/pflag" || p == "github.com/spf13/cobra" }
# The dev build follows the default build (after a "#dev" line);
# an edge both builds break is reported once, for the default build.
$0 == "#dev" { dev = 1; build = " (-tags dev)"; next }
{
  pkg = $1
  main = sub(/:main$/, "", pkg)
  from = rel(pkg)
  for (i = 2; i <= NF; i++) {
    if (dev && ((from SUBSEP $i) in seen)) continue
    seen[from, $i] = 1
    if (isFlagLib($i) && !main && !flagExempt(from)) {
      printf "flags parsed below the root%s: %s imports %s (parse them in package main, pass plain values)\n", build, from, $i; bad++
    }
    if (index($i, mod) != 1 || ($i != mod && substr($i, length(mod) + 1, 1) != "/")) continue
    to = rel($i)
    if (!allowed(from, to)) { printf "import rule broken%s: %s imports %s\n", build, from, to; bad++ }
  }
}
END { if (bad) { printf "%d import(s) break the layout rules (hack/verify-imports.sh)\n", bad; exit 1 } }
' <<<"$edges"$'\n#dev\n'"$dev_edges"
echo "imports follow the layout rules"
