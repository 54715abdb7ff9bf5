#!/usr/bin/env bash
# Nsight Compute on kbench points (GPU machine): the kernels an impl launches at one shape,
# profiled once each after the correctness check, clocks left alone (--clock-control none) and
# caches flushed before each kernel (ncu's default), so cold L2 as in `kbench run`.
#   bash scripts/profile.sh KBENCH OP IMPL SHAPE [DTYPE]     (DTYPE default bf16)
# Prints duration, DRAM and L2 throughput, issue rate, instructions per element (warp
# instructions x 32 / M*N) and the top warp stalls of each kernel, and appends ncu's full text
# to $OUT/profile.txt.
set -uo pipefail
kbench=$1 op=$2 impl=$3 shape=$4 dtype=${5:-bf16}
out=${OUT:-$PWD/out}
mkdir -p "$out"
elements=$(( ${shape%%x*} * ${shape#*x} ))
log=$(mktemp)
# The impl's kernels (never the L2 flush or the poison fill), from the second launch on: the
# correctness check's finalize, then a timed sample's kernels.
ncu --clock-control none --kernel-name regex:'^(staged|finalize|bulk|.*norm)' --launch-skip 1 \
  --launch-count 3 --section SpeedOfLight --section SchedulerStats --section WarpStateStats \
  --section LaunchStats --metrics smsp__inst_executed.sum,dram__bytes.sum \
  "$kbench" run "$op" --impl "$impl" --shape "$shape" --dtype "$dtype" --samples 1 \
  --format none --no-csv --no-auto-calibrate >"$log" 2>&1
{ echo "##### $op $impl $shape $dtype"; cat "$log"; } >>"$out/profile.txt"
# One line per kernel: name (shortened), then the numbers that say what bounds it.
awk -v el="$elements" -v point="$op $impl $shape $dtype" '
  function flush() {
    if (name != "") printf "%s | %s: %s us, DRAM %s%%, L2 %s%%, a warp issuing in %s%% of cycles, %.1f instr/element, %s regs, grid %s\n",
                           point, name, dur, dram, l2, issue, inst, regs, grid
    name = ""
  }
  /^  [^ ].*\(.*\) \(/ { flush(); name = $0; sub(/^ *(void )?/, "", name)
                          gsub(/kbench::|<unnamed>::|\(anonymous namespace\)::|staged_rows::/, "", name)
                          sub(/<.*/, "", name); sub(/\(.*/, "", name) }
  / Duration / { dur = $NF }
  /DRAM Throughput/ { dram = $NF }
  /L2 Cache Throughput/ { l2 = $NF }
  /One or More Eligible/ { issue = $NF }
  /Registers Per Thread/ { regs = $NF }
  /smsp__inst_executed.sum/ { v = $NF; gsub(",", "", v); inst = v * 32 / el }
  /Grid Size/ { grid = $NF }
  END { flush() }' "$log"
grep -E "stalled" "$log" | head -6 | sed 's/^ */    /'
rm -f "$log"
