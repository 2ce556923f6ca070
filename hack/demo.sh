#!/usr/bin/env bash
# `make demo`: starts `tolokaforge dev` (local control plane + manager + pod
# simulator), applies config/samples (the shop Task, oracle Trials, and a Task
# whose golden path is deliberately wrong), waits for every Trial to complete,
# and prints `kubectl get trials` and one trial's status. The cluster is torn
# down on exit; pass KEEP=1 to leave it running.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# `dev` is only in the -tags dev build (make build-dev).
bin="${TOLOKAFORGE_DEV:-$root/bin/tolokaforge-dev}"
assets="${KUBEBUILDER_ASSETS:-$(hack/build-envtest.sh)}"
kubectl="$assets/kubectl"
[[ -x "$kubectl" ]] || kubectl="$(command -v kubectl)"
dir="$root/.dev"
rm -rf "$dir"
mkdir -p "$dir"

"$bin" dev --dir "$dir" --assets "$assets" >"$dir/dev.log" 2>&1 &
dev_pid=$!
cleanup() {
  if [[ "${KEEP:-0}" != "1" ]]; then
    kill "$dev_pid" 2>/dev/null || true
    wait "$dev_pid" 2>/dev/null || true
  else
    echo "dev cluster left running (pid $dev_pid); export KUBECONFIG=$dir/kubeconfig"
  fi
}
trap cleanup EXIT

for _ in $(seq 1 120); do
  [[ -f "$dir/ready" ]] && break
  if ! kill -0 "$dev_pid" 2>/dev/null; then
    echo "tolokaforge dev exited; its log:" >&2
    tail -50 "$dir/dev.log" >&2
    exit 1
  fi
  sleep 1
done
[[ -f "$dir/ready" ]] || { echo "tolokaforge dev did not become ready; see $dir/dev.log" >&2; exit 1; }
export KUBECONFIG="$dir/kubeconfig"

echo "== kubectl apply -f config/samples/"
"$kubectl" apply -f config/samples/
echo "== waiting for the Campaign and every Trial to complete"
"$kubectl" wait --for=condition=Completed campaigns --all --timeout=300s >/dev/null
"$kubectl" wait --for=condition=Completed trials --all --timeout=300s >/dev/null
echo "== kubectl get campaigns"
"$kubectl" get campaigns
echo "== kubectl get tasks"
"$kubectl" get tasks
echo "== kubectl get trials"
"$kubectl" get trials
first="$("$kubectl" get trials -o jsonpath='{.items[0].metadata.name}')"
echo "== status of trial/$first"
"$kubectl" get trial "$first" -o jsonpath='{.status}' | python3 -m json.tool 2>/dev/null \
  || "$kubectl" get trial "$first" -o yaml
failing="$("$kubectl" get trials -o jsonpath='{range .items[?(@.status.phase=="Failed")]}{.metadata.name}{"\n"}{end}' | head -1)"
if [[ -n "$failing" ]]; then
  echo "== why trial/$failing failed"
  "$kubectl" get trial "$failing" -o jsonpath='{.status.grade.reasons}{"\n"}'
fi
echo "artifacts under $dir/artifacts"
