#!/usr/bin/env bash
# Packet mode's own cost (a benchmark, not a test: it prints figures; nothing checks them).
#
# 1. Bulk TCP: `h2lab link --packet` at RATE (default 1gbit) and RTT (default 1ms), MTU 1500,
#    the link thread pinned to LINK_CPU (default 0); curl on the client side downloads SIZE
#    (default 300m) from the in-process server. Prints goodput, the down direction's packets/s,
#    the link thread's CPU time per packet (utime + stime from /proc, in clock ticks turned
#    into ns) and its CPU utilisation: at 100% the link thread is what limits the rate.
# 2. Added delay at low load: ROUNDS (default 21) TCP connects (curl's time_connect is one
#    round trip) across a DELAY_RTT (default 10ms) path; the median minus the configured RTT is
#    what the link adds.
#
#   H2LAB   the h2lab binary (default target/release/h2lab); needs root (or a user namespace)
set -euo pipefail
H2LAB=${H2LAB:-target/release/h2lab}
RATE=${RATE:-1gbit}
RTT=${RTT:-1ms}
SIZE=${SIZE:-300m}
LINK_CPU=${LINK_CPU:-0}
DELAY_RTT=${DELAY_RTT:-10ms}
ROUNDS=${ROUNDS:-21}
[ -x "$H2LAB" ] || { echo "error: $H2LAB is not an executable (set H2LAB)" >&2; exit 1; }

# Runs inside the client namespace; $PPID is h2lab, whose thread h2lab-link-pack is the link.
bulk='
tid=""
for t in /proc/$PPID/task/*; do
  [ "$(cat "$t/comm")" = h2lab-link-pack ] && tid=${t##*/}
done
[ -n "$tid" ] || { echo "no link thread" >&2; exit 1; }
taskset -p -c "$LINK_CPU" "$tid" >/dev/null
cpu() { awk "{print \$14 + \$15}" "/proc/$PPID/task/$tid/stat"; }
c0=$(cpu)
out=$(curl -s -o /dev/null -w "%{size_download} %{time_total} %{time_starttransfer}" "${H2LAB_URL}data?size=$SIZE")
c1=$(cpu)
echo "RESULT $out $c0 $c1 $(getconf CLK_TCK)"
'
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LINK_CPU=$LINK_CPU "$H2LAB" link --packet --rtt "$RTT" --down "$RATE" --up "$RATE" -- \
  env LINK_CPU="$LINK_CPU" SIZE="$SIZE" bash -c "$bulk" | tee "$log" >/dev/null
read -r _ bytes total start c0 c1 hz < <(grep '^RESULT' "$log")
pkts=$(awk '/^down:/ {print $2}' "$log")
awk -v b="$bytes" -v t="$total" -v s="$start" -v c0="$c0" -v c1="$c1" -v hz="$hz" -v p="$pkts" \
  -v rate="$RATE" -v rtt="$RTT" 'BEGIN {
    secs = t - s; cpu = (c1 - c0) / hz
    printf "bulk TCP over %s, RTT %s: %.1f Mbit/s goodput, %.0f packets/s down, link thread CPU %.0f%% of one core, %.0f ns CPU per packet (both directions: %d packets down)\n",
      rate, rtt, b * 8 / secs / 1e6, p / t, 100 * cpu / t, cpu * 1e9 / p, p
  }'

probe='
for i in $(seq 1 '"$ROUNDS"'); do
  curl -s -o /dev/null -w "%{time_connect}\n" "${H2LAB_URL}data?size=1"
done'
"$H2LAB" link --packet --rtt "$DELAY_RTT" -- bash -c "$probe" > "$log"
grep -E '^[0-9.]+$' "$log" | sort -n | awk -v rtt="$DELAY_RTT" '{v[NR] = $1} END {
    m = v[int((NR + 1) / 2)]; r = rtt; sub(/ms$/, "", r)
    printf "low load: median TCP connect %.3f ms over a %s path: %.0f us added (%d connects)\n",
      m * 1e3, rtt, (m * 1e3 - r) * 1e3, NR
  }'
