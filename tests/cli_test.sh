#!/usr/bin/env bash
# The command line's contract without a GPU: help works, bad input is exit 2 with a message
# naming the bad value, and GPU commands are exit 3 with one clear line when no GPU is present.
set -u
kbench=$1
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE PATTERN ARGS...: run kbench ARGS, require exit CODE and PATTERN in its output.
expect() {
  local code=$1 pattern=$2
  shift 2
  "$kbench" "$@" >"$tmp/out" 2>&1
  local got=$?
  if [[ $got -ne $code ]] || ! grep -q -- "$pattern" "$tmp/out"; then
    echo "FAIL: kbench $* -> exit $got (want $code), output must contain '$pattern':"
    sed 's/^/    /' "$tmp/out" | head -20
    failures=$((failures + 1))
  else
    echo "ok: kbench $* -> $got"
  fi
}

expect 0 "Subcommands" --help
for cmd in list devices calibrate run check compare; do expect 0 "Usage" "$cmd" --help; done
for cmd in run check; do expect 0 "--later-checks" "$cmd" --help; done
expect 0 "--no-guards" check --help
expect 2 "" # no subcommand
expect 2 "nosuch" nosuch
expect 0 "rmsnorm" list
expect 0 "v1_naive" list
expect 0 '"op": "rmsnorm"' list --json
if command -v python3 >/dev/null; then
  "$kbench" list --json | python3 -m json.tool >/dev/null || { echo "FAIL: list --json is not JSON"; failures=$((failures + 1)); }
fi

# Bad input: exit 2, naming the value and the valid choices.
expect 2 "unknown op 'nosuchop'.*rmsnorm" run nosuchop
expect 2 "unknown op 'nosuchop'" check nosuchop
expect 2 "no op given" run
expect 2 "unknown impl 'v9_magic'.*v1_naive" run rmsnorm --impl v9_magic
expect 2 "unknown dtype 'fp8'.*bf16" run rmsnorm --dtype fp8
for bad in 0x4 4x abc 99999999999999999999x4 4x4x 1e3x4 ' 4x4' 4x-1; do
  expect 2 "bad shape" run rmsnorm --shape "$bad"
done
expect 2 "bad shape" run rmsnorm --shape=-1x4
# A K for an op of MxN rows (its kernels would ignore it; its rows would record it).
expect 2 "bad shape '4096x8192x64' for rmsnorm (it takes MxN shapes)" run rmsnorm --shape 4096x8192,4096x8192x64
expect 2 "bad shape '8x8x8' for layernorm_bwd" check layernorm_bwd --shape 8x8x8
expect 2 "unknown sweep 'huge'" run rmsnorm --sweep huge
expect 2 "unknown --values 'huge' (valid: normal, large, zero-rows, offset-rows)" check rmsnorm --values huge
expect 2 "l2" run rmsnorm --l2 warm
expect 2 "bad --device 'x'" run rmsnorm --device x
expect 2 "samples" run rmsnorm --samples 0
expect 2 "later-checks: Value -1 not in range" check rmsnorm --later-checks -1
expect 2 "later-checks" check rmsnorm --later-checks many
expect 2 "later-checks" run rmsnorm --later-checks 1000001
expect 2 "later-checks excludes --check-once" check rmsnorm --check-once --later-checks 3
expect 2 "no-guards" run rmsnorm --no-guards  # run has no guards to drop
expect 2 "min-samples" run rmsnorm --min-samples 50 --max-samples 10
expect 2 "give ops or --all" run rmsnorm --all
expect 2 "bad --device" calibrate --device -3
expect 2 "/nonexistent/base.csv" run rmsnorm --baseline /nonexistent/base.csv
expect 2 "bad --inject-slowdown 'v1_naive'" run rmsnorm --inject-slowdown v1_naive
KBENCH_FAST_MEMORY=yes expect 2 "bad KBENCH_FAST_MEMORY 'yes' (1 or 0" run rmsnorm
KBENCH_FAST_MEMORY=2 expect 2 "bad KBENCH_FAST_MEMORY '2'" check rmsnorm

