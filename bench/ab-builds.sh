#!/usr/bin/env bash
# Before/after of two h2lab builds: client CPU per completed request of `bench`, the two
# binaries ALTERNATED (A B B A ...) against the same `h2lab serve` (server on CPU $SERVER_CPUS,
# client on $CLIENT_CPUS). For refactors: "no regression beyond noise" is the median of the
# per-round ratios (after / before) and their range. A benchmark, not a test.
#
#   BEFORE, AFTER   the two h2lab binaries (required)
#   ROUNDS          rounds per workload (default 4)
#   SERVER_CPUS, CLIENT_CPUS   taskset CPU lists (default 0 and 1)
set -euo pipefail
: "${BEFORE:?set BEFORE to the old h2lab binary}" "${AFTER:?set AFTER to the new h2lab binary}"
ROUNDS=${ROUNDS:-4}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
tmp=$(mktemp -d)
taskset -c "$SERVER_CPUS" "$BEFORE" serve --listen 127.0.0.1:0 --quiet >"$tmp/serve.out" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do
  grep -q 'listening on http://' "$tmp/serve.out" && break
  sleep 0.05
done
url=$(sed -n 's|.*listening on \(http://[^/]*/\).*|\1|p' "$tmp/serve.out" | head -n1)ping
[ "$url" != ping ] || { echo "h2lab serve did not start" >&2; exit 1; }

# Prints microseconds of user+sys CPU per succeeded request.
run() {
  local bin=$1; shift
  /usr/bin/time -f "%U %S" -o "$tmp/time" taskset -c "$CLIENT_CPUS" "$bin" bench "$@" "$url" >"$tmp/out" 2>&1
  local ok
  ok=$(grep -o '[0-9]* succeeded' "$tmp/out" | awk '{print $1}')
  awk -v n="$ok" '{printf "%.3f", ($1 + $2) / n * 1e6}' "$tmp/time"
}

echo "| workload | before µs/req (median) | after µs/req (median) | after/before median (range) |"
echo "|---|---:|---:|---:|"
for wl in "h2c c10 m10:-n 1500000 -c 10 -m 10" "h2c c100 m10:-n 1500000 -c 100 -m 10" \
  "HTTP/1.1 c10:--h1 -n 400000 -c 10"; do
  name=${wl%%:*}
  read -r -a args <<<"${wl#*:}"
  : >"$tmp/rows"
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
      b=$(run "$BEFORE" "${args[@]}"); a=$(run "$AFTER" "${args[@]}")
    else
      a=$(run "$AFTER" "${args[@]}"); b=$(run "$BEFORE" "${args[@]}")
    fi
    echo "$b $a" >>"$tmp/rows"
  done
  python3 - "$name" "$tmp/rows" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
r = [a / b for b, a in rows]
print(f"| {sys.argv[1]} | {statistics.median(b for b, _ in rows):.3f} | "
      f"{statistics.median(a for _, a in rows):.3f} | {statistics.median(r):.2f} "
      f"({min(r):.2f}–{max(r):.2f}) |")
PY
done
