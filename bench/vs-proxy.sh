#!/usr/bin/env bash
# h2lab proxy vs nginx as the reverse proxy. A benchmark, not a test:
# it prints Markdown tables; nothing checks timing.
#
# Topology: client -> proxy (one worker, pinned to $SERVER_CPUS) -> 4 h2lab serve backends
# (pinned with the client to $CLIENT_CPUS), HTTP/1.1 keep-alive upstream (nginx: the seed's
# configuration, keepalive 256; h2lab proxy: --pool 256). Clients h2load --h1 and wrk, 653 B
# and 100 KB responses, h2lab proxy and nginx ALTERNATED (A B, then B A, ...).
# Per run: request rate (as the client reports it) and proxy CPU (user+sys of its process
# group, /proc) per request. Ratio columns: median over rounds of h2lab / nginx, with the
# range (lowest-highest per-round ratio) in brackets.
# Then the multiplexing row: h2lab proxy with h2c-mux vs h1 upstreams at c=200 (h2load --h1,
# 653 B): request rate and upstream connections opened (the proxy's --stats).
#
# Environment:
#   H2LAB     h2lab binary (default: target/release/h2lab)
#   ROUNDS    rounds per workload (default 3)
#   DURATION  seconds per run (default 5)
#   CONNS     client connections of the proxy-vs-nginx runs (default 50)
#   SERVER_CPUS, CLIENT_CPUS  taskset CPU lists (default 0 and 1)
#   SYSCALLS  1: also count each proxy's system calls per request (strace -c -f -p, attached
#             during an h2load -n $SYSCALL_REQS run per response size; strace slows the
#             proxy, so these runs are not timed)
#   KERNEL    1: also, per proxy and response size, one more h2load run of $DURATION s (not
#             timed) counting per request, in the proxy's own context with perf tracepoints
#             (no strace slowdown; needs perf and tracefs, root): system calls by kind, reads
#             that returned EAGAIN, TCP segments the proxy sent (net_dev_xmit) and sleeping
#             peers its sends woke (sched_wakeup). Machine-wide counters (nstat) are not used:
#             other loopback traffic on the machine would be counted too.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}

bench_init

# span X...: "lowest-highest" of the numeric arguments.
span() {
  printf '%s\n' "$@" | { grep -E '^-?[0-9.]+$' || true; } | sort -g |
    awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR == 0) print "n/a"; else printf "%s-%s", lo, hi }'
}
require_bin h2load nginx wrk python3
[ -x "$H2LAB" ] || die "h2lab binary not found: $H2LAB (cargo build --release)"
NGINX=$(bin_path nginx)

# --- backends ----------------------------------------------------------------------------
BACKENDS=()
for i in 1 2 3 4; do
  port=$(free_port)
  setsid taskset -c "$CLIENT_CPUS" "$H2LAB" serve -l "127.0.0.1:$port" -q >"$WORK/backend$i.log" 2>&1 </dev/null &
  BG_PIDS+=("$!")
  wait_port "$port" || fail_start "backend$i"
  BACKENDS+=("127.0.0.1:$port")
done
log "backends: ${BACKENDS[*]}"

# --- proxies -----------------------------------------------------------------------------
start_h2lab_proxy() { # NAME PROTO -> PORT, BG_PID
  PORT=$(free_port)
  local args=()
  for b in "${BACKENDS[@]}"; do args+=(-u "$b"); done
  start_bg "$1" "$H2LAB" proxy -l "127.0.0.1:$PORT" -t 1 --pool 256 --upstream-protocol "$2" --stats -q "${args[@]}"
  wait_port "$PORT" || fail_start "$1"
}

start_nginx_proxy() { # -> PORT, BG_PID
  PORT=$(free_port)
  local d="$WORK/nginx"
  mkdir -p "$d/logs"
  {
    echo "worker_processes 1; error_log $d/logs/error.log warn; pid $d/nginx.pid;"
    echo "events { worker_connections 4096; }"
    echo "http { access_log off; keepalive_timeout 65; keepalive_requests 100000; gzip off;"
    echo "  client_body_temp_path $d/b; proxy_temp_path $d/p; fastcgi_temp_path $d/f; uwsgi_temp_path $d/u; scgi_temp_path $d/s;"
    echo "  upstream backend {"
    for b in "${BACKENDS[@]}"; do echo "    server $b;"; done
    echo "    keepalive 256; keepalive_requests 100000; keepalive_timeout 60s; }"
    echo "  server { listen 127.0.0.1:$PORT; location / { proxy_pass http://backend;"
    echo "    proxy_http_version 1.1; proxy_set_header Connection \"\";"
    echo "    proxy_set_header Host \$host; proxy_set_header X-Real-IP \$remote_addr;"
    echo "    proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto \$scheme;"
    echo "    proxy_buffering on; proxy_buffer_size 16k; proxy_buffers 8 32k; } }"
    echo "}"
  } >"$d/nginx.conf"
  start_bg nginx "$NGINX" -p "$d" -c "$d/nginx.conf" -g "daemon off;"
  wait_port "$PORT" || fail_start nginx
}

