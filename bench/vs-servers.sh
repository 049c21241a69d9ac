#!/usr/bin/env bash
# Server request rate: h2lab serve vs nghttpd (h2c, TLS h2) and vs nginx (HTTP/1.1).
# A benchmark, not a test: it prints a Markdown table; nothing checks timing.
#
# One server thread each (h2lab serve --threads 1, nghttpd -n 1, nginx 1 worker), all pinned to
# $SERVER_CPUS (core 0); the same client with the same options on $CLIENT_CPUS (core 1):
# h2load -D (h2c, TLS h2) and wrk (HTTP/1.1). Runs alternate h2lab, anchor, h2lab, anchor, ...
# The ratio column is the median over rounds of (h2lab req/s) / (anchor req/s) for the same
# round. "CPU% srv/client" is each side's CPU time during the run / wall time (server near 100%
# with client well below: the server is the bottleneck, as intended; the other way round the
# client limits the rate and the ratio says little).
#
# Endpoints: h2lab serve /data?size=N; nghttpd and nginx the static file /fileN of N bytes.
#
# Environment:
#   H2LAB     h2lab binary (default: target/release/h2lab), run as
#             "$H2LAB serve --listen 127.0.0.1:PORT [--tls] --threads $THREADS"
#   ROUNDS    rounds per workload (default 3)
#   DURATION  seconds per run (h2load -D, wrk -d; default 3)
#   WARMUP    h2load --warm-up-time (default 1; integer seconds or with a unit: 500ms)
#   CONNS     client connections (default 100)
#   STREAMS   h2load -m for h2 (default 10)
#   SIZES     response sizes in bytes (default "653 102400", i.e. 653 B and 100 KiB)
#   PROTOS    which protocols (default "h2c tls h1")
#   THREADS   server threads/workers (default 1); CLIENT_THREADS client threads (default 1)
#   SERVER_CPUS, CLIENT_CPUS  taskset CPU lists (default 0 and 1)
#   RESULTS_DIR  if set, raw client outputs are copied there
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3}
WARMUP=${WARMUP:-1}
CONNS=${CONNS:-100}
STREAMS=${STREAMS:-10}
SIZES=${SIZES:-"653 102400"}
PROTOS=${PROTOS:-"h2c tls h1"}
THREADS=${THREADS:-1}
CLIENT_THREADS=${CLIENT_THREADS:-1}
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}

bench_init
require_bin h2load nghttpd nginx wrk openssl python3

# --- servers -----------------------------------------------------------------------------
WWW="$WORK/www"
mkdir -p "$WWW" && chmod 755 "$WWW"
for s in $SIZES; do gen_file "$WWW/file$s" "$s"; done
gen_cert "$WORK"
start_nghttpd nghttpd-h2c h2c "$WWW" "--workers=$THREADS"
NGHTTPD_H2C=$PORT NGHTTPD_H2C_PID=$BG_PID
start_nghttpd nghttpd-tls tls "$WWW" "--workers=$THREADS"
NGHTTPD_TLS=$PORT NGHTTPD_TLS_PID=$BG_PID
start_nginx nginx "$WWW" "$THREADS"
NGINX_PID=$BG_PID

SUT_PLAIN="" SUT_TLS="" SUT_PLAIN_PID="" SUT_TLS_PID=""
# start_sut NAME [--tls]: h2lab serve on a fresh port; sets PORT, BG_PID (returns 1 on failure).
start_sut() {
  local name=$1 attempt
  shift
  for attempt in 1 2 3; do
    PORT=$(free_port)
    start_bg "$name" "$H2LAB" serve --listen "127.0.0.1:$PORT" "$@" --threads "$THREADS"
    wait_port "$PORT" 10 && kill -0 "$BG_PID" 2>/dev/null && return 0
    stop_bg "$BG_PID"
    log "$name: start attempt $attempt failed"
  done
  log "$name did not start; its log:"
  sed 's/^/    /' "$WORK/$name.log" >&2 || true
  return 1
}
if [ -x "$H2LAB" ]; then
  if start_sut h2lab-plain; then SUT_PLAIN=$PORT SUT_PLAIN_PID=$BG_PID; fi
  if start_sut h2lab-tls --tls; then SUT_TLS=$PORT SUT_TLS_PID=$BG_PID; fi
else
  echo "h2lab binary not found: $H2LAB (set H2LAB); running the anchor columns only"
