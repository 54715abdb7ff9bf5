#!/usr/bin/env bash
# A/B of compile-time knobs on the GPU machine: builds kbench (sm_90) with extra CUDA compile
# definitions into build-NAME, then runs one `kbench run` per op with the given arguments,
# appending the tables to $OUT/variants.txt under a NAME header and the rows to
# $OUT/ab-NAME.csv (ab-NAME.TAG.csv with AB_TAG=TAG, e.g. a second pass). Same ceilings file as
# gpu-check.sh (run that first, in the same call, so every variant shares its calibration).
#   bash scripts/ab-flags.sh NAME "FLAGS" "OP[,OP...]" [kbench run args...]
# e.g. bash scripts/ab-flags.sh packs4 "-DKBENCH_FORWARD_PACKS=4" rmsnorm --dtype bf16
# AB_STEP=build only builds (several variants can build at once while another runs);
# AB_STEP=run only runs an earlier build.
set -uo pipefail
cd "$(dirname "$0")/.."
name=$1 flags=$2 ops=$3
shift 3
out=${OUT:-$PWD/out}
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin
export KBENCH_CEILINGS=${KBENCH_CEILINGS:-$out/ceilings.csv}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
step=${AB_STEP:-all}
if [[ $step != run ]]; then
  cmake -S . -B "build-$name" "${gen[@]}" -DKBENCH_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_FLAGS="$flags" >/dev/null &&
    cmake --build "build-$name" -j"${AB_JOBS:-$(nproc)}" --target kbench >/dev/null ||
    { echo "=== variant $name: build failed" | tee -a "$out/variants.txt"; exit 1; }
fi
[[ $step == build ]] && exit 0
# One CSV per variant and pass, not per op: the device tool brings back at most 8 files from
# $OUT. Compare with scripts/ab_table.py a=ab-a.csv b=ab-b.csv.
csv=$out/ab-$name${AB_TAG:+.$AB_TAG}.csv
{
  echo "=== variant $name: $flags ($(date +%T))"
  for op in ${ops//,/ }; do
    rm -f "build-$name/$op.csv"
    "./build-$name/kbench" run "$op" "$@" --csv "build-$name/$op.csv" --format table 2>&1
    if [[ -f build-$name/$op.csv ]]; then
      [[ -s $csv ]] || head -1 "build-$name/$op.csv" >"$csv"
      tail -n +2 "build-$name/$op.csv" >>"$csv"
    fi
  done
} | tee -a "$out/variants.txt"
