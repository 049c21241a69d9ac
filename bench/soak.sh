#!/usr/bin/env bash
# Soak: a long open-model run of `h2lab bench` against `h2lab serve`, sampling the resident
# memory (VmRSS) and open file descriptors of both processes every minute into a table, then
# judging whether they stayed flat.
#
#   bench/soak.sh                      # 30 minutes
#   SOAK_MINUTES=2 bench/soak.sh       # a quick check of the script itself
#
# Knobs (environment):
#   SOAK_MINUTES   run length in minutes (default 30)
#   SAMPLE_SECONDS sampling period (default 60)
#   RATE           open-model arrival rate, requests/s (default 2000)
#   RATE_FLAG      the bench flag taking RATE (default --arrival-rate). If this h2lab does not
#                  have it, the run falls back to the closed model (-D only) with a warning.
#   CLIENTS, STREAMS   -c and -m (default 16 and 4)
#   PROTO          h2 (h2c, default) or h1
#   URL_PATH       what to request (default /json)
#   SERVER_CMD     a command starting the server, given the listen address as its last
#                  argument (default: `h2lab serve -q -l`)
#   H2LAB          the h2lab binary (default: target/release/h2lab, built if missing)
#   RSS_SLACK_KB, FD_SLACK   growth allowed between the first and the last sample
#                  (default 8192 kB and 2 descriptors, per process)
#
# Output: progress on stderr, the sample table and the verdict on stdout; the bench report
# goes to $WORK/bench.out and its tail is shown. Exit status 0 when both processes stayed
# flat and the run succeeded, 1 otherwise.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

MINUTES=${SOAK_MINUTES:-30}
SAMPLE=${SAMPLE_SECONDS:-60}
RATE=${RATE:-2000}
RATE_FLAG=${RATE_FLAG:---arrival-rate}
CLIENTS=${CLIENTS:-16}
STREAMS=${STREAMS:-4}
PROTO=${PROTO:-h2}
URL_PATH=${URL_PATH:-/json}
RSS_SLACK_KB=${RSS_SLACK_KB:-8192}
FD_SLACK=${FD_SLACK:-2}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/h2lab-soak.XXXXXX")
chmod 755 "$WORK"
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
command -v taskset >/dev/null || die "taskset not installed"
[ "$(nproc)" -ge 2 ] || SERVER_CPUS=0 CLIENT_CPUS=0

# ---- binaries -------------------------------------------------------------------------------
target_dir=${CARGO_TARGET_DIR:-$REPO_ROOT/target}
H2LAB=${H2LAB:-$target_dir/release/h2lab}
if [ ! -x "$H2LAB" ]; then
  log "building h2lab (release)"
  (cd "$REPO_ROOT" && cargo build --release -q -p h2lab)
fi
if [ -n "${SERVER_CMD:-}" ]; then
  read -r -a server_cmd <<<"$SERVER_CMD"
elif "$H2LAB" serve --help >/dev/null 2>&1; then
  server_cmd=("$H2LAB" serve -q -l)
else
  die "$H2LAB has no 'serve' subcommand: set SERVER_CMD"
fi
load=()
if "$H2LAB" bench --help 2>/dev/null | grep -q -- "$RATE_FLAG"; then
  load=("$RATE_FLAG" "$RATE")
  model="open model, $RATE_FLAG $RATE"
else
  log "warning: h2lab bench has no $RATE_FLAG here: falling back to the closed model (-D only)"
  model="closed model (no $RATE_FLAG)"
fi
proto=()
[ "$PROTO" = h1 ] && proto=(--h1)

# ---- run ------------------------------------------------------------------------------------
port=$(free_port)
start_bg server "${server_cmd[@]}" "127.0.0.1:$port"
server_group=$BG_PID
wait_port "$port" 20 || fail_start server
# The server is the process listening on the port (start_bg runs it under setsid + taskset,
# which exec, so the pid is the server's).
server_pid=$server_group
url="http://127.0.0.1:$port$URL_PATH"
log "soak: ${MINUTES} min, $model, -c $CLIENTS -m $STREAMS, $PROTO, $url"
taskset -c "$CLIENT_CPUS" "$H2LAB" bench -D "${MINUTES}m" -c "$CLIENTS" -m "$STREAMS" \
  "${proto[@]}" "${load[@]}" --json "$WORK/result.json" "$url" >"$WORK/bench.out" 2>&1 &
client_pid=$!

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

printf '%8s  %14s %11s  %14s %11s\n' elapsed "client RSS kB" "client fds" "server RSS kB" "server fds"
# Sample times: 10 s (ramped up), every SAMPLE seconds, and 5 s before the end.
total=$((MINUTES * 60))
times=(10)
for ((t = SAMPLE; t < total - 5; t += SAMPLE)); do [ "$t" -gt 10 ] && times+=("$t"); done
[ $((total - 5)) -gt $((times[${#times[@]} - 1] + 10)) ] && times+=($((total - 5)))
samples=()
start=$SECONDS
i=0
while kill -0 "$client_pid" 2>/dev/null && [ "$i" -lt "${#times[@]}" ]; do
  if [ $((SECONDS - start)) -ge "${times[$i]}" ]; then
    row="$(rss_kb "$client_pid") $(fds "$client_pid") $(rss_kb "$server_pid") $(fds "$server_pid")"
    # The client may have exited between the check and the sample.
    kill -0 "$client_pid" 2>/dev/null || break
    samples+=("$row")
    read -r crss cfd srss sfd <<<"$row"
    printf '%7ss  %14s %11s  %14s %11s\n' "$((SECONDS - start))" "$crss" "$cfd" "$srss" "$sfd"
    i=$((i + 1))
  fi
  sleep 1
done
bench_status=0
wait "$client_pid" || bench_status=$?
log "bench finished with status $bench_status; report tail:"
grep -E '^(finished in|requests:|status codes:|errors:|error:)' "$WORK/bench.out" >&2 || tail -5 "$WORK/bench.out" >&2

# ---- verdict --------------------------------------------------------------------------------
verdict=0
if [ "${#samples[@]}" -lt 2 ]; then
  echo "verdict: not enough samples (${#samples[@]}) to judge"
  verdict=1
else
  # Baseline: the first sample after a minute when there are enough (the 10 s one may still
  # be ramping up).
  base=0
  [ "${#samples[@]}" -ge 3 ] && base=1
  read -r c0 cf0 s0 sf0 <<<"${samples[$base]}"
  read -r c1 cf1 s1 sf1 <<<"${samples[${#samples[@]} - 1]}"
  judge() { # name rss0 rss1 fd0 fd1
    local drss=$(($3 - $2)) dfd=$(($5 - $4)) ok=flat
    if [ "$drss" -gt "$RSS_SLACK_KB" ] || [ "$dfd" -gt "$FD_SLACK" ]; then ok=GROWING; verdict=1; fi
    printf 'verdict: %-6s RSS %+d kB (%s -> %s), fds %+d (%s -> %s): %s\n' "$1" "$drss" "$2" "$3" "$dfd" "$4" "$5" "$ok"
  }
  judge client "$c0" "$c1" "$cf0" "$cf1"
  judge server "$s0" "$s1" "$sf0" "$sf1"
fi
if [ "$bench_status" -ne 0 ]; then
  echo "verdict: h2lab bench exited with status $bench_status"
  verdict=1
fi
exit "$verdict"
