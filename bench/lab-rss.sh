#!/usr/bin/env bash
# Peak memory of the lab's experiments: runs each and prints its peak resident set size next
# to its wall time and the machine's load. A benchmark, not a test: nothing checks a bound,
# the figures are compared with the targets by eye (compare default run <= 250 MB).
#
#   bench/lab-rss.sh                 compare --quick, compare (default), page --loss 0,1,3,
#                                    upstream --quick
#   bench/lab-rss.sh quick           compare --quick only
#
# Environment:
#   H2LAB     h2lab binary (default: target/release/h2lab)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}
[ -x "$H2LAB" ] || die "$H2LAB not built (cargo build --release -p h2lab)"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/h2lab-lab-rss.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

runs=("compare --quick --no-report")
if [ "${1:-}" != quick ]; then
  runs+=("compare --no-report" "page --loss 0,1,3 --no-report" "upstream --quick")
fi
printf '%-34s %10s %9s  %s\n' "experiment" "peak RSS" "wall" "load average before / after"
for r in "${runs[@]}"; do
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s.%N)
  # shellcheck disable=SC2086 # $r is a command line
  peak_rss "$WORK/rss" "$H2LAB" $r >"$WORK/out" 2>"$WORK/err" || log "$r failed: $(tail -3 "$WORK/err")"
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  printf '%-34s %7s MB %7.0f s  %s / %s\n' "$r" "$(cat "$WORK/rss")" "$secs" "$before" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
done
