#!/usr/bin/env bash
# Runs every test of the workspace (README's TEST command), then prints one line naming the
# tests that were skipped because an anchor tool (h2load, nginx, chromium, ...) is missing,
# with the command that installs them. Extra arguments go to `cargo test`.
# Under CI=true a missing anchor fails its test instead, so there is nothing to summarise.
set -uo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
log=h2lab-skipped-anchors.log # h2lab_testkit::SKIP_LOG
rm -f "$target"/*/"$log"

cargo test --workspace --no-fail-fast "$@"
status=$?

skipped=$(cat "$target"/*/"$log" 2>/dev/null | sort -u)
if [ -n "$skipped" ]; then
  tests=$(printf '%s\n' "$skipped" | cut -f2 | sort -u | wc -l)
  tools=$(printf '%s\n' "$skipped" | cut -f1 | sort -u | paste -sd, - | sed 's/,/, /g')
  echo "note: $tests test(s) skipped for missing anchors ($tools); install them with: bash .ci/install-anchors.sh"
fi
exit $status
