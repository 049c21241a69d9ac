#!/usr/bin/env bash
# Client side of HTTP/3: client CPU per completed request of `h2lab bench --h3`
# (GSO on and --no-udp-gso) vs `h2lab bench` HTTP/2 over TLS, against the same servers:
# h2lab serve --tls --h3 and Caddy (HTTP/3 via quic-go, GOMAXPROCS=1). A benchmark, not a
# test: it prints a Markdown table; nothing checks timing.
#
# Each run: -c $CONNS -m $STREAMS -D $DURATION, $SIZE-byte responses, client pinned to
# $CLIENT_CPUS under /usr/bin/time (user+sys CPU / requests completed), servers pinned to
# $SERVER_CPUS. Rounds alternate the client variants and the servers.
#
# Environment: ROUNDS (3), DURATION (3), CONNS (10), STREAMS (10), SIZE (653),
#   H2LAB (target/release/h2lab), SERVER_CPUS, CLIENT_CPUS (0 and 1).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
SIZE=${SIZE:-653}
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}

bench_init
require_bin caddy
[ -x "$H2LAB" ] || die "$H2LAB missing (cargo build --release -p h2lab)"

WWW="$WORK/www"
mkdir -p "$WWW"
gen_file "$WWW/file$SIZE" "$SIZE"
gen_cert "$WORK"

declare -A PORTS PATHS
port=$(free_port)
start_bg h2lab taskset -c "$SERVER_CPUS" "$H2LAB" serve --tls --listen "127.0.0.1:$port" --h3 \
  --threads 1 --cert "$WORK/cert.pem" --key "$WORK/key.pem" -q
wait_port "$port" || fail_start h2lab
PORTS[h2lab]=$port PATHS[h2lab]="/data?size=$SIZE"

start_caddy caddy "$WWW"
PORTS[caddy]=$PORT PATHS[caddy]="/file$SIZE"

declare -A CPU RPS
run_one() { # SERVER VARIANT FLAGS...
  local server=$1 variant=$2 out="$WORK/out"
  shift 2
  run_client "$out" "$H2LAB" bench "$@" -D "$DURATION" -c "$CONNS" -m "$STREAMS" \
    "https://127.0.0.1:${PORTS[$server]}${PATHS[$server]}"
  parse_client "$out"
  log "$server $variant: ok=$P_OK failed=$P_FAILED proto=$P_PROTO user=$T_USER sys=$T_SYS"
  CPU[$server-$variant]+=" $(awk -v u="$T_USER" -v s="$T_SYS" -v n="$P_OK" 'BEGIN { if (n > 0) printf "%.2f", (u + s) * 1e6 / n; else print "nan" }')"
  RPS[$server-$variant]+=" ${P_RPS:-nan}"
}

for r in $(seq "$ROUNDS"); do
  log "round $r/$ROUNDS"
  for server in h2lab caddy; do
    run_one "$server" h3 --h3
    run_one "$server" h2
    run_one "$server" h3-nogso --h3 --no-udp-gso
  done
done

# shellcheck disable=SC2086 # word splitting of the per-round lists is intended
{
  echo "| server | client | req/s (median of $ROUNDS) | client CPU µs/request (median) |"
  echo "|---|---|---:|---:|"
  for server in h2lab caddy; do
    for v in h3 h3-nogso h2; do
      echo "| $server | bench $v | $(median ${RPS[$server-$v]}) | $(median ${CPU[$server-$v]}) |"
    done
  done
  echo
  for server in h2lab caddy; do
    echo "$server: HTTP/3 / HTTP/2 client CPU per request:" \
      "$(ratio "$(median ${CPU[$server-h3]})" "$(median ${CPU[$server-h2]})")" \
      "(--no-udp-gso: $(ratio "$(median ${CPU[$server-h3-nogso]})" "$(median ${CPU[$server-h2]})"))"
  done
  echo "(-c $CONNS -m $STREAMS, $SIZE-byte responses, ${DURATION} s runs, server on CPU $SERVER_CPUS, client on CPU $CLIENT_CPUS)"
}
