#!/usr/bin/env bash
# Server side of HTTP/3: h2lab serve --h3 vs Caddy (HTTP/3 via quic-go) under the
# same client, and h2lab's HTTP/3 CPU per request vs its own HTTP/2 over TLS.
# A benchmark, not a test: it prints a Markdown table; nothing checks timing.
#
# Client: the h3load example of crates/server (h3 + h3-quinn + quinn; h2load 1.52 has no --h3
# and oha is usually built without HTTP/3), -c $CONNS connections x -m $STREAMS streams, for
# $DURATION s, pinned to $CLIENT_CPUS. Servers pinned to $SERVER_CPUS: h2lab serve --tls --h3
# (GSO on, and a second instance with --no-udp-gso), Caddy with GOMAXPROCS=1. Rounds
# alternate the servers. Server CPU per request = the server's CPU time during the run /
# requests completed; the HTTP/2 row uses h2load -D with the same -c/-m on h2lab's TLS port.
#
# Environment: ROUNDS (3), DURATION (5), CONNS (10), STREAMS (10), SIZE (653),
#   H2LAB (target/release/h2lab), H3LOAD (target/release/examples/h3load),
#   SERVER_CPUS, CLIENT_CPUS (0 and 1).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
SIZE=${SIZE:-653}
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}
H3LOAD=${H3LOAD:-$REPO_ROOT/target/release/examples/h3load}

bench_init
require_bin caddy h2load python3
[ -x "$H2LAB" ] || die "$H2LAB missing (cargo build --release -p h2lab)"
[ -x "$H3LOAD" ] || die "$H3LOAD missing (cargo build --release -p h2lab-server --example h3load)"

WWW="$WORK/www"
mkdir -p "$WWW"
gen_file "$WWW/file$SIZE" "$SIZE"
gen_cert "$WORK"

declare -A PORTS PGIDS PATHS
start_h2lab() { # NAME EXTRA_FLAGS...
  local name=$1 port
  shift
  port=$(free_port)
  start_bg "$name" "$H2LAB" serve --tls --listen "127.0.0.1:$port" --h3 --threads 1 \
    --cert "$WORK/cert.pem" --key "$WORK/key.pem" -q "$@"
  wait_port "$port" || fail_start "$name"
  PORTS[$name]=$port PGIDS[$name]=$BG_PID PATHS[$name]="/data?size=$SIZE"
}
start_h2lab h2lab
start_h2lab h2lab-nogso --no-udp-gso

start_caddy caddy "$WWW"
PORTS[caddy]=$PORT PGIDS[caddy]=$BG_PID PATHS[caddy]="/file$SIZE"

declare -A RPS CPU
run_h3() { # NAME
  local name=$1 before after out n secs
  before=$(group_cpu_ticks "${PGIDS[$name]}")
  out=$(taskset -c "$CLIENT_CPUS" "$H3LOAD" -c "$CONNS" -m "$STREAMS" -d "$DURATION" \
    "https://127.0.0.1:${PORTS[$name]}${PATHS[$name]}")
  after=$(group_cpu_ticks "${PGIDS[$name]}")
  n=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<<"$out")
  secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$out")
  log "$name: $out server_ticks=$((after - before))"
  RPS[$name]+=" $(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')"
  CPU[$name]+=" $(awk -v t="$((after - before))" -v n="$n" -v hz="$CLK_TCK" 'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "nan" }')"
}
run_h2() { # h2lab's HTTP/2 over TLS with h2load, same -c/-m
  local before after out n
  before=$(group_cpu_ticks "${PGIDS[h2lab]}")
  out=$(taskset -c "$CLIENT_CPUS" h2load -D "$DURATION" -c "$CONNS" -m "$STREAMS" \
    "https://127.0.0.1:${PORTS[h2lab]}/data?size=$SIZE" 2>&1)
  after=$(group_cpu_ticks "${PGIDS[h2lab]}")
  n=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' <<<"$out")
  log "h2lab-h2: $n ok, server_ticks=$((after - before))"
  RPS[h2]+=" $(awk -v n="$n" -v s="$DURATION" 'BEGIN { printf "%.0f", n / s }')"
  CPU[h2]+=" $(awk -v t="$((after - before))" -v n="$n" -v hz="$CLK_TCK" 'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "nan" }')"
}

for r in $(seq "$ROUNDS"); do
  log "round $r/$ROUNDS"
  run_h3 h2lab
  run_h3 caddy
  run_h3 h2lab-nogso
  run_h2
done

# shellcheck disable=SC2086 # word splitting of the per-round lists is intended
{
  echo "| server (client) | req/s (median of $ROUNDS) | server CPU µs/request (median) |"
  echo "|---|---:|---:|"
  echo "| h2lab serve, HTTP/3 (h3load) | $(median ${RPS[h2lab]}) | $(median ${CPU[h2lab]}) |"
  echo "| h2lab serve, HTTP/3, --no-udp-gso (h3load) | $(median ${RPS[h2lab-nogso]}) | $(median ${CPU[h2lab-nogso]}) |"
  echo "| Caddy $(caddy version | cut -d' ' -f1), HTTP/3, GOMAXPROCS=1 (h3load) | $(median ${RPS[caddy]}) | $(median ${CPU[caddy]}) |"
  echo "| h2lab serve, HTTP/2 over TLS (h2load) | $(median ${RPS[h2]}) | $(median ${CPU[h2]}) |"
  echo
  echo "h2lab/Caddy req/s: $(ratio "$(median ${RPS[h2lab]})" "$(median ${RPS[caddy]})");" \
    "h2lab HTTP/3 / HTTP/2 CPU per request: $(ratio "$(median ${CPU[h2lab]})" "$(median ${CPU[h2]})")"
  echo "(-c $CONNS -m $STREAMS, $SIZE-byte responses, ${DURATION} s runs, server on CPU $SERVER_CPUS, client on CPU $CLIENT_CPUS)"
}
