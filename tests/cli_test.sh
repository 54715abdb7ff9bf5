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
for cmd in list devices calibrate run check; do expect 0 "Usage" "$cmd" --help; done
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
expect 2 "unknown sweep 'huge'" run rmsnorm --sweep huge
expect 2 "l2" run rmsnorm --l2 warm
expect 2 "bad --device 'x'" run rmsnorm --device x
expect 2 "samples" run rmsnorm --samples 0
expect 2 "min-samples" run rmsnorm --min-samples 50 --max-samples 10
expect 2 "give ops or --all" run rmsnorm --all
expect 2 "bad --device" calibrate --device -3

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
