#!/usr/bin/env bash
# User-space instructions per request (callgrind, load-independent) of `h2lab serve` and of
# `h2lab bench`, HTTP/3 and HTTP/2 over TLS. One side runs under
# callgrind, the other natively; each side is measured at two request counts and the
# difference is divided by the extra requests, so handshakes and start-up cancel:
#   per request = (Ir at N_HI requests - Ir at N_LO) / (N_HI - N_LO)
# The loop's turn coalescing still depends on speed (the side under callgrind is ~50x
# slower), so the figures are "about" — but they do not move with the machine's load.
# A benchmark, not a test: it prints a Markdown table.
#
#   H2LAB       the h2lab binary (default target/release/h2lab; release has debug symbols)
#   H2LAB_OLD   an earlier binary: its rows are printed too (same script, same counts)
#   SIDES       "server client" (default), ARMS "h3 h2" (default; h3 = table on)
#   N_LO (2000), N_HI (12000), CONNS (10), STREAMS (10), SIZE (653)
#   OUT         keep the callgrind files here (default: removed with the work dir)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}
SIDES=${SIDES:-server client}
ARMS=${ARMS:-h3 h2}
N_LO=${N_LO:-2000}
N_HI=${N_HI:-12000}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
SIZE=${SIZE:-653}

bench_init
require_bin valgrind callgrind_annotate
gen_cert "$WORK"
OUT=${OUT:-$WORK}
mkdir -p "$OUT"
declare -A BIN
BUILDS=new
BIN[new]=$H2LAB
if [ -n "${H2LAB_OLD:-}" ]; then
  BUILDS="new old"
  BIN[old]=$H2LAB_OLD
fi

# total Ir of a callgrind output file
ir() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }

# one SIDE ARM BUILD N: prints the Ir of the side under callgrind for N requests.
one() {
  local side=$1 arm=$2 build=$3 n=$4 port pid out flags=()
  [ "$arm" = h3 ] && flags=(--h3)
  port=$(free_port)
  out="$OUT/cg.$side.$arm.$build.$n"
  local serve=("${BIN[$build]}" serve --tls --listen "127.0.0.1:$port" --h3 --threads 1
    --cert "$WORK/cert.pem" --key "$WORK/key.pem" -q)
  local client=("${BIN[$build]}" bench "${flags[@]}" -n "$n" -c "$CONNS" -m "$STREAMS"
    "https://127.0.0.1:$port/data?size=$SIZE")
  if [ "$side" = server ]; then
    setsid valgrind --tool=callgrind --callgrind-out-file="$out" "${serve[@]}" \
      >"$WORK/serve.log" 2>&1 &
  else
    setsid "${serve[@]}" >"$WORK/serve.log" 2>&1 &
  fi
  pid=$!
  wait_port "$port" 120 || { cat "$WORK/serve.log" >&2; die "serve did not start"; }
  if [ "$side" = server ]; then
    "${client[@]}" >"$WORK/client.out" 2>&1
  else
    valgrind --tool=callgrind --callgrind-out-file="$out" "${client[@]}" >"$WORK/client.out" 2>&1
  fi
  grep -q "succeeded, 0 failed" "$WORK/client.out" || log "warning: $(grep requests: "$WORK/client.out")"
  kill -INT "$pid"
  wait "$pid" || true
  ir "$out"
}

: >"$WORK/rows"
for side in $SIDES; do
  for arm in $ARMS; do
    for b in $BUILDS; do
      lo=$(one "$side" "$arm" "$b" "$N_LO")
      hi=$(one "$side" "$arm" "$b" "$N_HI")
      per=$(awk -v h="$hi" -v l="$lo" -v d="$((N_HI - N_LO))" 'BEGIN { printf "%.0f", (h - l) / d }')
      log "$side $arm $b: $per Ir/request"
      echo "$side $arm $b $per" >>"$WORK/rows"
    done
  done
done
echo "| side | arm | build | Ir/request |"
echo "|---|---|---|---:|"
awk '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$WORK/rows"
