#!/usr/bin/env bash
# One call on a GPU machine: build (sm_90 only), run every test including the `gpu` ones,
# calibrate, then the default sweep of the given ops. Logs and CSVs go to $OUT (default ./out).
#   bash scripts/gpu-check.sh [OPS...]        (default: rmsnorm rmsnorm_bwd)
# Environment: KBENCH_CUDA_ARCHS (default 90), SWEEP (default: default), SKIP_TESTS=1,
# GATE=1 (also run scripts/gate-evidence.sh for the regression gate).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/out}
mkdir -p "$out"
ops=("$@")
((${#ops[@]})) || ops=(rmsnorm rmsnorm_bwd)
log=$out/log.txt
export PATH=$PATH:/usr/local/cuda/bin
export KBENCH_CEILINGS=$out/ceilings.csv
step() { echo "=== $* ($(date +%T))" | tee -a "$log"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$log"

step "build"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B build "${gen[@]}" -DCMAKE_CUDA_ARCHITECTURES="${KBENCH_CUDA_ARCHS:-90}" >>"$log" 2>&1 &&
  cmake --build build -j"$(nproc)" >>"$log" 2>&1 || { echo "build failed"; tail -50 "$log"; exit 1; }

step "calibrate"
./build/kbench calibrate 2>&1 | tee -a "$log"
./build/kbench devices 2>&1 | tee -a "$log"
python3 scripts/torch_copy_rate.py 2>&1 | tee -a "$log"

step "sweep ${ops[*]}"
./build/kbench run "${ops[@]}" --sweep "${SWEEP:-default}" --csv "$out/sweep.csv" \
  --gbench-json "$out/gbench.json" --format table 2>&1 | tee "$out/sweep.txt" | tail -120
if [[ ${GATE:-0} == 1 ]]; then
  step "gate evidence"
  bash scripts/gate-evidence.sh ./build/kbench "$out" | tee -a "$log"
fi
if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  step "tests"
  (cd build && ctest --output-on-failure -j4 --timeout 900) >"$out/tests.txt" 2>&1
  tail -25 "$out/tests.txt" | tee -a "$log"
fi

step "done"
