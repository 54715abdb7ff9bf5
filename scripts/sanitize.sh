#!/usr/bin/env bash
# compute-sanitizer over `kbench check`: every impl of each op at shapes that reach every kernel
# path (most of tests/gpu/test_impls.cpp's edge shapes), under memcheck
# (out-of-bounds and misaligned accesses), synccheck (barrier misuse), initcheck (reads of
# device memory nothing wrote) and racecheck (shared-memory hazards).
# One process per tool and op, each under its own time limit, JOBS of them at once (they share
# the GPU). A line per run in $OUT/sanitize.txt; each run's report in $OUT/sanitize-TOOL-OP.txt
# and its rows (written one by one as they are checked) in $OUT/sanitize-TOOL-OP.csv.
#   bash scripts/sanitize.sh [KBENCH]          (default: build/kbench)
# Environment: TOOLS (default "memcheck synccheck initcheck racecheck"), OPS (default: every
# op), DTYPES (default bf16,fp32), SHAPES (comma list; default below), VALUES (default normal;
# offset-rows takes layernorm's second round of sums), LIMIT_S (seconds per run, default 300),
# JOBS (default 1), OUT (default ./out), COMPUTE_SANITIZER (the tool's path, if not on PATH or
# in /usr/local/cuda/bin). KBENCH_FAST_MEMORY=0 or 1 picks the forwards' policies for the other
# kind of GPU, as for any kbench run.
# Under racecheck a block's shared-memory accesses run thousands of times slower, and blocks that
# wait for others (grid rows, the backwards' grid barrier) give up after 2^22 polls: build with
# -DKBENCH_MAX_POLLS=4294967295 (kernels/common/grid_sums.h) for it.
# One launch per point (`--check-once`): a second repeats the same accesses, at twice the time.
# No guard bytes (`--no-guards`): inside one allocation with the buffer, they would hide from
# memcheck and initcheck every access within 4 KB of an output's or the workspace's ends.
# Exit status: 0 when every run finished clean, 1 when a tool reported an error, a check failed
# or a run hit its limit (or the probes below did not build or say a tool does not work), 2 when
# the tools are missing.
set -uo pipefail
cd "$(dirname "$0")/.."
export KBENCH=${1:-build/kbench}
export SANITIZE_OUT=${OUT:-$PWD/out}
mkdir -p "$SANITIZE_OUT"
export PATH=$PATH:/usr/local/cuda/bin
export SANITIZER=${COMPUTE_SANITIZER:-compute-sanitizer}
command -v "$SANITIZER" >/dev/null || { echo "compute-sanitizer not found"; exit 2; }
[[ -x $KBENCH ]] || { echo "no kbench at $KBENCH"; exit 2; }

# Tiny and unaligned rows; warp rows over many rows; one-block staged and bulk rows over many
# steps (each stage refilled: 4099 x 4096, 2000 x 8192), fitted and claimed bulk teams; split
# rows, clusters and grid rows of 2-16 blocks at full and 5/8 packs; rows past what the staged
# kernels hold.
default_shapes=1x1,7x3,7x127,3x4097,3x8193,4099x8,2000x1032,17x2048,4099x4096,300x5120,\
2400x5120,7x8200,2000x8192,500x16384,300x16392,9x18440,5x24584,130x32768,40x40000,11x49152,\
70x65536,3x80000,3x131072
export SHAPES=${SHAPES:-$default_shapes}
export DTYPES=${DTYPES:-bf16,fp32}
export VALUES=${VALUES:-normal}
export LIMIT_S=${LIMIT_S:-300}
read -r -a tools <<<"${TOOLS:-memcheck synccheck initcheck racecheck}"
if [[ -n ${OPS:-} ]]; then
  read -r -a ops <<<"$OPS"
else
  mapfile -t ops < <("$KBENCH" list --json | python3 -c \
    'import json, sys; print("\n".join(o["op"] for o in json.load(sys.stdin)))')
fi

