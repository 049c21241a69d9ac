# shellcheck shell=bash
# shellcheck disable=SC2034 # the helpers return values in globals (T_*, P_*, PORT, ...) read by callers
# Shared helpers for the h2lab benchmark scripts (bench/vs-anchors.sh, bench/vs-servers.sh).
# Source it; it does not run anything by itself.
#
# Conventions
#   - Servers run in their own process group (setsid), pinned with taskset to $SERVER_CPUS
#     (default core 0); clients run pinned to $CLIENT_CPUS (default core 1) under
#     /usr/bin/time, which gives the client's user+sys CPU seconds and peak RSS.
#   - Ports are picked at run time (bind 127.0.0.1:0 and release); readiness is polled.
#   - Everything lives in one temp dir ($WORK) removed on exit; every server started with
#     start_bg is stopped on exit (TERM to its process group, KILL after 5 s).
#   - Progress goes to stderr, result tables to stdout.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$BENCH_DIR/.." && pwd)
CONFIGS="$REPO_ROOT/testdata/anchors/configs"
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
CLK_TCK=$(getconf CLK_TCK)
BG_PIDS=()
WORK=""

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# peak_rss FILE CMD...: runs CMD (its stdout and stderr as given) and writes its peak resident
# set size in MB to FILE (GNU time's %M; "?" without /usr/bin/time). Returns CMD's status.
peak_rss() {
  local file=$1
  shift
  if [ -x /usr/bin/time ]; then
    local status=0
    /usr/bin/time -f "%M" -o "$file.kb" "$@" || status=$?
    echo $(( $(tail -1 "$file.kb") / 1024 )) >"$file"
    rm -f "$file.kb"
    return $status
  fi
  echo "?" >"$file"
  "$@"
}

# bench_init: create $WORK (mode 0755: Apache/nginx workers may drop privileges) and the
# cleanup trap. Call once, early.
bench_init() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/h2lab-bench.XXXXXX")
  chmod 755 "$WORK"
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  command -v taskset >/dev/null || die "taskset not installed"
  [ -x /usr/bin/time ] || die "/usr/bin/time not installed (apt-get install time)"
  local ncpu
  ncpu=$(nproc)
  if [ "$ncpu" -lt 2 ]; then
    log "warning: only $ncpu CPU; server and client share it"
    SERVER_CPUS=0 CLIENT_CPUS=0
  fi
}

bench_cleanup() {
  local pid
  for pid in "${BG_PIDS[@]}"; do stop_bg "$pid"; done
  BG_PIDS=()
  if [ -n "$WORK" ] && [ -d "$WORK" ]; then rm -rf "$WORK"; fi
}

# require_bin NAME...: fail unless every binary is installed.
require_bin() {
  local b
  for b in "$@"; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || die "$b not installed (run .ci/install-anchors.sh)"
  done
}

# bin_path NAME: path of a binary, also looking in /usr/sbin (not on every PATH).
bin_path() {
  command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; }
}

