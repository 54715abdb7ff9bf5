#!/usr/bin/env bash
# scripts/sanitize.sh's verdicts, with stand-ins for compute-sanitizer, nvcc and kbench (no GPU
# needed): clean runs and probes pass; a run with sanitizer errors, probes that do not build, a
# correct probe flagged, or a tool that misses the plain race fails it; no compute-sanitizer is
# exit 2.
set -uo pipefail
script=$(cd "$(dirname "$0")/.." && pwd)/scripts/sanitize.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$dir/bin"
# compute-sanitizer: drops its options, runs the program, passes its exit status on.
cat >"$dir/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
while [[ $1 == --* ]]; do shift 2; done
"$@"
EOF
# nvcc: "builds" a probe that exits 9 (what the sanitizer returns on a report) for a planted bug
# and FAKE_CLEAN_RC for a correct form.
cat >"$dir/bin/nvcc" <<'EOF'
#!/usr/bin/env bash
[[ -n ${FAKE_NVCC_FAILS:-} ]] && exit 1
while [[ $1 != -o ]]; do shift; done
printf '#!/usr/bin/env bash\ncase $1 in racy_plain) exit ${FAKE_RACY_PLAIN_RC:-9};; clean_*) exit ${FAKE_CLEAN_RC:-0};; *) exit 9;; esac\n' >"$2"
chmod +x "$2"
EOF
# kbench: two ops; `check` writes one passing row to its --csv and exits FAKE_KBENCH_RC. A
# check with guard bytes is an error (exit 9): they would hide accesses near a buffer's ends.
cat >"$dir/kbench" <<'EOF'
#!/usr/bin/env bash
[[ $1 == list ]] && { echo '[{"op": "rmsnorm"}, {"op": "layernorm"}]'; exit 0; }
[[ " $* " == *" --no-guards "* ]] || exit 9
while [[ $# -gt 0 && $1 != --csv ]]; do shift; done
printf 'header\nx,%s,pass,y\n' "$2" >"$2"
echo "========= ERROR SUMMARY: 0 errors"
exit "${FAKE_KBENCH_RC:-0}"
EOF
chmod +x "$dir/bin/"* "$dir/kbench"

run() {  # run NAME [VAR=VALUE...]: the script's exit status, its summary in $dir/NAME
  local name=$1
  shift
  env "$@" PATH="$dir/bin:/usr/bin:/bin" OUT="$dir/$name" TOOLS="memcheck racecheck" JOBS=2 \
    bash "$script" "$dir/kbench" >/dev/null 2>&1
}

# expect NAME STATUS PATTERN [VAR=VALUE...]: the script exits STATUS and its summary has PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3
  shift 3
  run "$name" "$@"
  local rc=$?
  ((rc == want)) || fail "$name: exit $rc, not $want"
  grep -qE "$pattern" "$dir/$name/sanitize.txt" || fail "$name: no '$pattern' in the summary"
}

expect good 0 'racecheck  racy_async_refill  caught'
[[ $(grep -c ' clean ' "$dir/good/sanitize.txt") == 4 ]] || fail "clean runs: $(cat "$dir/good/sanitize.txt")"
grep -q 'racecheck  clean_bulk         passes' "$dir/good/sanitize.txt" || fail "clean probe lines missing"
expect errors 1 'sanitizer errors' FAKE_KBENCH_RC=9
expect unbuilt 1 'not built' FAKE_NVCC_FAILS=1
expect flagged 1 'clean_async +FLAGGED' FAKE_CLEAN_RC=9
expect blind 1 'racy_plain +NOT caught' FAKE_RACY_PLAIN_RC=0

mkdir -p "$dir/nobin"
env PATH="$dir/nobin:/usr/bin:/bin" COMPUTE_SANITIZER="$dir/nobin/compute-sanitizer" OUT="$dir/none" bash "$script" "$dir/kbench" >/dev/null 2>&1
rc=$?
((rc == 2)) || fail "no compute-sanitizer: exit $rc"
echo "sanitize.sh verdicts: ok"
