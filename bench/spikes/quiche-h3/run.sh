#!/usr/bin/env bash
# quiche spike: client CPU per completed request of quiche's HTTP/3 client (this
# directory's load generator, h2load's workload shape) against `h2lab bench --h3`
# (quinn-proto + rustls), with the same -c/-m/-n against the same servers, arms alternated.
# A benchmark, not a test: it prints a Markdown table of per-round ratios; nothing checks
# timing. Results: docs/bench.md, "Why it works this way".
#
# Servers (pinned to $SERVER_CPUS): h2lab serve --tls --h3 --threads 1 (/data?size=$SIZE)
# and Caddy 2.6 (GOMAXPROCS=1, /file$SIZE). Clients (pinned to $CLIENT_CPUS, under
# /usr/bin/time: user+sys / completed requests), per server, in an order rotated each round:
#   quiche       the spike (QPACK: quiche announces no dynamic table and uses none)
#   h3           h2lab bench --h3 (announces a 4096-byte QPACK table, its default)
#   h3-static    h2lab bench --h3 --no-qpack-dynamic-table (table 0 both ways, as quiche)
#   h2           h2lab bench, HTTP/2 over TLS (the reference ratio)
# and, with EXTRA_ARMS="quiche-nogso", the spike with GSO off (one datagram per sendmsg);
# with EXTRA_ARMS="quiche-coalesce" and SPIKE_COALESCE=PATH, a build of the spike against a
# locally patched quiche that packs several STREAM frames per packet (quiche 0.30 writes one
# per packet outside its `fuzzing` feature; see docs/bench.md).
# The server's CPU per request during each run is recorded too (/proc ticks of its group).
#
# Environment: ROUNDS (6), CONNS (10), STREAMS (10), SIZE (653), N_SERVE (100000),
#   N_CADDY (15000), H2LAB (target/release/h2lab), SPIKE (this dir's release build),
#   SERVER_CPUS, CLIENT_CPUS (0 and 1), SERVERS ("serve caddy"), EXTRA_ARMS ("").
# Build first: cargo build --release -p h2lab (repo root) and, in this directory,
#   cargo build --release (needs cmake, and libclang for boring-sys' bindgen).
set -euo pipefail
SPIKE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$SPIKE_DIR/../../lib.sh"

ROUNDS=${ROUNDS:-6}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
SIZE=${SIZE:-653}
N_SERVE=${N_SERVE:-100000}
N_CADDY=${N_CADDY:-15000}
SERVERS=${SERVERS:-serve caddy}
EXTRA_ARMS=${EXTRA_ARMS:-}
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}
SPIKE=${SPIKE:-$SPIKE_DIR/target/release/quiche-h3-spike}

bench_init
[ -x "$H2LAB" ] || die "$H2LAB missing (cargo build --release -p h2lab)"
[ -x "$SPIKE" ] || die "$SPIKE missing (cd $SPIKE_DIR && cargo build --release)"
if [[ " $EXTRA_ARMS " == *" quiche-coalesce "* ]]; then
  [ -x "${SPIKE_COALESCE:-}" ] || die "quiche-coalesce needs SPIKE_COALESCE=PATH (a spike built against the patched quiche)"
fi

WWW="$WORK/www"
mkdir -p "$WWW"
gen_file "$WWW/file$SIZE" "$SIZE"
gen_cert "$WORK"

declare -A PORTS PATHS PGIDS NREQ
for server in $SERVERS; do
  case $server in
    serve)
      port=$(free_port)
      start_bg serve "$H2LAB" serve --tls --listen "127.0.0.1:$port" --h3 --threads 1 \
        --cert "$WORK/cert.pem" --key "$WORK/key.pem" -q
      wait_port "$port" || fail_start serve
      PORTS[serve]=$port PATHS[serve]="/data?size=$SIZE" PGIDS[serve]=$BG_PID NREQ[serve]=$N_SERVE
      ;;
    caddy)
      require_bin caddy
      start_caddy caddy "$WWW"
      PORTS[caddy]=$PORT PATHS[caddy]="/file$SIZE" PGIDS[caddy]=$BG_PID NREQ[caddy]=$N_CADDY
      ;;
    *) die "unknown server $server" ;;
  esac