# free_port: print a free TCP port on 127.0.0.1 (racy by nature; fine on a quiet machine).
free_port() {
  python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

# wait_port PORT [TIMEOUT_S]: poll until 127.0.0.1:PORT accepts a TCP connection.
wait_port() {
  local port=$1 timeout=${2:-10} end
  end=$((SECONDS + timeout))
  while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.02
  done
}

# wait_own_port PID PORT [TIMEOUT_S]: poll until process PID listens on TCP 127.0.0.1:PORT (so
# that another process holding the port cannot pass for it); fails as soon as PID exits. Without
# `ss`, only that PID is alive is checked.
wait_own_port() {
  local pid=$1 port=$2 timeout=${3:-10} end
  end=$((SECONDS + timeout))
  while kill -0 "$pid" 2>/dev/null; do
    if ! command -v ss >/dev/null; then
      wait_port "$port" "$timeout" && kill -0 "$pid" 2>/dev/null
      return
    fi
    ss -Hltnp "sport = :$port" 2>/dev/null | grep -q "pid=$pid," && return 0
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.02
  done
  return 1
}

# gen_file PATH SIZE: deterministic content, byte-identical to h2lab-testkit's pattern_bytes:
# 16-byte records "<offset as 15 hex digits>\n", the last one truncated.
gen_file() {
  python3 - "$1" "$2" <<'PY'
import sys
path, size = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    chunk, off = bytearray(), 0
    while off < size:
        chunk += b"%015x\n" % off
        off += 16
        if len(chunk) >= 1 << 20:
            f.write(chunk); chunk = bytearray()
    f.write(chunk)
    f.truncate(size)
PY
  chmod 644 "$1"
}

# gen_cert DIR: self-signed cert for localhost/127.0.0.1 (CA:FALSE) -> DIR/cert.pem DIR/key.pem
gen_cert() {
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1/key.pem" -out "$1/cert.pem" \
    -days 3650 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -addext "basicConstraints=critical,CA:FALSE" >/dev/null 2>&1 || die "openssl req failed"
  chmod 644 "$1/key.pem" "$1/cert.pem"
}

# start_bg NAME CMD...: start CMD in its own process group pinned to $SERVER_CPUS, output to
# $WORK/NAME.log. Sets BG_PID (also the process-group id).
start_bg() {
  local name=$1
  shift
  setsid taskset -c "$SERVER_CPUS" "$@" >"$WORK/$name.log" 2>&1 </dev/null &
  BG_PID=$!
  BG_PIDS+=("$BG_PID")
}

# stop_bg PID: TERM the process group, wait up to 5 s, then KILL it.
stop_bg() {
  local pid=$1 _
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# fail_start NAME: print the log of a server that did not come up, then exit.
fail_start() {
  log "$1 did not start; its log:"
  sed 's/^/    /' "$WORK/$1.log" >&2 || true
  die "$1 did not start"
}

# start_nghttpd NAME h2c|tls DOCROOT [EXTRA_ARGS...]: sets PORT, BG_PID.
start_nghttpd() {
  local name=$1 mode=$2 docroot=$3
  shift 3
  [ -f "$WORK/cert.pem" ] || gen_cert "$WORK"
  local attempt
  for attempt in 1 2 3; do
    PORT=$(free_port)
    if [ "$mode" = h2c ]; then
      start_bg "$name" "$(bin_path nghttpd)" --address=127.0.0.1 --no-tls -d "$docroot" "$@" "$PORT"
    else
      start_bg "$name" "$(bin_path nghttpd)" --address=127.0.0.1 -d "$docroot" "$@" "$PORT" \
        "$WORK/key.pem" "$WORK/cert.pem"
    fi
    wait_port "$PORT" 10 && kill -0 "$BG_PID" 2>/dev/null && return 0
    stop_bg "$BG_PID"
    log "$name: start attempt $attempt failed, retrying with a fresh port"
  done
  fail_start "$name"
}

# start_caddy NAME DOCROOT: Caddy (HTTP/1.1, HTTP/2 and HTTP/3 via quic-go) serving DOCROOT over
# TLS with $WORK's certificate on 127.0.0.1, GOMAXPROCS=1, admin off, HOME in $WORK (addressed
# by IP it needs `default_sni localhost`). Sets PORT and BG_PID.
start_caddy() {
  local name=$1 docroot=$2 attempt
  [ -f "$WORK/cert.pem" ] || gen_cert "$WORK"
  mkdir -p "$WORK/$name-home"
  # The port is free when chosen, but another process may take it before Caddy binds it: Caddy
  # then exits; the start is retried on a fresh port.
  for attempt in 1 2 3; do
    PORT=$(free_port)
    cat >"$WORK/$name.Caddyfile" <<CADDY
{
	admin off
	default_sni localhost
	auto_https disable_redirects
	servers {
		protocols h1 h2 h3
	}
}
https://127.0.0.1:$PORT {
	bind 127.0.0.1
	tls $WORK/cert.pem $WORK/key.pem
	root * $docroot
	file_server
}
CADDY
    start_bg "$name" env HOME="$WORK/$name-home" GOMAXPROCS=1 \
      "$(bin_path caddy)" run --config "$WORK/$name.Caddyfile" --adapter caddyfile
    wait_own_port "$BG_PID" "$PORT" 20 && wait_port "$PORT" 5 && return 0
    stop_bg "$BG_PID"
    log "$name: start attempt $attempt failed, retrying with a fresh port"
  done
  fail_start "$name"
}

# start_nginx NAME DOCROOT [WORKERS [EXTRA_HTTP_DIRECTIVES]]: renders the template;
# sets NGINX_H1, NGINX_H2C, NGINX_TLS (ports), NGINX_SOCK, BG_PID.
start_nginx() {
  local name=$1 docroot=$2 workers=${3:-1} extra=${4:-}
  local prefix="$WORK/$name" attempt
  mkdir -p "$prefix/tmp"
  chmod 755 "$prefix"
  [ -f "$WORK/cert.pem" ] || gen_cert "$WORK"
  for attempt in 1 2 3; do
    NGINX_H1=$(free_port) NGINX_H2C=$(free_port) NGINX_TLS=$(free_port)
    NGINX_SOCK="$prefix/nginx.sock"
    rm -f "$NGINX_SOCK" "$NGINX_SOCK.h2c"
    sed -e "s#@PREFIX@#$prefix#g; s#@DOCROOT@#$docroot#g; s#@PORT_H1@#$NGINX_H1#g" \
      -e "s#@PORT_H2C@#$NGINX_H2C#g; s#@PORT_TLS@#$NGINX_TLS#g; s#@SOCK@#$NGINX_SOCK#g" \
      -e "s#@CERT@#$WORK/cert.pem#g; s#@KEY@#$WORK/key.pem#g" \
      "$CONFIGS/nginx.conf.template" >"$prefix/nginx.conf"
    if [ "$workers" -gt 1 ]; then
      sed -i -e "s/^master_process off;/master_process on;/" \
        -e "s/^worker_processes 1;/worker_processes $workers;/" "$prefix/nginx.conf"
    fi
    if [ -n "$extra" ]; then
      sed -i -e "s#^    access_log off;#    access_log off;\n    $extra#" "$prefix/nginx.conf"
    fi
    start_bg "$name" "$(bin_path nginx)" -c "$prefix/nginx.conf" -p "$prefix" -e stderr
    if wait_port "$NGINX_H1" 10 && wait_port "$NGINX_H2C" 5 && wait_port "$NGINX_TLS" 5 &&
      kill -0 "$BG_PID" 2>/dev/null; then
      return 0
    fi
    stop_bg "$BG_PID"
    log "$name: start attempt $attempt failed, retrying with fresh ports"
  done
  fail_start "$name"
}

# run_client OUT CMD...: run CMD pinned to $CLIENT_CPUS under /usr/bin/time; stdout+stderr to OUT.
# Sets T_WALL T_USER T_SYS (seconds) T_RSS_KB (peak RSS) T_STATUS (exit status).
run_client() {
  local out=$1
  shift
  local tf="$out.time"
  T_STATUS=0
  /usr/bin/time -f '%e %U %S %M' -o "$tf" taskset -c "$CLIENT_CPUS" "$@" >"$out" 2>&1 || T_STATUS=$?
  read -r T_WALL T_USER T_SYS T_RSS_KB < <(tail -n 1 "$tf")
}

# parse_client OUT: parse an h2load-format (h2load, h2lab bench) or wrk report.
# Sets P_OK (completed 2xx/3xx responses), P_FAILED, P_RPS (req/s as reported),
# P_DATA (body bytes, h2load format only; empty otherwise), P_PROTO.
parse_client() {
  local out=$1
  P_OK="" P_FAILED="" P_RPS="" P_DATA="" P_PROTO=""
  if grep -q '^requests: ' "$out"; then
    P_OK=$(sed -n 's/^requests: .* \([0-9]\+\) succeeded.*/\1/p' "$out")
    P_FAILED=$(sed -n 's/^requests: .* \([0-9]\+\) failed.*/\1/p' "$out")
    P_RPS=$(sed -n 's/^finished in [^,]*, \([0-9.]\+\) req\/s.*/\1/p' "$out")
    P_DATA=$(sed -n 's/^traffic: .*(\([0-9]\+\)) data$/\1/p' "$out")
    P_PROTO=$(sed -n 's/^Application protocol: //p' "$out" | head -n 1)
  elif grep -q ' requests in ' "$out"; then
    local total non2xx errs
    total=$(sed -n 's/^ *\([0-9]\+\) requests in .*/\1/p' "$out")
    non2xx=$(sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]\+\).*/\1/p' "$out")
    errs=$(sed -n 's/^ *Socket errors: connect \([0-9]\+\), read \([0-9]\+\), write \([0-9]\+\), timeout \([0-9]\+\).*/\1 \2 \3 \4/p' "$out")
    P_OK=$((total - ${non2xx:-0}))
    P_FAILED=$((${non2xx:-0} + $(echo "${errs:-0}" | awk '{s=0; for(i=1;i<=NF;i++) s+=$i; print s}')))
    P_RPS=$(sed -n 's/^Requests\/sec: *\([0-9.]\+\).*/\1/p' "$out")
    P_PROTO=http/1.1
  elif grep -q '^Status code distribution:' "$out"; then
    # oha (text output, --no-color): "  [200] N responses", "  Requests/sec:<TAB>R",
    # "Error distribution:" then "  [N] message" per error kind.
    P_OK=$(awk '/^ *\[[23][0-9][0-9]\] [0-9]+ responses/ { gsub(/[^0-9 ]/, " "); s += $2 } END { print s + 0 }' "$out")
    P_FAILED=$(awk '/^ *\[[145][0-9][0-9]\] [0-9]+ responses/ { gsub(/[^0-9 ]/, " "); s += $2 }
      /^Error distribution:/ { e = 1; next } e && /^ *\[[0-9]+\]/ { gsub(/[^0-9 ]/, " ", $1); s += $1 }
      END { print s + 0 }' "$out")
    P_RPS=$(sed -n 's/^ *Requests\/sec:[[:space:]]*\([0-9.]\+\).*/\1/p' "$out" | head -n 1)
  fi
}

# group_cpu_ticks PGID: utime+stime (clock ticks, all threads) summed over the process group.
group_cpu_ticks() {
  local pgid=$1
  # cat (not awk) opens the files: processes may vanish meanwhile, and mawk aborts on those.
  # cat then exits 1, which pipefail + set -e would turn into an abort of the whole script.
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v g="$pgid" '{
      # strip "pid (comm)" (comm may contain spaces) then fields: state ppid pgrp ... utime stime
      sub(/^[0-9]+ \(.*\) /, "");
      if ($3 == g) t += $12 + $13
    } END { print t + 0 }'
}