start_h2lab_proxy h2lab-h1 h1
H2LAB_PORT=$PORT H2LAB_PID=$BG_PID
start_nginx_proxy
NGINX_PORT=$PORT NGINX_PID=$BG_PID

# measure NAME PORT PID CLIENT PATH -> R_RPS R_CPU (proxy CPU microseconds per request)
measure() {
  local name=$1 port=$2 pid=$3 client=$4 path=$5 out before after
  out="$WORK/$name-$client-$(date +%s%N).out"
  before=$(group_cpu_ticks "$pid")
  case $client in
    h2load) run_client "$out" h2load --h1 -c "$CONNS" -t 1 -D "$DURATION" "http://127.0.0.1:$port$path" ;;
    wrk) run_client "$out" wrk -t 1 -c "$CONNS" -d "${DURATION}s" "http://127.0.0.1:$port$path" ;;
  esac
  after=$(group_cpu_ticks "$pid")
  parse_client "$out"
  R_RPS=${P_RPS:-n/a}
  R_CPU=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" -v n="${P_OK:-0}" \
    'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "nan" }')
  [ "${P_FAILED:-0}" = 0 ] || log "warning: $name $client $path: ${P_FAILED} failed requests"
}

echo "## h2lab proxy vs nginx (one worker each, HTTP/1.1 keep-alive upstream, 4 h2lab serve backends, c=$CONNS, ${DURATION}s runs, $ROUNDS rounds alternated)"
echo
echo "| client | response | h2lab req/s | nginx req/s | rate ratio | h2lab CPU µs/req | nginx CPU µs/req | CPU ratio |"
echo "|---|---|---|---|---|---|---|---|"
for client in h2load wrk; do
  for size in 653 100k; do
    path="/data?size=$size"
    hr=() nr=() hc=() nc=() rr=() cr=()
    for round in $(seq "$ROUNDS"); do
      if [ $((round % 2)) = 1 ]; then order="h2lab nginx"; else order="nginx h2lab"; fi
      for who in $order; do
        if [ "$who" = h2lab ]; then
          measure h2lab "$H2LAB_PORT" "$H2LAB_PID" "$client" "$path"; h_rps=$R_RPS h_cpu=$R_CPU
        else
          measure nginx "$NGINX_PORT" "$NGINX_PID" "$client" "$path"; n_rps=$R_RPS n_cpu=$R_CPU
        fi
      done
      hr+=("$h_rps") nr+=("$n_rps") hc+=("$h_cpu") nc+=("$n_cpu")
      rr+=("$(ratio "$h_rps" "$n_rps")") cr+=("$(ratio "$h_cpu" "$n_cpu")")
      log "$client $size round $round: h2lab $h_rps req/s $h_cpu us/req, nginx $n_rps req/s $n_cpu us/req"
    done
    echo "| $client | $size | $(fmt "$(median "${hr[@]}")" 0) | $(fmt "$(median "${nr[@]}")" 0) | $(median "${rr[@]}") ($(span "${rr[@]}")) | $(median "${hc[@]}") | $(median "${nc[@]}") | $(median "${cr[@]}") ($(span "${cr[@]}")) |"
  done
done
if [ "${SYSCALLS:-0}" = 1 ] && command -v strace >/dev/null; then
  SYSCALL_REQS=${SYSCALL_REQS:-20000}
  echo
  echo "## System calls per request (strace -c -f, h2load --h1 -n $SYSCALL_REQS -c $CONNS)"
  echo
  echo "| proxy | response | total | by call |"
  echo "|---|---|---|---|"
  nginx_worker=$(pgrep -P "$NGINX_PID" | head -n 1)
  for size in 653 100k; do
    for who in h2lab nginx; do
      if [ "$who" = h2lab ]; then port=$H2LAB_PORT pid=$H2LAB_PID; else port=$NGINX_PORT pid=$nginx_worker; fi
      st="$WORK/strace-$who-$size"
      strace -c -f -p "$pid" -o "$st" 2>/dev/null &
      spid=$!
      sleep 0.5 # attached (upstream connections are warm from the runs above)
      run_client "$st.out" h2load --h1 -n "$SYSCALL_REQS" -c "$CONNS" -t 1 "http://127.0.0.1:$port/data?size=$size"
      kill -INT "$spid" 2>/dev/null
      wait "$spid" 2>/dev/null || true
      n=$SYSCALL_REQS
      # strace -c columns: % time, seconds, usecs/call, calls, [errors], syscall.
      total=$(awk -v n="$n" '$NF == "total" { printf "%.2f", $4 / n }' "$st")
      calls=$(awk -v n="$n" '$1 ~ /^[0-9.]+$/ && $NF != "total" && NF >= 5 {
          if ($4 / n >= 0.1) printf "%s %.2f, ", $NF, $4 / n }' "$st")
      echo "| $who | $size | $total | ${calls%, } |"
    done
  done
