#!/usr/bin/env bash
# Evidence that `kbench compare` gates on real regressions only (run on a GPU machine):
#   1. RUNS (default 4) back-to-back runs of the same build over rmsnorm's default sweep (all
#      dtypes), each compared with the one before: every comparison must flag 0 regressions.
#   2. One more run with --inject-slowdown v3_vec16_regs=10 (10% more bytes read per launch),
#      compared with the last clean run: every large shape of that impl must be flagged slower.
# Usage: bash scripts/gate-evidence.sh KBENCH OUTDIR     (prints counts; writes OUTDIR/gate.txt)
set -uo pipefail
kbench=$1
out=$2
runs=${RUNS:-4}
report=$out/gate.txt
: >"$report"
tmp=$(mktemp -d)
sweep() { "$kbench" run rmsnorm --format none --csv "$1" "${@:2}" 2>>"$report"; }

for i in $(seq 1 "$runs"); do sweep "$tmp/run$i.csv"; done
# count VERDICT [IMPL [--not]]: points of a compare JSON report with that verdict.
count() {
  python3 -c "
import json, sys
pts = json.load(open(sys.argv[1]))['points']
impl, negate = (sys.argv[3] if len(sys.argv) > 3 else ''), len(sys.argv) > 4
sel = [p for p in pts if not impl or ((p['impl'] == impl) != negate)]
print(sum(p['verdict'] == sys.argv[2] for p in sel), len(sel))" "$@"
}

for i in $(seq 2 "$runs"); do
  "$kbench" compare "$tmp/run$((i - 1)).csv" "$tmp/run$i.csv" --format json >"$tmp/cmp$i.json"
  rc=$?
  read -r slower total < <(count "$tmp/cmp$i.json" slower)
  echo "clean run $((i - 1)) vs run $i: exit $rc, $slower of $total points flagged slower" | tee -a "$report"
done

sweep "$tmp/slow.csv" --inject-slowdown v3_vec16_regs=10
"$kbench" compare "$tmp/run$runs.csv" "$tmp/slow.csv" --format json >"$tmp/cmp_slow.json"
rc=$?
read -r flagged total < <(count "$tmp/cmp_slow.json" slower v3_vec16_regs)
read -r others others_total < <(count "$tmp/cmp_slow.json" slower v3_vec16_regs --not)
echo "slowed v3_vec16_regs (+10% bytes): exit $rc, $flagged of $total of its points flagged slower;" \
  "$others of $others_total other points flagged" | tee -a "$report"
"$kbench" compare "$tmp/run$runs.csv" "$tmp/slow.csv" >>"$report"
rm -rf "$tmp"