# cpu_per_mreq USER SYS OK: client CPU seconds per million completed requests.
cpu_per_mreq() {
  awk -v u="$1" -v s="$2" -v n="$3" 'BEGIN { if (n > 0) printf "%.3f", (u + s) * 1e6 / n; else print "nan" }'
}

# median X...: median of the numeric arguments ("nan" entries ignored); "n/a" if none.
median() {
  printf '%s\n' "$@" | { grep -E '^-?[0-9.]+([eE][-+]?[0-9]+)?$' || true; } | sort -g |
    awk '{ a[NR] = $1 } END {
      if (NR == 0) { print "n/a"; exit }
      if (NR % 2) m = a[(NR + 1) / 2]; else m = (a[NR / 2] + a[NR / 2 + 1]) / 2
      printf "%.6g\n", m }'
}

# max X...: maximum of the numeric arguments; "n/a" if none.
max() {
  printf '%s\n' "$@" | { grep -E '^-?[0-9.]+$' || true; } | sort -g | tail -n 1 | grep . || echo n/a
}

# ratio A B: A/B with 2 decimals, "n/a" when either is missing or B is 0.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'
}

# fmt NUM DECIMALS: number formatting that passes "n/a" through.
fmt() {
  awk -v x="$1" -v d="$2" 'BEGIN { if (x ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) printf "%.*f", d, x; else printf "%s", x }'
}

# kb_to_mb KB
kb_to_mb() { fmt "$(awk -v k="$1" 'BEGIN { if (k ~ /^[0-9]+$/) printf "%.1f", k / 1024; else print "n/a" }')" 1; }
