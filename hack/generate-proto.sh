#!/usr/bin/env bash
# Regenerates api/runnerpb from api/runnerpb/runner.proto, and api/execagentpb
# from api/execagentpb/execagent.proto. runner.proto stays byte-identical to the
# spec's, whose go_package does not match our module, so its import path is
# mapped with the plugins' M option instead of editing it; execagent.proto is
# ours and names its go_package.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/bin"
pkg="tolokaforge.io/operator/api/runnerpb;runnerpb"
cd "$root/api/runnerpb"
PATH="$bin:$PATH" protoc -I . \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
  --go_out=. --go_opt=paths=source_relative --go_opt="Mrunner.proto=$pkg" \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-grpc_opt="Mrunner.proto=$pkg" \
  runner.proto
cd "$root/api/execagentpb"
PATH="$bin:$PATH" protoc -I . \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
  --go_out=. --go_opt=paths=source_relative \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
  execagent.proto
