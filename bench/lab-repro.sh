#!/usr/bin/env bash
# How reproducible are h2lab compare's verdicts? A benchmark, not a test:
# it prints figures against the issue's targets; nothing checks timing.
#
# Runs `h2lab compare --quick` twice in a row on this machine, with an A/A control arm (h2c
# listed twice), and prints from the two results.json files:
#   (a) the share of decisions (condition × metric, verdicts and HTTP/2-vs-HTTP/1.1 pairs)
#       with the same outcome and the same winner in both runs         target >= 90%
#   (b) the largest difference between the two runs' paired server-cost ratios (HTTP/2 over
#       HTTP/1.1, per condition and like-for-like pair)                target <= 5%
#   (c) the median relative width (hi - lo) / ratio of the decisions' 95% CIs, for req/s and
#       for server cost                                                 targets <= 10%, <= 5%
#   (d) the share of undecided decisions                                target <= 25%
#       and the count of each outcome (win, slight, parity, undecided)
#   (e) the A/A control's outcomes                target: never a win, at most 5% slight
#       and, per run, the A/A arms' per-round spread (SD of the log ratios of req/s and of
#       server cost, and the same without outliers: 1.4826 x their median absolute deviation):
#       the noise every interval has to cover
# and the machine's load while it ran (load average, busy runs): on a shared machine the
# figures are worse than on a quiet one, and the script says so rather than hiding it. Per
# compare it also prints where the wall time went (the process's time against the budget;
# results.json `wall`: set-up, warm-ups, measured periods and teardown of the runs, arms
# opened, time between runs, and the phases of the run).
# EXTRA="--fresh-connections" measures every run on fresh connections (the old way).
#
# Environment:
#   H2LAB       h2lab binary (default: target/release/h2lab)
#   PROTOCOLS   --protocols (default h1,h1.0,h1-tls,h2,h2c,h2c: the quick matrix's five plus
#               the A/A arm)
#   EXTRA       more compare flags (e.g. "--strict" or "--equivalence 5%")
#   KEEP_DIR    keep the two report directories here instead of a temp dir
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

H2LAB=${H2LAB:-$REPO_ROOT/target/release/h2lab}
PROTOCOLS=${PROTOCOLS:-h1,h1.0,h1-tls,h2,h2c,h2c}
EXTRA=${EXTRA:-}
[ -x "$H2LAB" ] || die "$H2LAB not built (cargo build --release -p h2lab)"
require_bin python3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/h2lab-lab-repro.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
OUT=${KEEP_DIR:-$WORK}
mkdir -p "$OUT"

for run in 1 2; do
  log "run $run: $H2LAB compare --quick --protocols $PROTOCOLS $EXTRA (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  start=$(date +%s)
  # shellcheck disable=SC2086 # EXTRA is a list of flags
  peak_rss "$OUT/run$run.rss" "$H2LAB" compare --quick --protocols "$PROTOCOLS" $EXTRA \
    --report "$OUT/run$run" >"$OUT/run$run.txt" 2>"$OUT/run$run.err"
  log "run $run: $(( $(date +%s) - start )) s, peak RSS $(cat "$OUT/run$run.rss") MB, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "$(( $(date +%s) - start ))" >"$OUT/run$run.secs"
done

python3 - "$OUT/run1/results.json" "$OUT/run2/results.json" "$OUT/run1.secs" "$OUT/run2.secs" <<'PY'
import json, math, statistics, sys

runs = [json.load(open(p)) for p in sys.argv[1:3]]
process_secs = [float(open(p).read()) for p in sys.argv[3:5]]

def decisions(r):
    """(key, decision) for every non-control decision, and the A/A controls."""
    main, controls = {}, []
    for row in r["decisions"]:
        cond = f'{row["label"]} [{row["section"]}]'
        for d in row["verdicts"]:
            if d["control"]:
                controls.append((cond, d))
            else:
                main[(cond, "best", d["metric"])] = d
        for p in row["comparisons"]:
            for d in p["decisions"]:
                if p["control"]:
                    controls.append((cond, d))
                else:
                    main[(cond, f'{arm(p["a"])}/{arm(p["b"])}', d["metric"])] = d
    return main, controls

