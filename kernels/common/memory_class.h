// How fast a GPU's memory is for its SMs, which picks the forwards' policies where they differ
// by GPU (staged_rows.cuh's fast_memory: rmsnorm, layernorm, polynorm). Host code only, so the
// harness prints it (kbench devices) and unit tests check it without a GPU.
//
// Why a GPU's memory and not its name: rows read into registers once (staged_rows.cuh's
// KBENCH_ROW_IN_REGS and KBENCH_PIPELINED_ROW_IN_REGS) gain the H100 1-4 points of the copy
// ceiling and cost the H200, the same SMs beside 1.4x the bandwidth, 1-5 points in layernorm
// and polynorm (thirty-seventh session, kernels/rmsnorm/NOTES.md). What sets the two apart is
// the bytes each SM must keep in flight per clock, so that is the measure, not a list of parts.
#pragma once
#include <cstdlib>
#include <optional>
#include <string>

#include "harness/errors.h"

namespace kbench {

// Peak memory bytes per SM per SM clock: double data rate x bus bytes, over SMs x SM clock.
// H100 SXM (2619 MHz x 5120 bits, 132 SMs at 1980 MHz): 12.8; H200 (3201 MHz x 6016 bits, as
// its runtime reports them): 18.4.
// 0 where the device reports no SMs or no clock.
inline double memory_bytes_per_sm_clock(int memory_clock_khz, int bus_width_bits, int sm_clock_khz,
                                        int sm_count) {
  if (sm_clock_khz <= 0 || sm_count <= 0) return 0;
  return 2.0 * memory_clock_khz * (bus_width_bits / 8.0) / (static_cast<double>(sm_clock_khz) * sm_count);
}

// From 16 bytes per SM clock a GPU takes the policies for fast memory: the H200 above it, the
// H100 SXM below, the only two measured.
constexpr double kFastMemoryBytesPerSmClock = 16;

inline bool is_fast_memory(double bytes_per_sm_clock) {
  return bytes_per_sm_clock >= kFastMemoryBytesPerSmClock;
}

// KBENCH_FAST_MEMORY=1 or 0 in the environment: the policies for fast memory or not, whatever
// the GPU (an A/B of both on one GPU; kbench notes it in each row). Unset or empty: the GPU
// decides. Any other value throws UsageError.
inline std::optional<bool> fast_memory_override() {
  const char* env = std::getenv("KBENCH_FAST_MEMORY");
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string value = env;
  if (value == "1" || value == "0") return value == "1";
  throw UsageError("bad KBENCH_FAST_MEMORY '" + value + "' (1 or 0, or unset for the GPU to decide)");
}

}  // namespace kbench