fi
if [ "${KERNEL:-0}" = 1 ] && command -v perf >/dev/null; then
  echo
  echo "## Kernel work per request (h2load --h1 -c $CONNS, ${DURATION}s; counted in the proxy's own context with perf tracepoints)"
  echo
  echo "| proxy | response | system calls | epoll_wait | reads | writes | other | reads that found nothing (EAGAIN) | TCP segments sent | sleeping peers woken |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  nginx_worker=$(pgrep -P "$NGINX_PID" | head -n 1)
  ev=()
  for c in epoll_wait recvfrom sendto writev readv read write getsockopt setsockopt epoll_ctl; do
    ev+=(-e "syscalls:sys_enter_$c")
  done
  for c in recvfrom readv read; do ev+=(-e "syscalls:sys_exit_$c" --filter 'ret == -11'); done
  ev+=(-e net:net_dev_xmit -e sched:sched_wakeup)
  for size in 653 100k; do
    for who in h2lab nginx; do
      if [ "$who" = h2lab ]; then port=$H2LAB_PORT pid=$H2LAB_PID; else port=$NGINX_PORT pid=$nginx_worker; fi
      pf="$WORK/kernel-$who-$size.perf"
      perf stat -x, "${ev[@]}" -p "$pid" -o "$pf" -- sleep "$((DURATION + 1))" 2>/dev/null &
      ppid=$!
      sleep 0.2 # attached
      run_client "$pf.out" h2load --h1 -c "$CONNS" -t 1 -D "$DURATION" "http://127.0.0.1:$port/data?size=$size"
      wait "$ppid" 2>/dev/null || true
      parse_client "$pf.out"
      # perf stat -x, lines: count,,event,...; per request (the client's completed ones).
      row=$(awk -F, -v n="${P_OK:-0}" '$3 ~ /:/ { c = $3; v = $1 + 0
          if (c ~ /sys_exit_/) ea += v
          else if (c ~ /sys_enter_/) { sub(/.*sys_enter_/, "", c); t += v
            if (c == "epoll_wait") e += v; else if (c ~ /^(recvfrom|readv|read)$/) r += v
            else if (c ~ /^(sendto|writev|write)$/) w += v; else o += v }
          else if (c == "net:net_dev_xmit") x += v; else if (c == "sched:sched_wakeup") k += v }
        END { if (n > 0) printf "%.2f | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f | %.2f", t / n, e / n, r / n, w / n, o / n, ea / n, x / n, k / n
              else print "n/a | | | | | | |" }' "$pf")
      echo "| $who | $size | $row |"
    done
  done
fi
stop_bg "$H2LAB_PID"
stop_bg "$NGINX_PID"

echo
echo "## h2lab proxy: h2c-mux vs HTTP/1.1 keep-alive upstream at c=200 (h2load --h1, 653 B, ${DURATION}s runs)"
echo
echo "| upstream | req/s (median) | upstream connections opened (median) |"
echo "|---|---|---|"
declare -A RPS CONN_N
for proto in h1 h2c-mux; do RPS[$proto]="" CONN_N[$proto]=""; done
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="h1 h2c-mux"; else order="h2c-mux h1"; fi
  for proto in $order; do
    start_h2lab_proxy "mux-$proto" "$proto"
    out="$WORK/mux-$proto-$round.out"
    run_client "$out" h2load --h1 -c 200 -t 1 -D "$DURATION" "http://127.0.0.1:$PORT/data?size=653"
    parse_client "$out"
    stop_bg "$BG_PID"
    opened=$(sed -n 's/^upstream connections: \([0-9]\+\) opened.*/\1/p' "$WORK/mux-$proto.log" | tail -n 1)
    RPS[$proto]="${RPS[$proto]} ${P_RPS:-n/a}"
    CONN_N[$proto]="${CONN_N[$proto]} ${opened:-n/a}"
    log "c=200 $proto round $round: ${P_RPS:-n/a} req/s, ${opened:-n/a} upstream connections"
  done
done
for proto in h1 h2c-mux; do
  # shellcheck disable=SC2086 # word-split the collected values
  echo "| $proto | $(fmt "$(median ${RPS[$proto]})" 0) | $(median ${CONN_N[$proto]}) |"
done