done

# shellcheck disable=SC2206 # EXTRA_ARMS is a word list
ARMS=(quiche h3 h3-static h2 $EXTRA_ARMS)
declare -A CPU SCPU RPS DGS DGR
run_arm() { # SERVER ARM
  local server=$1 arm=$2 out="$WORK/out" url n before after
  url="https://127.0.0.1:${PORTS[$server]}${PATHS[$server]}"
  n=${NREQ[$server]}
  before=$(group_cpu_ticks "${PGIDS[$server]}")
  case $arm in
    quiche) run_client "$out" "$SPIKE" -c "$CONNS" -m "$STREAMS" -n "$n" "$url" ;;
    quiche-coalesce) run_client "$out" "$SPIKE_COALESCE" -c "$CONNS" -m "$STREAMS" -n "$n" "$url" ;;
    quiche-nogso) run_client "$out" "$SPIKE" --no-gso -c "$CONNS" -m "$STREAMS" -n "$n" "$url" ;;
    h3) run_client "$out" "$H2LAB" bench --h3 -c "$CONNS" -m "$STREAMS" -n "$n" "$url" ;;
    h3-static) run_client "$out" "$H2LAB" bench --h3 --no-qpack-dynamic-table \
      -c "$CONNS" -m "$STREAMS" -n "$n" "$url" ;;
    h2) run_client "$out" "$H2LAB" bench -c "$CONNS" -m "$STREAMS" -n "$n" "$url" ;;
  esac
  after=$(group_cpu_ticks "${PGIDS[$server]}")
  parse_client "$out"
  local sent recv
  read -r sent recv < <(sed -n 's/^UDP datagram: \([0-9]*\) sent, \([0-9]*\) received.*/\1 \2/p' "$out" | head -n 1) || true
  if [ "${P_OK:-0}" != "$n" ] || [ "$T_STATUS" != 0 ]; then
    log "$server $arm: exit $T_STATUS, ok=${P_OK:-?} of $n; output:"
    sed 's/^/    /' "$out" >&2
  fi
  log "$server $arm: ok=$P_OK failed=$P_FAILED data=$P_DATA user=$T_USER sys=$T_SYS server_ticks=$((after - before)) datagrams=${sent:-}/${recv:-}"
  local k="$server-$arm"
  CPU[$k]+=" $(awk -v u="$T_USER" -v s="$T_SYS" -v n="$P_OK" 'BEGIN { if (n > 0) printf "%.4f", (u + s) * 1e6 / n; else print "nan" }')"
  SCPU[$k]+=" $(awk -v t="$((after - before))" -v n="$P_OK" -v hz="$CLK_TCK" 'BEGIN { if (n > 0) printf "%.4f", t / hz * 1e6 / n; else print "nan" }')"
  RPS[$k]+=" ${P_RPS:-nan}"
  DGS[$k]+=" $(awk -v d="${sent:-}" -v n="$P_OK" 'BEGIN { if (d != "" && n > 0) printf "%.3f", d / n; else print "nan" }')"
  DGR[$k]+=" $(awk -v d="${recv:-}" -v n="$P_OK" 'BEGIN { if (d != "" && n > 0) printf "%.3f", d / n; else print "nan" }')"
}

