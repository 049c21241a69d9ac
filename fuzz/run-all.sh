#!/usr/bin/env bash
# Runs every cargo-fuzz target (or the ones named) for SECONDS each, JOBS at a time
# (default 2), starting from the committed seeds (fuzz/seeds/<target>/) plus the local
# corpus (fuzz/corpus/<target>/, kept between runs), and prints executions and coverage per
# target from libFuzzer's final statistics.
#
#   fuzz/run-all.sh SECONDS [TARGET...]
#   JOBS=1 fuzz/run-all.sh 600 h2_client_session
#
# Exit status 1 if any target found a crash (reproducer in fuzz/artifacts/<target>/, log
# path printed). Uses `cargo +nightly fuzz`; CARGO_TARGET_DIR (if set) gets a fuzz/ subdir.
set -euo pipefail
secs=${1:?usage: fuzz/run-all.sh SECONDS [TARGET...]}
shift
cd "$(dirname "$0")"
jobs=${JOBS:-2}
td=()
[ -n "${CARGO_TARGET_DIR:-}" ] && td=(--target-dir "$CARGO_TARGET_DIR/fuzz")
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
logs=${FUZZ_LOGS:-$(mktemp -d /tmp/h2lab-fuzz.XXXXXX)}
mkdir -p "$logs"
# Build every target once up front (`fuzz run` would otherwise rebuild in each job).
if ! cargo +nightly fuzz build "${td[@]}" 2>"$logs/build.log"; then
    cat "$logs/build.log" >&2
    exit 1
fi

run_one() {
    local t=$1 dirs=("corpus/$1")
    mkdir -p "corpus/$t"
    [ -d "seeds/$t" ] && dirs+=("seeds/$t")
    set +e
    cargo +nightly fuzz run "${td[@]}" "$t" "${dirs[@]}" -- \
        -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-20}" -print_final_stats=1 \
        >"$logs/$t.log" 2>&1
    echo $? >"$logs/$t.rc"
}

echo "fuzzing ${#targets[@]} targets for ${secs}s each, $jobs at a time (logs in $logs)"
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    run_one "$t" &
done
wait

failed=0
printf '%-20s %-7s %12s %9s %7s %7s %9s\n' target result execs exec/s cov ft corpus
for t in "${targets[@]}"; do
    log="$logs/$t.log"
    rc=$(cat "$logs/$t.rc" 2>/dev/null || echo 1)
    stat() { grep -m1 "^stat::$1:" "$log" | awk '{print $2}'; }
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$last")
    result=ok
    if [ "$rc" != 0 ]; then result=CRASH; failed=1; fi
    printf '%-20s %-7s %12s %9s %7s %7s %9s\n' "$t" "$result" "$(stat number_of_executed_units)" \
        "$(stat average_exec_per_sec)" "${cov:-?}" "${ft:-?}" "${corp:-?}"
    [ "$rc" != 0 ] && echo "  see $log and fuzz/artifacts/$t/"
done
exit $failed
