#!/usr/bin/env bash
# Enforces the dependency rules of the layout (README "Map", each doc.go):
#   api/...          a leaf: imports only api/... and libraries
#   dbservice/...    api/... and dbservice/...
#   runner/...       api/..., dbservice/client and runner/...
#   examples/...     api/... and examples/...
#   controllers/...  api/..., runner/client, dbservice/client and controllers/...
#   results/...      what controllers/ may import, controllers/... and results/...
#                    (results/local embeds the runner and the DB service: the
#                    in-process stack of `trial run`, `pack validate`, `regrade`)
#   test/...         anything but the root package
#   production code  never imports test/... (the root package's cmd_dev.go
#                    imports test/devcluster under the `dev` build tag only;
#                    `go list` here sees the default build, which must not)
# Flags are parsed only by package main (the root's cmd_*.go, and the
# programs under hack/ and test/): no other package imports "flag" or
# github.com/spf13/pflag, so libraries take plain Go values. Stated
# exceptions: `runner` and `dbservice`, whose Main parses the container args
# the controller writes into their pods (the pod contract, README "Map").
# Only non-test imports count: tests may reach across to exercise the real
# parts. Input: `go list` of the module, or the file named by $IMPORTS_FILE
# (lines "PKG IMPORT IMPORT ...", PKG ending in ":main" for a package main),
# which is how its own test plants a bad edge.
set -euo pipefail
cd "$(dirname "$0")/.."
mod="$(go list -m)"
if [[ -n "${IMPORTS_FILE:-}" ]]; then
  edges="$(cat "$IMPORTS_FILE")"
else
  edges="$(go list -f '{{.ImportPath}}{{if eq .Name "main"}}:main{{end}} {{join .Imports " "}}' ./...)"
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
  if (under(from, "test"))        return to != "."
  if (from == ".")                return !under(to, "test")
  return 0
}
# The pod contract: these two parse their container args themselves.
function flagExempt(p) { return p == "runner" || p == "dbservice" }
{
  pkg = $1
  main = sub(/:main$/, "", pkg)
  from = rel(pkg)
  for (i = 2; i <= NF; i++) {
    if (($i == "flag" || $i == "github.com/spf13/pflag") && !main && !flagExempt(from)) {
      printf "flags parsed below the root: %s imports %s (parse them in package main, pass plain values)\n", from, $i; bad++
    }
    if (index($i, mod) != 1 || ($i != mod && substr($i, length(mod) + 1, 1) != "/")) continue
    to = rel($i)
    if (!allowed(from, to)) { printf "import rule broken: %s imports %s\n", from, to; bad++ }
  }
}
END { if (bad) { printf "%d import(s) break the layout rules (hack/verify-imports.sh)\n", bad; exit 1 } }
' <<<"$edges"
echo "imports follow the layout rules"