fi
log "h2lab plain :${SUT_PLAIN:-none} tls :${SUT_TLS:-none}; nghttpd h2c :$NGHTTPD_H2C tls :$NGHTTPD_TLS;" \
  "nginx h1 :$NGINX_H1; server CPUs $SERVER_CPUS, client CPUs $CLIENT_CPUS"

# --- one measured run ----------------------------------------------------------------------
RUN_SEQ=0
# preflight LABEL PROTO URL SIZE: a short h2load run (20 requests) must get 20 responses of
# exactly SIZE body bytes over the expected protocol (h2c, h2 or http/1.1). The timed runs use
# -D, where h2load's byte counts include the warm-up and cannot be checked per response.
preflight() {
  local label=$1 proto=$2 url=$3 size=$4 out="$WORK/preflight.out" want h1=()
  case $proto in h2c) want=h2c ;; tls) want=h2 ;; *) want=http/1.1 h1=(--h1) ;; esac
  run_client "$out" h2load "${h1[@]}" -n 20 -c 1 -m 1 "$url"
  parse_client "$out"
  if [ "${P_OK:-0}" = 20 ] && [ "${P_DATA:-0}" = $((20 * size)) ] && [ "$P_PROTO" = "$want" ]; then
    return 0
  fi
  log "warning: $label: check failed (want 20 x $size bytes over $want; got ${P_OK:-0} ok," \
    "${P_DATA:-?} body bytes, protocol ${P_PROTO:-none}); skipping it"
  tail -n 8 "$out" | sed 's/^/    /' >&2
  return 1
}

