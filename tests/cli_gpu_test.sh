#!/usr/bin/env bash
# The command line on a GPU: run/check/calibrate/devices end to end. Exit 77 (skipped) without one.
set -u
kbench=$1
"$kbench" devices >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KBENCH_CEILINGS=$tmp/ceilings.csv

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$kbench" calibrate --no-gemm --runs 5 >"$tmp/calibrate.txt" || fail "calibrate exit $?"
grep -q copy_gbps "$tmp/ceilings.csv" || fail "calibrate stored nothing"
# The timing floor: two positive times, the empty kernel's the larger.
read -r events kernel < <(sed -n 's/.*timing floor *\([0-9.]*\) µs[^0-9]*\([0-9.]*\) µs.*/\1 \2/p' "$tmp/calibrate.txt")
python3 -c "import sys; e, k = map(float, sys.argv[1:]); sys.exit(not (0 < e < k < 100))" \
  "${events:-0}" "${kernel:-0}" || fail "timing floor '${events:-} ${kernel:-}'"
"$kbench" devices --json | python3 -m json.tool >/dev/null || fail "devices --json"
# Clusters that fit: counts of 2, 4 and 8 blocks, none negative, and no more clusters of a size
# than of half that size (a cluster of 8 holds two of 4).
"$kbench" devices --json | python3 -c "
import json, sys
for d in json.load(sys.stdin):
    c = d['resident_clusters']
    n = [c[k] for k in ('2', '4', '8')]
    assert all(isinstance(v, int) and v >= 0 for v in n) and n[1] <= n[0] and n[2] <= n[1], c
" || fail "devices --json resident_clusters"

# A point too large for the GPU is a skip row; the sweep goes on and the next point passes.
"$kbench" run rmsnorm --dtype bf16 --shape 4096x99999999999,256x1024 --csv "$tmp/a.csv" --samples 5
rc=$?
[[ $rc -eq 0 ]] || fail "run with an oversized point: exit $rc"
grep -q ',skip,' "$tmp/a.csv" || fail "no skip row for 4096x99999999999"
grep -q '256x1024.*,pass,' "$tmp/a.csv" || fail "no pass row after the skipped point"

"$kbench" check rmsnorm rmsnorm_bwd --shape 7x4097 || fail "check exit $?"
"$kbench" check rmsnorm --shape 7x4097 --check-once || fail "check --check-once exit $?"
"$kbench" check rmsnorm --shape 7x4097 --later-checks 3 || fail "check --later-checks 3 exit $?"
"$kbench" check rmsnorm_bwd --shape 7x4097 --no-guards || fail "check --no-guards exit $?"
"$kbench" run rmsnorm --impl v1_naive --dtype fp32 --shape 1024x1024 --l2 hot --samples 5 \
  --no-csv --json "$tmp/r.json" --gbench-json "$tmp/gb.json" || fail "run --l2 hot"
python3 -m json.tool "$tmp/r.json" >/dev/null || fail "--json output is not JSON"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['benchmarks']" "$tmp/gb.json" \
  || fail "--gbench-json has no benchmarks"

# run --baseline gates in one step: a rerun of the same point passes, a slowed one fails.
one=(rmsnorm --impl v3_vec16_regs --dtype bf16 --shape 4096x8192 --samples 100 --format none)
"$kbench" run "${one[@]}" --csv "$tmp/base.csv" || fail "baseline run"
"$kbench" run "${one[@]}" --no-csv --baseline "$tmp/base.csv" >"$tmp/gate.txt" ||
  fail "a rerun of the same point failed the gate: $(cat "$tmp/gate.txt")"
"$kbench" run "${one[@]}" --no-csv --baseline "$tmp/base.csv" --inject-slowdown v3_vec16_regs=10 \
  >"$tmp/gate.txt"
rc=$?
[[ $rc -eq 1 ]] || fail "a 10%-slowed point passed the gate (exit $rc): $(cat "$tmp/gate.txt")"

echo "cli_gpu: $failures failure(s)"
[[ $failures -eq 0 ]]