# kbench compare needs no GPU: 0 when nothing regressed, 1 on a regression, a failed check or
# nothing compared, 2 on bad input. The CSVs carry the full kbench header (csv_columns() in harness/result.cpp).
header=kbench_version,timestamp,device,device_slug,arch,sm_count,driver,runtime,op,impl,dtype,shape,m,n,k,l2,samples,median_us,mean_us,min_us,p10_us,p90_us,stddev_us,noise_pct,sm_clock_mhz,bytes,flops,gbps,tflops,intensity,peak_gbps,peak_pct,ceiling_gbps,ceiling_pct,max_abs_err,max_rel_err,rel_l2_err,atol,rtol,status,note
# result_row IMPL MEDIAN P10 P90 STATUS: one rmsnorm bf16 point of 200 samples.
result_row() {
  echo "0.1.0,2024-05-01T12:00:00Z,NVIDIA H100 80GB HBM3,h100-sxm,sm_90,132,550.54,12.4,rmsnorm,$1,bf16,4096x8192,4096,8192,0,cold,200,$2,$2,$3,$3,$4,0.1,0.5,1980,134217728,0,2000,,0.5,3350,60,3000,66,0.001,0.001,1e-06,1e-05,0.0078125,$5,"
}
{ echo "$header"; result_row v1_naive 100 99.5 100.5 pass; result_row v3_vec16 50 49.8 50.2 pass; } >"$tmp/base.csv"
{ echo "$header"; result_row v1_naive 110 109.5 110.5 pass; result_row v3_vec16 50 49.8 50.2 pass; } >"$tmp/slow.csv"
{ echo "$header"; result_row v1_naive 100 99.5 100.5 fail; result_row v3_vec16 50 49.8 50.2 pass; } >"$tmp/failing.csv"
{ echo "$header"; result_row v1_naive 100 99.5 100.5 pass; result_row v1_naive 101 99.5 100.5 pass; } >"$tmp/dup.csv"
printf 'name,value\nfoo,1\n' >"$tmp/other.csv"
expect 0 "2 points: 0 faster, 0 slower, 2 same.*PASS" compare "$tmp/base.csv" "$tmp/base.csv"
expect 1 "v1_naive.*+10.0%.*slower" compare "$tmp/base.csv" "$tmp/slow.csv"
expect 0 "PASS" compare "$tmp/base.csv" "$tmp/slow.csv" --threshold 12%
expect 0 "PASS" compare --op-threshold rmsnorm=12 "$tmp/base.csv" "$tmp/slow.csv"
expect 0 "faster" compare "$tmp/slow.csv" "$tmp/base.csv"
expect 1 "failed" compare "$tmp/base.csv" "$tmp/failing.csv"
echo "$header" >"$tmp/no_rows.csv"  # a run that died before its first point
expect 1 "2 missing.*FAIL (no point in both files: nothing compared)" compare "$tmp/base.csv" "$tmp/no_rows.csv"
expect 1 "FAIL" compare "$tmp/base.csv" "$tmp/slow.csv" --format md --output "$tmp/gate.md"
grep -q "| \*\*slower\*\* |" "$tmp/gate.md" || { echo "FAIL: --output gate.md lacks the markdown table"; failures=$((failures + 1)); }
expect 2 "nosuch.csv" compare "$tmp/nosuch.csv" "$tmp/base.csv"
expect 2 "other.csv: not a kbench results CSV" compare "$tmp/base.csv" "$tmp/other.csv"
expect 2 "dup.csv: duplicate point.*line 2 and line 3" compare "$tmp/dup.csv" "$tmp/base.csv"
expect 2 "bad --threshold 'abc'" compare "$tmp/base.csv" "$tmp/base.csv" --threshold abc
expect 2 "bad --op-threshold 'rmsnorm'" compare "$tmp/base.csv" "$tmp/base.csv" --op-threshold rmsnorm
expect 2 "format" compare "$tmp/base.csv" "$tmp/base.csv" --format html
expect 2 "CURRENT" compare "$tmp/base.csv"
if command -v python3 >/dev/null; then
  "$kbench" compare "$tmp/base.csv" "$tmp/slow.csv" --format json | python3 -m json.tool >/dev/null ||
    { echo "FAIL: compare --format json is not JSON"; failures=$((failures + 1)); }
fi

# kbench plot needs no GPU: a standalone SVG from results CSVs; bad input is exit 2 naming it.
sed 's/,rmsnorm,v3_vec16,/,softmax,v3_vec16,/' "$tmp/base.csv" >"$tmp/twoops.csv"
expect 0 "Usage" plot --help
expect 0 "wrote" plot "$tmp/base.csv" --kind bandwidth -o "$tmp/bw.svg"
grep -q 'class="point"' "$tmp/bw.svg" && grep -q '</svg>' "$tmp/bw.svg" ||
  { echo "FAIL: plot --kind bandwidth wrote no chart"; failures=$((failures + 1)); }
expect 0 "wrote" plot "$tmp/twoops.csv" --kind bandwidth --op softmax --device h100-sxm -o "$tmp/bw.svg"
expect 2 "choose one with --op" plot "$tmp/twoops.csv" --kind bandwidth -o "$tmp/bw.svg"
expect 2 "no rows for --op layernorm (ops in the data: rmsnorm, softmax)" plot "$tmp/twoops.csv" --op layernorm -o "$tmp/x.svg"
expect 2 "no rows for --impl v9 (impls in the data: v1_naive, v3_vec16)" plot "$tmp/base.csv" --impl v9 -o "$tmp/x.svg"
expect 2 "no rows for --device mi300x" plot "$tmp/base.csv" --device mi300x -o "$tmp/x.svg"
expect 2 "without flops" plot "$tmp/base.csv" -o "$tmp/x.svg"
expect 2 "other.csv: missing column 'op'" plot "$tmp/other.csv" -o "$tmp/x.svg"
expect 2 "nosuch.csv: no such file" plot "$tmp/nosuch.csv" -o "$tmp/x.svg"
expect 2 "nosuch_ceilings.csv" plot "$tmp/base.csv" --ceilings "$tmp/nosuch_ceilings.csv" -o "$tmp/x.svg"
expect 2 "kind" plot "$tmp/base.csv" --kind pie -o "$tmp/x.svg"
expect 2 "output" plot "$tmp/base.csv"
[[ ! -e "$tmp/x.svg" ]] || { echo "FAIL: a failed plot left $tmp/x.svg"; failures=$((failures + 1)); }

# Without a GPU, GPU commands fail with exit 3 and one line; with one, cli_gpu_test.sh covers them.
if ! "$kbench" devices >/dev/null 2>&1; then
  expect 3 "no GPU" devices
  expect 3 "no GPU" run rmsnorm --dtype bf16
  expect 3 "no GPU" check rmsnorm
  expect 3 "no GPU" calibrate
  lines=$("$kbench" run rmsnorm 2>&1 | wc -l)
  [[ $lines -eq 1 ]] || { echo "FAIL: no-GPU message is $lines lines, want 1"; failures=$((failures + 1)); }
fi

echo "cli: $failures failure(s)"
[[ $failures -eq 0 ]]