sanitize_one() {
  local tool=$1 op=$2
  local report=$SANITIZE_OUT/sanitize-$tool-$op.txt rows=$SANITIZE_OUT/sanitize-$tool-$op.csv
  local start=$SECONDS
  timeout "$LIMIT_S" "$SANITIZER" --tool "$tool" --error-exitcode 9 --print-limit 20 \
    "$KBENCH" check "$op" --check-once --no-guards --dtype "$DTYPES" --shape "$SHAPES" --values "$VALUES" \
    --csv "$rows" --format none >"$report" 2>&1
  local rc=$? verdict
  case $rc in
    0) verdict=clean ;;
    124) verdict="over ${LIMIT_S} s" ;;
    9) verdict="sanitizer errors" ;;
    1) verdict="check failed" ;;
    *) verdict="exit $rc" ;;
  esac
  printf '%-10s %-24s %-16s %4d s  %4d pass %3d fail  %s\n' "$tool" "$op" "$verdict" \
    $((SECONDS - start)) "$(grep -c ',pass,' "$rows" 2>/dev/null)" \
    "$(grep -c ',fail,' "$rows" 2>/dev/null)" \
    "$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$report" || echo 'no summary')" \
    >>"$SANITIZE_OUT/sanitize.txt"
}
export -f sanitize_one

# The tools themselves first: each bug planted in scripts/sanitizer_probe.cu (races on copies
# and stores to a peer block made as the kernels make them, an out-of-bounds write) must be
# reported, and the correct forms must pass; otherwise "clean" below says nothing about that
# kind of bug.
probe_tools() {
  local dir probe
  dir=$(mktemp -d)
  probe=$dir/sanitizer_probe
  if ! nvcc -std=c++20 -I. -arch=sm_90 scripts/sanitizer_probe.cu -o "$probe" \
      >"$SANITIZE_OUT/probe-build.txt" 2>&1; then
    echo "probe      not built (nvcc for sm_90: probe-build.txt)" >>"$SANITIZE_OUT/sanitize.txt"
    rm -rf "$dir"
    return
  fi
  local spec tool name rc verdict
  for spec in racecheck:racy_plain racecheck:racy_async_read racecheck:racy_async_refill \
      racecheck:racy_bulk_read racecheck:racy_bulk_refill racecheck:racy_cluster_store \
      racecheck:racy_cluster_async racecheck:clean_async racecheck:clean_bulk \
      racecheck:clean_cluster_store racecheck:clean_cluster_async memcheck:out_of_bounds \
      memcheck:clean_bulk memcheck:clean_cluster_async synccheck:clean_bulk \
      synccheck:clean_cluster_async; do
    tool=${spec%%:*} name=${spec#*:}
    "$SANITIZER" --tool "$tool" --error-exitcode 9 "$probe" "$name" \
      >"$SANITIZE_OUT/probe-$tool-$name.txt" 2>&1
    rc=$?
    case $name:$rc in
      clean_*:0) verdict="passes, as it should" ;;
      clean_*:*) verdict="FLAGGED (exit $rc)" ;;
      *:9) verdict="caught" ;;
      *) verdict="NOT caught (exit $rc): a blind spot" ;;
    esac
    printf 'probe      %-10s %-18s %s\n' "$tool" "$name" "$verdict" >>"$SANITIZE_OUT/sanitize.txt"
  done
  rm -rf "$dir"
}
probe_tools

for tool in "${tools[@]}"; do
  for op in "${ops[@]}"; do echo "$tool $op"; done
done | xargs -P "${JOBS:-1}" -L 1 bash -c 'sanitize_one "$0" "$1"'
cat "$SANITIZE_OUT/sanitize.txt"
# Fails on a kbench run that is not clean, probes that did not build, a correct probe flagged, or
# a tool that misses even the plain race or the out-of-bounds write (not working at all).
! grep -v '^probe' "$SANITIZE_OUT/sanitize.txt" | grep -qv ' clean ' &&
  ! grep -qE 'not built|FLAGGED|(racy_plain|out_of_bounds) +NOT' "$SANITIZE_OUT/sanitize.txt"
