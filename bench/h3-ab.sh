#!/usr/bin/env bash
# Before/after of two h2lab builds on HTTP/3 CPU per request, both sides, ARMS
# ALTERNATED in every round (A B / B A ...), server pinned to $SERVER_CPUS and clients to
# $CLIENT_CPUS. A benchmark, not a test: it prints a Markdown table; nothing checks timing.
#
# Server: `serve --tls --h3 --threads 1` of each build (both running, each on its own port);
#   server CPU (all threads, /proc) per request under the h3load example client (HTTP/3) and
#   under h2load (HTTP/2 over TLS), same -c/-m.
# Client: `bench --h3` and `bench` (HTTP/2 over TLS) of each build against the BEFORE
#   build's server; client user+sys per succeeded request.
# Client against Caddy (when installed; CADDY=0 leaves it out): `bench --h3` and `bench` of
#   each build against Caddy (HTTP/3 by quic-go, GOMAXPROCS=1, pinned like the servers), the
#   server that sends each response in a datagram of its own; client CPU and voluntary
#   context switches (wake-ups) per succeeded request.
# Each build's HTTP/3 / HTTP/2 ratio is the median of the per-round ratios, so the machine's
# load drifting between rounds cancels out. (Hardware instruction counters would be steadier
# than CPU time on a loaded machine; the VMs this was written on have none.)
#
#   BEFORE, AFTER   the two h2lab binaries (required)
#   H3LOAD          the h3load example (default target/release/examples/h3load)
#   ROUNDS (5), DURATION (3), CONNS (10), STREAMS (10), SIZE (653), EXTRA (extra serve flags)
#   SERVER_CPUS, CLIENT_CPUS (0 and 1); SERVER=0 leaves out the server rows (no h3load
#   needed), CADDY=0 the Caddy rows
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
if [ "${SERVER:-1}" = 1 ]; then
  [ -x "$H3LOAD" ] || die "$H3LOAD missing (cargo build --release -p h2lab-server --example h3load)"
fi
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
SIDES="client"
[ "${SERVER:-1}" = 1 ] && SIDES="server client"
if [ "${CADDY:-1}" = 1 ] && command -v caddy >/dev/null 2>&1; then
  mkdir -p "$WORK/www"
  gen_file "$WORK/www/file$SIZE" "$SIZE"
  start_caddy caddy "$WORK/www"
  CADDY_URL="https://127.0.0.1:$PORT/file$SIZE"
  SIDES="$SIDES caddy"
fi

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

# client_run BIN PROTO [URL]: prints client CPU µs per request (against the BEFORE server,
# or URL) and voluntary context switches per request.
client_run() {
  local bin=$1 proto=$2 target=${3:-$(url before)} flags=() vcs
  [ "$proto" = h3 ] && flags=(--h3)
  run_client "$WORK/out" /usr/bin/time -f '%w' -o "$WORK/vcs" "$bin" bench "${flags[@]}" \
    -D "$DURATION" -c "$CONNS" -m "$STREAMS" "$target"
  parse_client "$WORK/out"
  vcs=$(tail -n 1 "$WORK/vcs")
  awk -v u="$T_USER" -v s="$T_SYS" -v n="$P_OK" -v w="$vcs" \
    'BEGIN { printf "%.3f %.3f", (u + s) * 1e6 / n, w / n }'
}

: >"$WORK/rows"
for r in $(seq "$ROUNDS"); do
  log "round $r/$ROUNDS"
  order="before after"
  [ $((r % 2)) = 0 ] && order="after before"
  for proto in h3 h2; do
    for arm in $order; do
      if [ "${SERVER:-1}" = 1 ]; then
        echo "server $proto $arm $(server_run "$arm" "$proto")" >>"$WORK/rows"
      fi
      bin=$BEFORE
      [ "$arm" = after ] && bin=$AFTER
      echo "client $proto $arm $(client_run "$bin" "$proto")" >>"$WORK/rows"
      if [ -n "${CADDY_URL:-}" ]; then
        echo "caddy $proto $arm $(client_run "$bin" "$proto" "$CADDY_URL")" >>"$WORK/rows"
      fi
    done
  done
done

python3 - "$WORK/rows" "$ROUNDS" "$SIDES" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
sides = sys.argv[3].split()
v = {}
for side, proto, arm, cpu, *rest in rows:
    v.setdefault((side, proto, arm, "cpu"), []).append(float(cpu))
    if rest:
        v.setdefault((side, proto, arm, "vcs"), []).append(float(rest[0]))
metrics = [("cpu", "CPU µs/req", "{:.2f}"), ("vcs", "wake-ups/req", "{:.3f}")]
print("| side | protocol | metric | before | after | after/before (range) |")
print("|---|---|---|---:|---:|---:|")
for side in sides:
    for proto in ("h3", "h2"):
        for m, name, fmt in metrics:
            if (side, proto, "before", m) not in v:
                continue
            b, a = v[(side, proto, "before", m)], v[(side, proto, "after", m)]
            r = [y / x for x, y in zip(b, a)]
            print(f"| {side} | {proto} | {name} | {fmt.format(st.median(b))} | "
                  f"{fmt.format(st.median(a))} | {st.median(r):.3f} ({min(r):.2f}–{max(r):.2f}) |")
print()
for side in sides:
    for m, name, _ in metrics:
        if (side, "h3", "before", m) not in v:
            continue
        for arm in ("before", "after"):
            r = [x / y for x, y in zip(v[(side, "h3", arm, m)], v[(side, "h2", arm, m)])]
            print(f"{side} HTTP/3 / HTTP/2 {name}, {arm}: {st.median(r):.2f} "
                  f"({min(r):.2f}–{max(r):.2f})")
print(f"({sys.argv[2]} rounds; medians of per-round ratios)")
PY
