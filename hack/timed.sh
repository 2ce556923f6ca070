#!/usr/bin/env bash
# Stage timings for make test, make e2e and .ci/run, so a run's log says
# where its minutes went:
#
#   hack/timed.sh reset                 start a new record
#   hack/timed.sh NAME CMD [ARG]...     run CMD, print "== NAME: N s (exit R)"
#   hack/timed.sh record NAME SECS RC   record a stage a script timed itself
#   hack/timed.sh summary               the stages so far, and the slowest
#                                       Go test packages their output named
#
# The record is $TIMINGS (default bin/timings.txt), shared by nested makes;
# each stage's output goes to the terminal and to $TIMINGS.log, from which
# the summary takes Go's "ok <pkg> <secs>s" lines.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rec="${TIMINGS:-$root/bin/timings.txt}"
mkdir -p "$(dirname "$rec")"

case "${1:-}" in
reset)
  : > "$rec"
  : > "$rec.log"
  exit 0
  ;;
record)
  printf '%s\t%d s\t%s\n' "$2" "$3" "$([[ $4 == 0 ]] && echo ok || echo "FAILED (exit $4)")" >> "$rec"
  echo "== $2: $3 s (exit $4)"
  exit 0
  ;;
summary)
  echo "== stage timings (${rec#"$root"/})"
  awk -F'\t' '{printf "  %-34s %8s  %s\n", $1, $2, $3}' "$rec"
  total="$(awk -F'\t' '{gsub(/ s$/, "", $2); s += $2} END {print s + 0}' "$rec")"
  echo "  total: $total s ($((total / 60)) min $((total % 60)) s)"
  if grep -qE '^ok[[:space:]]' "$rec.log" 2>/dev/null; then
    echo "== slowest test packages"
    grep -E '^ok[[:space:]]+[^[:space:]]+[[:space:]]+[0-9.]+s' "$rec.log" |
      awk '{t = $3; sub(/s$/, "", t); printf "%8.1f s  %s\n", t, $2}' | sort -rn | head -10 | sed 's/^/  /'
  fi
  exit 0
  ;;
"")
  echo "usage: hack/timed.sh reset | summary | NAME CMD [ARG]..." >&2
  exit 2
  ;;
esac

name="$1"
shift
t0=$SECONDS
"$@" 2>&1 | tee -a "$rec.log"
rc=${PIPESTATUS[0]}
secs=$((SECONDS - t0))
printf '%s\t%d s\t%s\n' "$name" "$secs" "$([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)")" >> "$rec"
echo "== $name: $secs s (exit $rc)"
exit "$rc"
