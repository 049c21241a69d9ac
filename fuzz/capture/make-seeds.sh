#!/usr/bin/env bash
# Builds the seed corpora of the end-to-end fuzz targets from real traffic: h2load and
# `h2lab bench` talk to nghttpd, nginx and h2lab's server through a recording proxy
# (record.py); each recorded direction becomes a seed, prefixed with the target's two
# configuration octets (see the targets' docs).
#
#   fuzz/capture/make-seeds.sh            # writes fuzz/seeds/{h2_client_session,h2_server_session,h1_client_stream}/
#
# Needs python3, h2load, nghttpd and nginx (each skipped when missing) and cargo. h2lab's
# server is `h2lab serve -q -l ADDR`; H2LAB_SERVE overrides it with a command taking the
# address last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seeds="$root/fuzz/seeds"
target_dir=${CARGO_TARGET_DIR:-$root/target}
work=$(mktemp -d)
chmod 755 "$work" # nginx workers read the docroot as another user
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ -n "${KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on port $1" >&2
    return 1
}

(cd "$root" && cargo build -q -p h2lab)
h2lab="$target_dir/debug/h2lab"
H2LAB_SERVE=${H2LAB_SERVE:-$h2lab serve -q -l}
rm -rf "$seeds"/{h2_client_session,h2_server_session,h1_client_stream}
mkdir -p "$work/docroot" "$seeds"/{h2_client_session,h2_server_session,h1_client_stream}
head -c 600 /dev/zero | tr '\0' 'a' > "$work/docroot/index.html"
head -c 5000 /dev/zero | tr '\0' 'b' > "$work/docroot/big.bin"
printf 'posted body\n' > "$work/body.txt"

# Servers: name -> port.
declare -A server_port
p=$(free_port)
read -r -a serve_cmd <<<"$H2LAB_SERVE"
"${serve_cmd[@]}" "127.0.0.1:$p" 2>/dev/null &
pids+=($!); server_port[h2lab]=$p
if command -v nghttpd >/dev/null; then
    p=$(free_port); nghttpd --no-tls -d "$work/docroot" "$p" >/dev/null 2>&1 &
    pids+=($!); server_port[nghttpd]=$p
fi
if command -v nginx >/dev/null; then
    # One port with h2 (prior knowledge), one with HTTP/1.1.
    p=$(free_port); p1=$(free_port); mkdir -p "$work/nginx"
    cat > "$work/nginx/nginx.conf" <<CONF
daemon off; pid $work/nginx/pid; error_log $work/nginx/error.log;
events {}
http { access_log off; client_body_temp_path $work/nginx;
  server { listen 127.0.0.1:$p http2; root $work/docroot; location / { } }
  server { listen 127.0.0.1:$p1; root $work/docroot; location / { } } }
CONF
    nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" &
    pids+=($!); server_port[nginx]=$p; server_port[nginx-h1]=$p1
fi
# Which protocols each server speaks in cleartext.
declare -A speaks=([h2lab]="h2 h1" [nghttpd]="h2" [nginx]="h2" [nginx-h1]="h1")

# One recorded exchange: record NAME SERVER CLIENT-COMMAND... (URL placeholder @)
record() {
    local name=$1 server=$2; shift 2
    local port=${server_port[$server]} proxy out="$work/rec/$name"
    proxy=$(free_port)
    : > "$work/proxy.out"
    python3 "$here/record.py" "$proxy" "$port" "$out" > "$work/proxy.out" &
    local pp=$!
    for _ in $(seq 100); do grep -q ready "$work/proxy.out" && break; sleep 0.05; done
    local args=("${@//@/127.0.0.1:$proxy}")
    "${args[@]}" >/dev/null 2>&1 || echo "warning: $name: client failed" >&2
    sleep 0.2
    kill "$pp" 2>/dev/null || true
    wait "$pp" 2>/dev/null || true
}
for s in "${!server_port[@]}"; do wait_port "${server_port[$s]}"; done


# seed TARGET FILE CFG SEED SRC: two octets, then the recorded bytes (at most 16 KiB).
seed() {
    [ -s "$5" ] || return 0
    # shellcheck disable=SC2059 # the format is the two octets, built from numbers
    { printf "\\x$(printf %02x "$3")\\x$(printf %02x "$4")"; head -c 16384 "$5"; } > "$seeds/$1/$2"
}

rec="$work/rec"
for s in "${!server_port[@]}"; do
    case $s in h2lab) paths=(/ /json "/data?size=5000") ;; *) paths=(/index.html /big.bin) ;; esac
    urls=("${paths[@]/#/http://@}")
    if [[ " ${speaks[$s]} " == *" h2 "* ]]; then
        record "$s-h2load-m4" "$s" h2load -n 8 -c 1 -m 4 "${urls[@]}"
        record "$s-h2load-post" "$s" h2load -n 3 -c 1 -m 1 -d "$work/body.txt" "${urls[0]}"
        record "$s-h2lab-m4" "$s" "$h2lab" bench -n 8 -c 1 -m 4 "${urls[@]}"
        # Client session: the server's bytes. cfg: -m 4 (3), POST adds 0x08; read seeds vary.
        seed h2_client_session "$s-h2load-m4" 3 4 "$rec/$s-h2load-m4/conn-0.s2c"
        seed h2_client_session "$s-h2load-m4-small-reads" 3 0 "$rec/$s-h2load-m4/conn-0.s2c"
        seed h2_client_session "$s-h2load-post" $((0x08)) 3 "$rec/$s-h2load-post/conn-0.s2c"
        seed h2_client_session "$s-h2lab-m4" 3 1 "$rec/$s-h2lab-m4/conn-0.s2c"
    fi
    if [[ " ${speaks[$s]} " == *" h1 "* ]]; then
        record "$s-h2load-h1" "$s" h2load --h1 -n 8 -c 1 -m 4 "${urls[@]}"
        record "$s-h2lab-h1" "$s" "$h2lab" bench --h1 -n 8 -c 1 -m 4 "${urls[@]}"
        # HTTP/1.1 client: the server's bytes, pipelining depth 4 (3).
        seed h1_client_stream "$s-h2load-h1" 3 4 "$rec/$s-h2load-h1/conn-0.s2c"
        seed h1_client_stream "$s-h2lab-h1" 3 2 "$rec/$s-h2lab-h1/conn-0.s2c"
    fi
done
# Server session: the clients' bytes (they do not depend on the server). cfg 0x07: 29
# streams, default limits, no preface prepended (the capture has it).
s=h2lab
seed h2_server_session h2load-m4 7 3 "$work/rec/$s-h2load-m4/conn-0.c2s"
seed h2_server_session h2load-m4-small-reads 7 0 "$work/rec/$s-h2load-m4/conn-0.c2s"
seed h2_server_session h2load-post 7 2 "$work/rec/$s-h2load-post/conn-0.c2s"
seed h2_server_session h2lab-m4 7 1 "$work/rec/$s-h2lab-m4/conn-0.c2s"
seed h2_server_session h2lab-m4-tight-limits $((0x47)) 3 "$work/rec/$s-h2lab-m4/conn-0.c2s"
for t in h2_client_session h2_server_session h1_client_stream; do
    printf '%-20s %3d seeds, %6d bytes\n' "$t" "$(find "$seeds/$t" -type f | wc -l)" "$(cat "$seeds/$t"/* | wc -c)"
done