def arm(a):
    return None if a is None else f'{a["proto"]}#{a["arm"] + 1}'

(m1, c1), (m2, c2) = decisions(runs[0]), decisions(runs[1])
keys = sorted(set(m1) & set(m2))
same = sum(1 for k in keys
           if m1[k]["outcome"] == m2[k]["outcome"] and arm(m1[k]["winner"]) == arm(m2[k]["winner"]))
a = same / len(keys) if keys else float("nan")

diffs = []
for k in keys:
    if k[1] != "best" and k[2] == "server_cost" and m1[k]["ratio"] and m2[k]["ratio"]:
        diffs.append((abs(m1[k]["ratio"]["median"] / m2[k]["ratio"]["median"] - 1), k))
b = max(diffs) if diffs else (float("nan"), None)

def widths(metric):
    w = []
    for m in (m1, m2):
        for k, d in m.items():
            if k[2] == metric and d["ratio"]:
                r = d["ratio"]
                w.append((r["hi"] - r["lo"]) / abs(r["median"]))
    return statistics.median(w) if w else float("nan")

c_rps, c_cost = widths("throughput"), widths("server_cost")
alld = list(m1.values()) + list(m2.values())
d = sum(1 for x in alld if x["outcome"] == "undecided") / len(alld) if alld else float("nan")
bands = runs[0]["bands"]

def why_undecided(x):
    """Why a decision is undecided: 'edge' when its interval is narrower than the band but
    holds one of the band's edges (a real difference close to the band: more rounds narrow
    the interval, but only as 1/sqrt(rounds), and never decide a ratio sitting on the edge),
    'p99' for a p99 interval wider than the band, 'wide' for any other wider one."""
    r = x["ratio"]
    band = x["band"]
    if r is None or r["n"] < 6:
        return "wide"
    if r["hi"] - r["lo"] <= 2 * band:
        return "edge"
    return "p99" if x["metric"] == "p99" else "wide"

und = [why_undecided(x) for x in alld if x["outcome"] == "undecided"]
aa = [x["outcome"] for _, x in c1 + c2]
aa_wins = sum(1 for o in aa if o == "win")

def pct(v):
    return f"{100 * v:.1f}%"

def ok(good):
    return "met" if good else "NOT met"

print("h2lab compare --quick, twice in a row")
for i, r in enumerate(runs, 1):
    busy, total = r["busy_runs"]
    empty = sum(1 for c in r["cells"] for x in c["runs"] if x["completed"] == 0)
    print(f'  run {i}: {r["elapsed_secs"]:.0f} s, {len(r["cells"])} cells, '
          f'{busy}/{total} runs on a busy machine, {empty} completed nothing, '
          f'{r.get("spell_runs", [0])[0]} in slow spells'
          f'{" (kept)" if r.get("keep_slow_spells") else ""}, '
          f'+{r.get("sequential_rounds", 0)} budget rounds; cpus: {r["isolation"]["note"]}')
    w = r.get("wall")
    if w:
        phases = ", ".join(f"{n} {s:.1f}" for n, s in w["phases"])
        outside = process_secs[i - 1] - r["elapsed_secs"]
        print(f'    wall: process {process_secs[i - 1]:.0f} s = measuring {r["elapsed_secs"]:.1f} s '
              f'({phases}) + start-up and report {outside:.1f} s')
        print(f'    {w["runs"]} runs ({w["retries"]} retried; '
              f'{"fresh connections" if r.get("fresh_connections") else "standing connections"}): '
              f'planned {w["planned_secs"]:.1f} s; set-up {w["setup_secs"]:.1f} + warm-up '
              f'{w["warm_up_secs"]:.1f} + measured {w["measured_secs"]:.1f} + teardown '
              f'{w["teardown_secs"]:.1f} s; {w["opened"]} arms opened, open/close '
              f'{w["open_close_secs"]:.1f} s; between runs {w["between_secs"]:.1f} s')
