#!/usr/bin/env bash
# Peak memory of the lab's experiments: runs each and prints its peak resident set size (GNU
# time's maximum RSS) next to its wall time and the machine's load. A benchmark, not a test:
# nothing checks a bound; compare the figures with the targets by eye (each run <= 250 MB).
#
#   bench/lab-memory.sh                 compare --quick, compare (the README's RUN),
#                                       page --loss 0,1,3, upstream
#   bench/lab-memory.sh quick page      only those (names: quick, compare, page, upstream,
#                                       upstream-quick)
#
# Environment:
#   H2LAB     h2lab binary (default: target/release/h2lab; build it with
#             cargo build --release -p h2lab)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

H2LAB=${H2LAB:-${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/h2lab}
[ -x "$H2LAB" ] || die "$H2LAB not built (cargo build --release -p h2lab)"
[ -x /usr/bin/time ] || die "/usr/bin/time not installed (apt-get install time)"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/h2lab-lab-memory.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

declare -A RUNS=(
  [quick]="compare --quick --no-report"
  [compare]="compare --no-report"
  [page]="page --loss 0,1,3 --no-report"
  [upstream]="upstream"
  [upstream-quick]="upstream --quick"
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(quick compare page upstream)

printf '%-32s %10s %8s  %s\n' "experiment" "peak RSS" "wall" "load average before / after"
for name in "${names[@]}"; do
  r=${RUNS[$name]:-}
  [ -n "$r" ] || die "unknown run $name (quick, compare, page, upstream, upstream-quick)"
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s.%N)
  # shellcheck disable=SC2086 # $r is a command line
  (cd "$WORK" && peak_rss "$WORK/rss" "$H2LAB" $r >"$WORK/out" 2>"$WORK/err") ||
    log "$r failed: $(tail -3 "$WORK/err")"
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  printf '%-32s %7s MB %6.0f s  %s / %s\n' "$r" "$(cat "$WORK/rss")" "$secs" "$before" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
done
