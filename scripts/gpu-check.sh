#!/usr/bin/env bash
# One call on a GPU machine: build (sm_90 only), run every test including the `gpu` ones
# (first: correctness before speed), calibrate, then the default sweep of the given ops.
# Logs and CSVs go to $OUT (default ./out).
#   bash scripts/gpu-check.sh [OPS...]        (default: every op)
# Environment:
#   KBENCH_CUDA_ARCHS (default 90); KBENCH_CUDA_FLAGS (extra nvcc flags: a lab knob's build
#   through the SASS check and the tests, e.g. -DKBENCH_ASYNC_EVICT_LAST=0);
#   SWEEP (default: default); SWEEP_ARGS (more `kbench run` options, e.g. "--target-ms 2");
#   CHECK_ARGS (before the sweep, `kbench check OPS $CHECK_ARGS` to $OUT/check.csv, e.g.
#   "--dtype bf16 --shape 64x65536 --later-checks 20"; every op's default sweep in every dtype
#   takes about 10 minutes on an H200 machine, more than one call);
#   SKIP_SWEEP=1; SKIP_TESTS=1 (builds kbench alone);
#   SKIP_TORCH=1 (no PyTorch copy rate); SKIP_SASS=1 (no scripts/sass_desc_check.py);
#   GATE=1 (also run scripts/gate-evidence.sh for the regression gate);
#   PEERS=op,op (PyTorch eager/compile rows for those ops, bf16, to $OUT/peers.csv);
#   SANITIZE=memcheck,synccheck,initcheck (scripts/sanitize.sh with those tools after the tests:
#   summary in log.txt, reports in sanitize.tgz; racecheck needs KBENCH_CUDA_FLAGS=
#   -DKBENCH_MAX_POLLS=4294967295 as well, and about ten minutes).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/out}
mkdir -p "$out"
ops=("$@")
((${#ops[@]})) || ops=(--all)
log=$out/log.txt
export PATH=$PATH:/usr/local/cuda/bin
export KBENCH_CEILINGS=$out/ceilings.csv
step() { echo "=== $* ($(date +%T))" | tee -a "$log"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$log"

step "build"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
targets=(); [[ ${SKIP_TESTS:-0} == 1 ]] && targets=(--target kbench)
cmake -S . -B build "${gen[@]}" -DCMAKE_CUDA_ARCHITECTURES="${KBENCH_CUDA_ARCHS:-90}" \
  -DCMAKE_CUDA_FLAGS="${KBENCH_CUDA_FLAGS:-}" >>"$log" 2>&1 &&
  cmake --build build -j"$(nproc)" "${targets[@]}" >>"$log" 2>&1 ||
  { echo "build failed"; tail -50 "$log"; exit 1; }

if [[ ${SKIP_SASS:-0} != 1 ]]; then
  step "SASS: every memory instruction's descriptor written"
  python3 scripts/sass_desc_check.py build/kbench >"$out/sass_desc_check.txt" 2>&1
  sass_rc=$?
  tail -3 "$out/sass_desc_check.txt" | tee -a "$log"
  # Such a kernel is an illegal instruction when it runs, and it takes the process down with it.
  ((sass_rc == 0)) || { echo "SASS check failed: $out/sass_desc_check.txt"; exit 1; }
fi

if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  step "tests"
  (cd build && ctest --output-on-failure -j4 --timeout 900) >"$out/tests.txt" 2>&1
  tail -25 "$out/tests.txt" | tee -a "$log"
fi

if [[ -n ${SANITIZE:-} ]]; then
  step "compute-sanitizer: $SANITIZE"
  OUT=$out/sanitize TOOLS="${SANITIZE//,/ }" JOBS=10 bash scripts/sanitize.sh build/kbench \
    >/dev/null 2>&1
  echo "sanitize.sh: exit $?" | tee -a "$log"
  tee -a "$log" <"$out/sanitize/sanitize.txt"
  tar czf "$out/sanitize.tgz" -C "$out" sanitize && rm -rf "$out/sanitize"
fi

step "calibrate"
./build/kbench calibrate 2>&1 | tee -a "$log"
./build/kbench devices 2>&1 | tee -a "$log"
[[ ${SKIP_TORCH:-0} == 1 ]] || python3 scripts/torch_copy_rate.py 2>&1 | tee -a "$log"

if [[ -n ${CHECK_ARGS:-} ]]; then
  step "check ${ops[*]} $CHECK_ARGS"
  read -r -a check_args <<<"$CHECK_ARGS"
  ./build/kbench check "${ops[@]}" "${check_args[@]}" --csv "$out/check.csv" --format none 2>&1 |
    tail -5 | tee -a "$log"
fi

if [[ ${SKIP_SWEEP:-0} != 1 ]]; then
  step "sweep ${ops[*]}"
  read -r -a sweep_args <<<"${SWEEP_ARGS:-}"
  ./build/kbench run "${ops[@]}" --sweep "${SWEEP:-default}" "${sweep_args[@]}" --csv "$out/sweep.csv" \
    --gbench-json "$out/gbench.json" --format table 2>&1 | tee "$out/sweep.txt" | tail -40
fi
if [[ -n ${PEERS:-} ]]; then
  step "PyTorch peers $PEERS"
  python3 scripts/torch_peers.py --kbench build/kbench --ops "$PEERS" --dtype bf16 \
    --out "$out/peers.csv" 2>&1 | tee "$out/peers.txt" | tail -40
fi
if [[ ${GATE:-0} == 1 ]]; then
  step "gate evidence"
  bash scripts/gate-evidence.sh ./build/kbench "$out" | tee -a "$log"
fi
step "done"