print()
print(f"(a) same verdict in both runs:           {pct(a):>7} of {len(keys)} decisions   target >= 90%  {ok(a >= 0.9)}")
if b[1]:
    print(f"(b) largest server-cost ratio difference: {pct(b[0]):>7} ({b[1][0]} {b[1][1]})   target <= 5%  {ok(b[0] <= 0.05)}")
else:
    print("(b) largest server-cost ratio difference:     n/a (no server-cost pairs)")
print(f"(c) median CI width, req/s:               {pct(c_rps):>7}   target <= 10%  {ok(c_rps <= 0.10)}")
print(f"    median CI width, server cost:         {pct(c_cost):>7}   target <= 5%   {ok(c_cost <= 0.05)}")
print(f"(d) undecided:                            {pct(d):>7} of {len(alld)} decisions   target <= 25%  {ok(d <= 0.25)}")
print("    outcomes: " + ", ".join(f"{sum(1 for x in alld if x['outcome'] == o)} {o}"
                             for o in ("win", "slight", "parity", "undecided")))
print(f"    of which: {und.count('edge')} narrower than the band but across its edge, "
      f"{und.count('p99')} p99 wider than the band, {und.count('wide')} others wider than the band")

def robust_sd(v):
    """1.4826 x the median absolute deviation: the SD of the bulk of `v` (a normal's SD),
    which one starved round cannot inflate."""
    m = statistics.median(v)
    return 1.4826 * statistics.median([abs(x - m) for x in v])

def aa_spread(r, sd=statistics.pstdev):
    """Per condition with an A/A arm: the spread `sd` of the per-round log ratios (second arm
    over first) of req/s and server CPU per request: the per-round noise the intervals face."""
    groups = {}
    for c in r["cells"]:
        key = json.dumps({k: c.get(k) for k in ("payload", "headers", "concurrency", "streams", "link")},
                         sort_keys=True)
        groups.setdefault(key, {})[(c["proto"], c.get("arm") or 0)] = c
    sds = {"rps": [], "server_cpu_us": []}
    for g in groups.values():
        for (proto, arm), c in g.items():
            first = g.get((proto, 0))
            if arm == 0 or first is None:
                continue
            for m in sds:
                a = {x["round"]: x.get(m) for x in c["runs"] if x["completed"] > 0}
                b = {x["round"]: x.get(m) for x in first["runs"] if x["completed"] > 0}
                logs = [math.log(a[k] / b[k]) for k in a if k in b and a[k] and b[k]]
                if len(logs) >= 3:
                    sds[m].append(sd(logs))
    return {m: (statistics.median(v) if v else float("nan"), max(v) if v else float("nan"))
            for m, v in sds.items()}

for i, r in enumerate(runs, 1):
    s, b = aa_spread(r), aa_spread(r, robust_sd)
    print(f"    run {i}: A/A per-round spread (SD of log ratios; median / largest over conditions): "
          f"req/s {s['rps'][0]:.3f} / {s['rps'][1]:.3f}, "
          f"server cost {s['server_cpu_us'][0]:.3f} / {s['server_cpu_us'][1]:.3f}")
    print(f"           without outliers (1.4826 x MAD): "
          f"req/s {b['rps'][0]:.3f} / {b['rps'][1]:.3f}, "
          f"server cost {b['server_cpu_us'][0]:.3f} / {b['server_cpu_us'][1]:.3f}")
aa_slight = aa.count("slight")
print(f"(e) A/A control: {len(aa)} decisions: "
      + ", ".join(f"{aa.count(o)} {o}" for o in ("win", "slight", "parity", "undecided"))
      + f"   target: never a win, at most 5% slight  "
      + ok(aa_wins == 0 and aa_slight <= 0.05 * max(len(aa), 1)))
PY
