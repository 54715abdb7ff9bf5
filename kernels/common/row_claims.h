// Rows handed out at run time: a persistent kernel's blocks take their first steps' rows by
// their index (block b: b, b + grid, ...) and the rest from a counter, one group at a time, so
// blocks on SMs the memory serves faster take more of the last rows.
//
// Why: with every row placed by block index, an SM's share is fixed before the kernel starts,
// and SMs are not served alike: ncu of fused_add_rmsnorm's bulk kernel at 8192x4096 bf16 on
// the H200 counted its SMs active for 85 K to 127 K of the kernel's 128 K cycles (113 K on
// average), the same spread at every width. The kernel ends with its slowest SM.
//
// How: one 32-bit counter per launch, from a ring of kClaimSlots per device allocated and
// zeroed once. A launch takes the slot of its epoch (a per-device host count) and zeroes the
// slot kClaimSlots / 2 epochs ahead, so each slot is zero again before its next use; kbench
// runs one kernel at a time on a device, far fewer than kClaimSlots / 2 in flight.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/common/compat.h"
#include "kernels/common/launch.h"

namespace kbench {

constexpr int kClaimSlots = 64;

// What a kernel needs to hand out its rows: groups before `first_claimed` go by block index,
// the rest by the counter (bulk_rows.cuh). first_claimed at or past the last group: no claims.
struct RowClaims {
  uint32_t* counter = nullptr;  // this launch's, zero at its start
  uint32_t* clear = nullptr;    // zeroed by block 0 for a later launch
  int64_t first_claimed = 0;    // a multiple of the grid
};

// The first claimed group: `claimed_percent` of the groups are claimed, at most `most_claims`,
// and more so that the rest (by block index) are whole steps of the grid. groups where none are.
constexpr int64_t first_claimed_group(int64_t groups, int grid, int claimed_percent,
                                      int64_t most_claims) {
  if (claimed_percent <= 0 || grid <= 0) return groups;
  const int64_t by_index = std::max(groups * (100 - claimed_percent) / 100, groups - most_claims);
  return by_index / grid * grid;
}

// Host: this launch's counter and where its claims start (first_claimed_group).
inline RowClaims row_claims_for_launch(int64_t groups, int grid, int claimed_percent,
                                       int64_t most_claims) {
  static std::atomic<int64_t> cache[64];
  auto* counters =
      static_cast<uint32_t*>(zeroed_once_per_device(cache, kClaimSlots * sizeof(uint32_t)));
  static std::atomic<uint32_t> epochs[64];
  int device = 0;
  KB_GPU_CHECK(gpuGetDevice(&device));
  const uint32_t epoch = epochs[device & 63].fetch_add(1);
  return RowClaims{counters + epoch % kClaimSlots,
                   counters + (epoch + kClaimSlots / 2) % kClaimSlots,
                   first_claimed_group(groups, grid, claimed_percent, most_claims)};
}

}  // namespace kbench
