#!/usr/bin/env bash
# Before/after of two h2lab builds on HTTP/3 CPU per request (issue 16), both sides, ARMS
# ALTERNATED in every round (A B / B A ...), server pinned to $SERVER_CPUS and clients to
# $CLIENT_CPUS. A benchmark, not a test: it prints a Markdown table; nothing checks timing.
#
# Server: `serve --tls --h3 --threads 1` of each build (both running, each on its own port);
#   server CPU (all threads, /proc) per request under the h3load example client (HTTP/3) and
#   under h2load (HTTP/2 over TLS), same -c/-m.
# Client: `bench --h3` and `bench` (HTTP/2 over TLS) of each build against the BEFORE
#   build's server; client user+sys per succeeded request.
# Each build's HTTP/3 / HTTP/2 ratio is the median of the per-round ratios, so the machine's
# load drifting between rounds cancels out. (Hardware instruction counters would be steadier
# than CPU time on a loaded machine; the VMs this was written on have none.)
#
#   BEFORE, AFTER   the two h2lab binaries (required)
#   H3LOAD          the h3load example (default target/release/examples/h3load)
#   ROUNDS (5), DURATION (3), CONNS (10), STREAMS (10), SIZE (653), EXTRA (extra serve flags)
#   SERVER_CPUS, CLIENT_CPUS (0 and 1)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${BEFORE:?set BEFORE to the old h2lab binary}" "${AFTER:?set AFTER to the new h2lab binary}"
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
SIZE=${SIZE:-653}
H3LOAD=${H3LOAD:-$REPO_ROOT/target/release/examples/h3load}
read -r -a EXTRA <<<"${EXTRA:-}"

bench_init
require_bin h2load python3
[ -x "$H3LOAD" ] || die "$H3LOAD missing (cargo build --release -p h2lab-server --example h3load)"
gen_cert "$WORK"

declare -A PORTS PGIDS
for arm in before after; do
  bin=$BEFORE
  [ "$arm" = after ] && bin=$AFTER
  port=$(free_port)
  start_bg "serve-$arm" "$bin" serve --tls --listen "127.0.0.1:$port" --h3 --threads 1 \
    --cert "$WORK/cert.pem" --key "$WORK/key.pem" -q "${EXTRA[@]}"
  wait_port "$port" || fail_start "serve-$arm"
  PORTS[$arm]=$port PGIDS[$arm]=$BG_PID
done
url() { echo "https://127.0.0.1:${PORTS[$1]}/data?size=$SIZE"; }

# server_run ARM PROTO: prints server CPU µs per request.
server_run() {
  local arm=$1 proto=$2 before after out n
  before=$(group_cpu_ticks "${PGIDS[$arm]}")
  if [ "$proto" = h3 ]; then
    out=$(taskset -c "$CLIENT_CPUS" "$H3LOAD" -c "$CONNS" -m "$STREAMS" -d "$DURATION" "$(url "$arm")")
    n=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<<"$out")
  else
    out=$(taskset -c "$CLIENT_CPUS" h2load -D "$DURATION" -c "$CONNS" -m "$STREAMS" "$(url "$arm")" 2>&1)
    n=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' <<<"$out")
  fi
  after=$(group_cpu_ticks "${PGIDS[$arm]}")
  awk -v t="$((after - before))" -v n="$n" -v hz="$CLK_TCK" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }'
}

# client_run BIN PROTO: prints client CPU µs per request (against the BEFORE server).
client_run() {
  local bin=$1 proto=$2 flags=()
  [ "$proto" = h3 ] && flags=(--h3)
  run_client "$WORK/out" "$bin" bench "${flags[@]}" -D "$DURATION" -c "$CONNS" -m "$STREAMS" "$(url before)"
  parse_client "$WORK/out"
  awk -v u="$T_USER" -v s="$T_SYS" -v n="$P_OK" 'BEGIN { printf "%.3f", (u + s) * 1e6 / n }'
}

: >"$WORK/rows"
for r in $(seq "$ROUNDS"); do
  log "round $r/$ROUNDS"
  order="before after"
  [ $((r % 2)) = 0 ] && order="after before"
  for proto in h3 h2; do
    for arm in $order; do
      echo "server $proto $arm $(server_run "$arm" "$proto")" >>"$WORK/rows"
      bin=$BEFORE
      [ "$arm" = after ] && bin=$AFTER
      echo "client $proto $arm $(client_run "$bin" "$proto")" >>"$WORK/rows"
    done
  done
done

python3 - "$WORK/rows" "$ROUNDS" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
v = {}
for side, proto, arm, cpu in rows:
    v.setdefault((side, proto, arm, "cpu"), []).append(float(cpu))
metrics = [("cpu", "CPU µs/req", "{:.2f}")]
print("| side | protocol | metric | before | after | after/before (range) |")
print("|---|---|---|---:|---:|---:|")
for side in ("server", "client"):
    for proto in ("h3", "h2"):
        for m, name, fmt in metrics:
            b, a = v[(side, proto, "before", m)], v[(side, proto, "after", m)]
            r = [y / x for x, y in zip(b, a)]
            print(f"| {side} | {proto} | {name} | {fmt.format(st.median(b))} | "
                  f"{fmt.format(st.median(a))} | {st.median(r):.3f} ({min(r):.2f}–{max(r):.2f}) |")
print()
for side in ("server", "client"):
    for m, name, _ in metrics:
        for arm in ("before", "after"):
            r = [x / y for x, y in zip(v[(side, "h3", arm, m)], v[(side, "h2", arm, m)])]
            print(f"{side} HTTP/3 / HTTP/2 {name}, {arm}: {st.median(r):.2f} "
                  f"({min(r):.2f}–{max(r):.2f})")
print(f"({sys.argv[2]} rounds; medians of per-round ratios)")
PY
