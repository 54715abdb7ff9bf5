#!/usr/bin/env bash
# A/B of compile-time knobs on the GPU machine: builds kbench (sm_90) with extra CUDA compile
# definitions into build-NAME, then runs one `kbench run` per op with the given arguments,
# appending the tables to $OUT/variants.txt under a NAME header. Same ceilings file as
# gpu-check.sh (run that first, in the same call, so every variant shares its calibration).
#   bash scripts/ab-flags.sh NAME "FLAGS" "OP[,OP...]" [kbench run args...]
# e.g. bash scripts/ab-flags.sh packs2 "-DKBENCH_STAGE_PACKS=2" rmsnorm_bwd --dtype bf16
set -uo pipefail
cd "$(dirname "$0")/.."
name=$1 flags=$2 ops=$3
shift 3
out=${OUT:-$PWD/out}
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin
export KBENCH_CEILINGS=${KBENCH_CEILINGS:-$out/ceilings.csv}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
{
  echo "=== variant $name: $flags ($(date +%T))"
  cmake -S . -B "build-$name" "${gen[@]}" -DKBENCH_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_FLAGS="$flags" >/dev/null &&
    cmake --build "build-$name" -j"$(nproc)" --target kbench >/dev/null || { echo "build failed"; exit 1; }
  for op in ${ops//,/ }; do
    "./build-$name/kbench" run "$op" "$@" --csv "build-$name/$op.csv" --format table 2>&1
  done
} | tee -a "$out/variants.txt"
