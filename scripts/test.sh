#!/usr/bin/env bash
# Builds kbench twice from the same sources and runs every test that can run here:
#   build/      CUDA: kbench, unit tests, GPU tests (ctest label `gpu`: skipped without a GPU)
#   build-hip/  HIP for gfx90a with CXX=hipcc: compiled and linked, CPU tests and CLI run
# KBENCH_CUDA_ARCHS picks the CUDA targets (default: 80;90, what proving the code compiles needs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH=$PATH:/usr/local/cuda/bin
export HCC_AMDGPU_TARGET=${HCC_AMDGPU_TARGET:-gfx90a}  # hipcc: no GPU probe on machines without one
jobs=$(nproc)

cmake -S . -B build -DCMAKE_CUDA_ARCHITECTURES="${KBENCH_CUDA_ARCHS:-80;90}" >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

if command -v hipcc >/dev/null && [[ ${KBENCH_WITH_HIP:-1} == 1 ]]; then
  CXX=hipcc cmake -S . -B build-hip -DKBENCH_HIP=ON >/dev/null
  cmake --build build-hip -j"$jobs"
  (cd build-hip && ctest --output-on-failure -j"$jobs" -L unit)
fi
