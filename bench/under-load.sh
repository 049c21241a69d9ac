#!/usr/bin/env bash
# The timing-sensitive tests under a busy machine (a check, not a test: it prints pass counts).
#
# Starts one busy loop per core (BUSY, default: the number of cores), then runs each test target
# below ROUNDS times (default 3) and prints how many runs passed. The targets are the ones that
# measure time on purpose: the link's accuracy (relay and packet path, with stated statistical
# bounds) and the lab's end-to-end runs. A target that fails here needs a quieter machine than
# CI's, and its doc comment must say so.
#
# ONLY=WORD keeps the targets whose flags contain WORD (e.g. ONLY=link).
#
# The busy loops are this script's children, stopped by pid on exit (also on Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
BUSY=${BUSY:-$(nproc)}
TARGETS=(
  "-p h2lab-link --test accuracy"
  "-p h2lab-link --test relay"
  "-p h2lab-link --test packet"
  "-p h2lab --test lab"
  "-p h2lab --test lab_h3"
)
if [ -n "${ONLY:-}" ]; then
  kept=()
  for t in "${TARGETS[@]}"; do
    case $t in *"$ONLY"*) kept+=("$t") ;; esac
  done
  TARGETS=("${kept[@]}")
fi

pids=()
log=$(mktemp)
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -f "$log"
}
trap stop EXIT INT TERM

echo "building the test targets first (not under load)"
for t in "${TARGETS[@]}"; do
  # shellcheck disable=SC2086 # the target's flags are words
  cargo test -q $t --no-run 2>/dev/null
done

for _ in $(seq "$BUSY"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
echo "$BUSY busy loops on $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

for t in "${TARGETS[@]}"; do
  ok=0
  failed=""
  for _ in $(seq "$ROUNDS"); do
    # shellcheck disable=SC2086
    if cargo test -q $t >"$log" 2>&1; then
      ok=$((ok + 1))
    else
      # The failing tests' names and first panic line, so a failure says what it needed.
      failed="$failed $(sed -n 's/^---- \(.*\) stdout ----$/\1/p' "$log" | tr '\n' ' ')"
      grep -m1 -A1 'panicked at' "$log" | tail -1 | cut -c1-200 >&2 || true
    fi
  done
  printf '%-36s %d of %d passed (load average %s)%s\n' "$t" "$ok" "$ROUNDS" \
    "$(cut -d' ' -f1 /proc/loadavg)" "${failed:+; failed:$failed}"
done
