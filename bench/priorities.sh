#!/usr/bin/env bash
# What RFC 9218 scheduling (with TCP_NOTSENT_LOWAT and the bounded output queue) costs on
# loopback: h2lab serve --priorities rfc9218 (the default) vs --priorities off, same client.
# A benchmark, not a test: it prints a Markdown table; nothing checks
# timing.
#
# Both servers run side by side, one thread each, pinned to $SERVER_CPUS; h2load -D on
# $CLIENT_CPUS requests /data?size=N over h2c. Runs alternate off, rfc9218, off, rfc9218, ...
# "ratio" is the median over rounds of (rfc9218 req/s) / (off req/s) of the same round, and
# "srv CPU/req" the server's CPU time per request (ratio likewise): 1.00 = no cost.
#
# Environment:
#   H2LAB     h2lab binary (default: target/release/h2lab)
#   ROUNDS    rounds per workload (default 5); DURATION seconds per run (default 3)
#   CONNS     client connections (default "1 10"); STREAMS h2load -m (default 10)
#   SIZES     response sizes in bytes (default "16384 102400 1048576")
#   SERVER_CPUS, CLIENT_CPUS  taskset CPU lists (default 0 and 1)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
CONNS=${CONNS:-"1 10"}
STREAMS=${STREAMS:-10}
SIZES=${SIZES:-"16384 102400 1048576"}
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}

bench_init
require_bin h2load
[ -x "$H2LAB" ] || die "h2lab binary not found: $H2LAB (cargo build --release -p h2lab)"

start_sut() {
  local name=$1 mode=$2
  PORT=$(free_port)
  start_bg "$name" "$H2LAB" serve --listen "127.0.0.1:$PORT" --threads 1 --priorities "$mode"
  wait_port "$PORT" 10 && kill -0 "$BG_PID" 2>/dev/null || fail_start "$name"
}
start_sut h2lab-off off
OFF_PORT=$PORT OFF_PID=$BG_PID
start_sut h2lab-prio rfc9218
PRIO_PORT=$PORT PRIO_PID=$BG_PID

echo "| size | -c | -m | off req/s (median) | rfc9218 req/s (median) | ratio req/s | ratio srv CPU/req |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for size in $SIZES; do
  for c in $CONNS; do
    rps_off=() rps_prio=() ratios=() cpu_ratios=()
    for r in $(seq "$ROUNDS"); do
      declare -A rps=() cpu=()
      for arm in off prio; do
        if [ $arm = off ]; then port=$OFF_PORT pid=$OFF_PID; else port=$PRIO_PORT pid=$PRIO_PID; fi
        out="$WORK/$arm-$size-$c-$r.out"
        t0=$(group_cpu_ticks "$pid")
        run_client "$out" "$(bin_path h2load)" -D "$DURATION" -c "$c" -m "$STREAMS" \
          "http://127.0.0.1:$port/data?size=$size"
        t1=$(group_cpu_ticks "$pid")
        parse_client "$out"
        rps[$arm]=${P_RPS:-nan}
        cpu[$arm]=$(awk -v d="$((t1 - t0))" -v n="${P_OK:-0}" 'BEGIN { if (n > 0) printf "%.9f", d / n; else print "nan" }')
      done
      rps_off+=("${rps[off]}") rps_prio+=("${rps[prio]}")
      ratios+=("$(ratio "${rps[prio]}" "${rps[off]}")")
      cpu_ratios+=("$(ratio "${cpu[prio]}" "${cpu[off]}")")
      log "size=$size c=$c round $r: off ${rps[off]} req/s, rfc9218 ${rps[prio]} req/s"
    done
    echo "| $size | $c | $STREAMS | $(fmt "$(median "${rps_off[@]}")" 0) | $(fmt "$(median "${rps_prio[@]}")" 0) |" \
      "$(median "${ratios[@]}") | $(median "${cpu_ratios[@]}") |"
  done
done
stop_bg "$OFF_PID"
stop_bg "$PRIO_PID"
