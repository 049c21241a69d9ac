#!/usr/bin/env bash
# QPACK's dynamic table on vs off: `bench --h3` (h2load's settings: the client
# announces a 4096-octet table and 100 blocked streams, its requests use the table the
# server allows) against `bench --h3 --no-qpack-dynamic-table`, both against one
# `serve --tls --h3 --threads 1` of the same build, ARMS ALTERNATED in every round, server
# pinned to $SERVER_CPUS and the client to $CLIENT_CPUS. Client CPU (user+sys) and server
# CPU (all threads, /proc) per succeeded request, and the `headers` bytes of `traffic:` per
# request; and the same figures for `bench` over HTTP/2 (TLS) against the same server, so
# each HTTP/3 arm's ratio to HTTP/2 comes from the same rounds. A benchmark, not a test: it
# prints a Markdown table; nothing checks timing.
#
# With H2LAB_OLD (a copy of an earlier release binary) every round also runs the three arms
# with that build, client and its own server (started the same way), so before/after comes
# from the same rounds: the six arms rotate, and the "new/old" lines are medians of
# per-round ratios.
#
#   H2LAB           the h2lab binary (default target/release/h2lab)
#   H2LAB_OLD       an earlier h2lab binary to compare with (optional)
#   ROUNDS (6), DURATION (3), CONNS (10), STREAMS (10), SIZE (653)
#   SERVER_CPUS, CLIENT_CPUS (0 and 1)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}
ROUNDS=${ROUNDS:-6}
DURATION=${DURATION:-3}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
SIZE=${SIZE:-653}

bench_init
require_bin python3
[ -x "$H2LAB" ] || die "$H2LAB missing (cargo build --release -p h2lab)"
gen_cert "$WORK"
declare -A BIN PGIDS URLS
BUILDS=new
BIN[new]=$H2LAB
if [ -n "${H2LAB_OLD:-}" ]; then
  [ -x "$H2LAB_OLD" ] || die "$H2LAB_OLD missing"
  BUILDS="new old"
  BIN[old]=$H2LAB_OLD
fi
for b in $BUILDS; do
  port=$(free_port)
  start_bg "serve-$b" "${BIN[$b]}" serve --tls --listen "127.0.0.1:$port" --h3 --threads 1 \
    --cert "$WORK/cert.pem" --key "$WORK/key.pem" -q
  wait_port "$port" || fail_start "serve-$b"
  PGIDS[$b]=$BG_PID
  URLS[$b]="https://127.0.0.1:$port/data?size=$SIZE"
done

# one ARM (on, off, h2) BUILD (new, old): prints "client-µs server-µs header-bytes-per-request".
one() {
  local flags=(--h3) before after pgid=${PGIDS[$2]}
  [ "$1" = off ] && flags+=(--no-qpack-dynamic-table)
  [ "$1" = h2 ] && flags=()
  before=$(group_cpu_ticks "$pgid")
  run_client "$WORK/out" "${BIN[$2]}" bench "${flags[@]}" -D "$DURATION" -c "$CONNS" -m "$STREAMS" "${URLS[$2]}"
  after=$(group_cpu_ticks "$pgid")
  parse_client "$WORK/out"
  [ "${P_FAILED:-1}" = 0 ] || die "$1 ($2): failed requests: $(cat "$WORK/out")"
  local hdr
  hdr=$(sed -n 's/^traffic: .* (\([0-9]\+\)) headers .*/\1/p' "$WORK/out")
  awk -v u="$T_USER" -v s="$T_SYS" -v n="$P_OK" -v t="$((after - before))" -v hz="$CLK_TCK" \
    -v h="$hdr" 'BEGIN { printf "%.3f %.3f %.1f", (u + s) * 1e6 / n, t / hz * 1e6 / n, h / n }'
}

: >"$WORK/rows"
loads=()
arms=()
for b in $BUILDS; do arms+=("on:$b" "off:$b" "h2:$b"); done
n=${#arms[@]}
for r in $(seq "$ROUNDS"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  loads+=("$load")
  log "round $r/$ROUNDS (load $load)"
  # Rotate the arms by one each round: every arm runs in every position.
  for i in $(seq 0 $((n - 1))); do
    a=${arms[$(((i + r) % n))]}
    echo "$r ${a%%:*} ${a##*:} $(one "${a%%:*}" "${a##*:}")" >>"$WORK/rows"
  done
done

python3 - "$WORK/rows" "$ROUNDS" "${loads[*]}" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
v = {}
for _, arm, build, c, s, h in rows:
    for k, x in (("client", c), ("server", s), ("headers", h)):
        v.setdefault((k, arm, build), []).append(float(x))
builds = [b for b in ("new", "old") if ("client", "on", b) in v]
def ratio(a, b):
    r = [x / y for x, y in zip(a, b)]
    return f"{st.median(r):.3f} ({min(r):.2f}–{max(r):.2f})"
for b in builds:
    print(f"\n{b} build\n")
    print("| metric | table on | table off | on/off (range) |")
    print("|---|---:|---:|---:|")
    for k, name in (("client", "client CPU µs/req"), ("server", "server CPU µs/req"),
                    ("headers", "response header bytes/req (traffic: headers)")):
        on, off = v[(k, "on", b)], v[(k, "off", b)]
        print(f"| {name} | {st.median(on):.2f} | {st.median(off):.2f} | {ratio(on, off)} |")
    for k in ("client", "server"):
        for arm in ("on", "off"):
            print(f"{k} HTTP/3 (table {arm}) / HTTP/2 over TLS, CPU per request: "
                  f"{ratio(v[(k, arm, b)], v[(k, 'h2', b)])}")
if len(builds) == 2:
    print("\nnew / old build, CPU per request (same rounds)\n")
    print("| arm | client | server |")
    print("|---|---:|---:|")
    for arm in ("on", "off", "h2"):
        print(f"| {arm} | {ratio(v[('client', arm, 'new')], v[('client', arm, 'old')])} | "
              f"{ratio(v[('server', arm, 'new')], v[('server', arm, 'old')])} |")
loads = sys.argv[3].split()
print(f"\n({sys.argv[2]} rounds, arms rotated; medians of per-round ratios (range); "
      f"load average {min(loads, key=float)}–{max(loads, key=float)})")
PY