LOADS=""
for r in $(seq "$ROUNDS"); do
  LOADS+=" $(cut -d' ' -f1 /proc/loadavg)"
  log "round $r/$ROUNDS (load $(cut -d' ' -f1-3 /proc/loadavg))"
  # Rotate the arms' order each round, and the servers' order every other round.
  rot=$(((r - 1) % ${#ARMS[@]}))
  order=("${ARMS[@]:$rot}" "${ARMS[@]:0:$rot}")
  servers=($SERVERS)
  if [ $((r % 2)) = 0 ]; then servers=($(printf '%s\n' "${servers[@]}" | tac)); fi
  for server in "${servers[@]}"; do
    for arm in "${order[@]}"; do run_arm "$server" "$arm"; done
  done
done
LOADS+=" $(cut -d' ' -f1 /proc/loadavg)"

# per_round_ratios A B: "a1/b1 a2/b2 ..." of two per-round lists.
per_round_ratios() {
  paste <(tr ' ' '\n' <<<"$1" | sed '/^$/d') <(tr ' ' '\n' <<<"$2" | sed '/^$/d') |
    awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 > 0 { printf "%.3f ", $1 / $2 }'
}
spread() { # LIST -> "median (min–max)"
  local m lo hi
  # shellcheck disable=SC2086
  m=$(median $1)
  lo=$(tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | head -n 1)
  hi=$(tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | tail -n 1)
  printf '%.2f (%.2f–%.2f)' "$m" "$lo" "$hi"
}

# shellcheck disable=SC2086 # word splitting of the per-round lists is intended
{
  echo "| server | client | req/s | client CPU µs/req | server CPU µs/req | datagrams sent/recv per req |"
  echo "|---|---|---:|---:|---:|---:|"
  for server in $SERVERS; do
    for arm in "${ARMS[@]}"; do
      k="$server-$arm"
      echo "| $server | $arm | $(median ${RPS[$k]}) | $(median ${CPU[$k]}) | $(median ${SCPU[$k]}) | $(median ${DGS[$k]}) / $(median ${DGR[$k]}) |"
    done
  done
  echo
  echo "Client CPU per request, per-round ratios: median (min–max) over $ROUNDS rounds"
  echo
  echo "| server | quiche / h3 | quiche / h3-static | h3-static / h3 | quiche / h2 | h3 / h2 | h3-static / h2 |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for server in $SERVERS; do
    c() { echo "${CPU[$server-$1]}"; }
    echo "| $server | $(spread "$(per_round_ratios "$(c quiche)" "$(c h3)")") |" \
      "$(spread "$(per_round_ratios "$(c quiche)" "$(c h3-static)")") |" \
      "$(spread "$(per_round_ratios "$(c h3-static)" "$(c h3)")") |" \
      "$(spread "$(per_round_ratios "$(c quiche)" "$(c h2)")") |" \
      "$(spread "$(per_round_ratios "$(c h3)" "$(c h2)")") |" \
      "$(spread "$(per_round_ratios "$(c h3-static)" "$(c h2)")") |"
  done
  if [[ " $EXTRA_ARMS " == *" quiche-nogso "* ]]; then
    echo
    for server in $SERVERS; do
      echo "$server: quiche-nogso / quiche $(spread "$(per_round_ratios "${CPU[$server-quiche-nogso]}" "${CPU[$server-quiche]}")")," \
        "quiche-nogso / h3 $(spread "$(per_round_ratios "${CPU[$server-quiche-nogso]}" "${CPU[$server-h3]}")")"
    done
  fi
  if [[ " $EXTRA_ARMS " == *" quiche-coalesce "* ]]; then
    echo
    for server in $SERVERS; do
      echo "$server: quiche-coalesce / quiche $(spread "$(per_round_ratios "${CPU[$server-quiche-coalesce]}" "${CPU[$server-quiche]}")")," \
        "quiche-coalesce / h3-static $(spread "$(per_round_ratios "${CPU[$server-quiche-coalesce]}" "${CPU[$server-h3-static]}")")"
    done
  fi
  echo
  echo "Per-round client CPU µs/req:"
  for server in $SERVERS; do
    for arm in "${ARMS[@]}"; do echo "  $server $arm:${CPU[$server-$arm]}"; done
  done
  echo "(-c $CONNS -m $STREAMS, -n $N_SERVE (serve) / $N_CADDY (caddy), $SIZE-byte responses," \
    "server on CPU $SERVER_CPUS, client on CPU $CLIENT_CPUS; 1-min load average at each round:$LOADS)"
}
