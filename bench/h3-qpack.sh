#!/usr/bin/env bash
# QPACK's dynamic table on vs off (issue 16): `bench --h3` (h2load's settings: the client
# announces a 4096-octet table and 100 blocked streams, its requests use the table the
# server allows) against `bench --h3 --no-qpack-dynamic-table`, both against one
# `serve --tls --h3 --threads 1` of the same build, ARMS ALTERNATED in every round, server
# pinned to $SERVER_CPUS and the client to $CLIENT_CPUS. Client CPU (user+sys) and server
# CPU (all threads, /proc) per succeeded request, and the `headers` bytes of `traffic:` per
# request; and the same figures for `bench` over HTTP/2 (TLS) against the same server, so
# each HTTP/3 arm's ratio to HTTP/2 comes from the same rounds. A benchmark, not a test: it
# prints a Markdown table; nothing checks timing.
#
#   H2LAB           the h2lab binary (default target/release/h2lab)
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
port=$(free_port)
start_bg serve "$H2LAB" serve --tls --listen "127.0.0.1:$port" --h3 --threads 1 \
  --cert "$WORK/cert.pem" --key "$WORK/key.pem" -q
wait_port "$port" || fail_start serve
PGID=$BG_PID
URL="https://127.0.0.1:$port/data?size=$SIZE"

# one ARM (on, off, h2): prints "client-µs server-µs header-bytes-per-request".
one() {
  local flags=(--h3) before after
  [ "$1" = off ] && flags+=(--no-qpack-dynamic-table)
  [ "$1" = h2 ] && flags=()
  before=$(group_cpu_ticks "$PGID")
  run_client "$WORK/out" "$H2LAB" bench "${flags[@]}" -D "$DURATION" -c "$CONNS" -m "$STREAMS" "$URL"
  after=$(group_cpu_ticks "$PGID")
  parse_client "$WORK/out"
  [ "${P_FAILED:-1}" = 0 ] || die "$1: failed requests: $(cat "$WORK/out")"
  local hdr
  hdr=$(sed -n 's/^traffic: .* (\([0-9]\+\)) headers .*/\1/p' "$WORK/out")
  awk -v u="$T_USER" -v s="$T_SYS" -v n="$P_OK" -v t="$((after - before))" -v hz="$CLK_TCK" \
    -v h="$hdr" 'BEGIN { printf "%.3f %.3f %.1f", (u + s) * 1e6 / n, t / hz * 1e6 / n, h / n }'
}

: >"$WORK/rows"
for r in $(seq "$ROUNDS"); do
  log "round $r/$ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))"
  case $((r % 3)) in
    1) order="on off h2" ;;
    2) order="off h2 on" ;;
    *) order="h2 on off" ;;
  esac
  for arm in $order; do
    echo "$arm $(one "$arm")" >>"$WORK/rows"
  done
done

python3 - "$WORK/rows" "$ROUNDS" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
v = {}
for arm, c, s, h in rows:
    for k, x in (("client", c), ("server", s), ("headers", h)):
        v.setdefault((k, arm), []).append(float(x))
print("| metric | table on | table off | on/off (range) |")
print("|---|---:|---:|---:|")
for k, name in (("client", "client CPU µs/req"), ("server", "server CPU µs/req"),
                ("headers", "response header bytes/req (traffic: headers)")):
    on, off = v[(k, "on")], v[(k, "off")]
    r = [a / b for a, b in zip(on, off)]
    print(f"| {name} | {st.median(on):.2f} | {st.median(off):.2f} | "
          f"{st.median(r):.3f} ({min(r):.2f}–{max(r):.2f}) |")
for k in ("client", "server"):
    for arm in ("on", "off"):
        r = [a / b for a, b in zip(v[(k, arm)], v[(k, "h2")])]
        print(f"{k} HTTP/3 (table {arm}) / HTTP/2 over TLS, CPU per request: "
              f"{st.median(r):.2f} ({min(r):.2f}–{max(r):.2f})")
print(f"({sys.argv[2]} rounds, arms rotated; medians of per-round ratios)")
PY