# measure LABEL SERVER_PGID CMD...: sets M_RPS, M_SRV and M_CLT (server and client CPU % of
# wall time).
measure() {
  local label=$1 pgid=$2
  shift 2
  RUN_SEQ=$((RUN_SEQ + 1))
  local out="$WORK/run-$RUN_SEQ.out" t0 t1 start end
  t0=$(group_cpu_ticks "$pgid")
  start=$(date +%s.%N)
  run_client "$out" "$@"
  end=$(date +%s.%N)
  t1=$(group_cpu_ticks "$pgid")
  parse_client "$out"
  M_RPS=${P_RPS:-n/a}
  M_SRV=$(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" -v s="$start" -v e="$end" \
    'BEGIN { if (e > s) printf "%.0f", (b - a) / hz / (e - s) * 100; else print "n/a" }')
  M_CLT=$(awk -v u="$T_USER" -v s="$T_SYS" -v w="$T_WALL" 'BEGIN { if (w > 0) printf "%.0f", (u + s) / w * 100; else print "n/a" }')
  local note=""
  if [ "$T_STATUS" != 0 ] || [ "${P_FAILED:-0}" != 0 ] || [ "${P_OK:-0}" = 0 ]; then
    note="exit $T_STATUS, ${P_FAILED:-?} failed, ${P_OK:-0} ok"
  fi
  if [ -n "$note" ]; then
    log "warning: $label: $note; the rate of this run is not counted"
    tail -n 5 "$out" | sed 's/^/    /' >&2
    M_RPS=n/a
  fi
  log "  $label: $M_RPS req/s, CPU server $M_SRV% client $M_CLT%, ok=${P_OK:-0} proto=${P_PROTO:-?}"
  if [ -n "${RESULTS_DIR:-}" ]; then
    mkdir -p "$RESULTS_DIR"
    cp "$out" "$RESULTS_DIR/$(printf '%03d' "$RUN_SEQ")-${label//[^A-Za-z0-9._-]/_}.txt"
  fi
}

# client_cmd PROTO URL: sets the CMD array (the same client options for every server).
client_cmd() {
  if [ "$1" = h1 ]; then
    CMD=(wrk "-t$CLIENT_THREADS" "-c$CONNS" "-d${DURATION}s" "$2")
  else
    CMD=(h2load "-t$CLIENT_THREADS" "-c$CONNS" "-m$STREAMS" -D "$DURATION" --warm-up-time "$WARMUP" "$2")
  fi
}

ROWS=()
for size in $SIZES; do
  if [ "$size" -ge 1048576 ] && [ $((size % 1048576)) = 0 ]; then
    hsize="$((size / 1048576)) MiB"
  elif [ "$size" -ge 1024 ] && [ $((size % 1024)) = 0 ]; then
    hsize="$((size / 1024)) KiB"
  else
    hsize="$size B"
  fi
  for proto in $PROTOS; do
    case $proto in
    h2c)
      anchor=nghttpd anchor_pid=$NGHTTPD_H2C_PID sut_pid=$SUT_PLAIN_PID
      sut_url=${SUT_PLAIN:+http://127.0.0.1:$SUT_PLAIN/data?size=$size}
      anchor_url="http://127.0.0.1:$NGHTTPD_H2C/file$size"
      ;;
    tls)
      anchor=nghttpd anchor_pid=$NGHTTPD_TLS_PID sut_pid=$SUT_TLS_PID
      sut_url=${SUT_TLS:+https://127.0.0.1:$SUT_TLS/data?size=$size}
      anchor_url="https://127.0.0.1:$NGHTTPD_TLS/file$size"
      ;;
    h1)
      anchor=nginx anchor_pid=$NGINX_PID sut_pid=$SUT_PLAIN_PID
      sut_url=${SUT_PLAIN:+http://127.0.0.1:$SUT_PLAIN/data?size=$size}
      anchor_url="http://127.0.0.1:$NGINX_H1/file$size"
      ;;
    *) die "unknown protocol '$proto' (h2c tls h1)" ;;
    esac
    if [ "$proto" = h1 ]; then
      client="wrk -t$CLIENT_THREADS -c$CONNS"
    else
      client="h2load -t$CLIENT_THREADS -c$CONNS -m$STREAMS"
    fi
    workload="$hsize $proto"
    log "$workload ($client)"
    sut_note=""
    if [ -n "$sut_url" ] && ! preflight "$workload h2lab" "$proto" "$sut_url" "$size"; then
      sut_url="" sut_note=" (check failed)"
    fi
    anchor_ok=1
    preflight "$workload $anchor" "$proto" "$anchor_url" "$size" || anchor_ok=0
    sut_rps=() anchor_rps=() ratios=() sut_srv=() anchor_srv=() sut_clt=() anchor_clt=()
    for r in $(seq "$ROUNDS"); do
      this=n/a
      if [ -n "$sut_url" ]; then
        client_cmd "$proto" "$sut_url"
        measure "$workload h2lab r$r" "$sut_pid" "${CMD[@]}"
        sut_rps+=("$M_RPS") sut_srv+=("$M_SRV") sut_clt+=("$M_CLT") this=$M_RPS
      fi
      [ "$anchor_ok" = 1 ] || continue
      client_cmd "$proto" "$anchor_url"
      measure "$workload $anchor r$r" "$anchor_pid" "${CMD[@]}"
      anchor_rps+=("$M_RPS") anchor_srv+=("$M_SRV") anchor_clt+=("$M_CLT")
      ratios+=("$(ratio "$this" "$M_RPS")")
    done
    ROWS+=("| $workload | $client | $(fmt "$(median "${sut_rps[@]}")" 0)$sut_note | $anchor | $(fmt "$(median "${anchor_rps[@]}")" 0) | $(fmt "$(median "${ratios[@]}")" 2) | $(fmt "$(median "${sut_srv[@]}")" 0)/$(fmt "$(median "${sut_clt[@]}")" 0) | $(fmt "$(median "${anchor_srv[@]}")" 0)/$(fmt "$(median "${anchor_clt[@]}")" 0) |")
  done
done

# --- report --------------------------------------------------------------------------------
sut_label="h2lab serve"
[ -x "$H2LAB" ] || sut_label="h2lab serve (not found)"
echo
echo "### Server request rate: $sut_label vs nghttpd (h2c, TLS h2) and nginx (HTTP/1.1)"
echo
echo "$(h2load --version 2>/dev/null | head -n 1), wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -n 1)," \
  "$(nghttpd --version 2>/dev/null | head -n 1), $($(bin_path nginx) -v 2>&1 | sed 's/.*: //');" \
  "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)); server threads $THREADS on CPU $SERVER_CPUS," \
  "client on CPU $CLIENT_CPUS; ROUNDS=$ROUNDS DURATION=${DURATION}s WARMUP=${WARMUP}s."
echo "req/s = median of rounds; ratio = median of per-round h2lab/anchor; CPU% srv/client = CPU time / wall time of each side (median)."
echo
echo "| workload | client | h2lab req/s | anchor | anchor req/s | ratio h2lab/anchor | h2lab CPU% srv/client | anchor CPU% srv/client |"
echo "|---|---|---:|---|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
