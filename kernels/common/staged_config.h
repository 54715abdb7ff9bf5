// The shape choices of the staged-row kernels (staged_rows.cuh): block size, packs per thread,
// how many rows fit shared memory, and which team or cluster takes a row of a given width.
// Plain C++, so the unit tests check them without a GPU (tests/unit/test_staged_config.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace kbench::staged_rows {

// Rows in flight per team: this one and the next kStages - 1, as many as fit kSharedBudget, at
// most KBENCH_MAX_STAGES (a knob for scripts/ab-flags.sh; 2 measured 1-4 points slower).
#ifndef KBENCH_MAX_STAGES
#define KBENCH_MAX_STAGES 4
#endif
// Packs a block of a cluster takes at most (a knob for scripts/ab-flags.sh): 2048, kPacks per
// thread; 1024 spreads a row over twice the blocks, 2 packs each.
#ifndef KBENCH_CLUSTER_SLICE
#define KBENCH_CLUSTER_SLICE 2048
#endif
constexpr int kBlock = 512;                   // threads per block, one block per SM
constexpr int kPacks = 4;                     // 16-byte packs per thread per staged tensor
constexpr int kPackBytes = 16;
constexpr int kMaxStages = KBENCH_MAX_STAGES;
constexpr size_t kSharedBudget = 200 * 1024;  // of sm_90's 227 KB per SM
constexpr int kMaxBlocksPerSm = 1;            // bounds a backward's partial rows

// Shared memory of one stage (one row per team) of `staged` tensors.
constexpr size_t stage_bytes(int staged) {
  return static_cast<size_t>(staged) * kPacks * kBlock * kPackBytes;
}

// As many stages as fit the budget, never fewer than 2 (this row and the next).
constexpr int stages_of(int staged) {
  int stages = kMaxStages;
  while (stages > 2 && stages * stage_bytes(staged) > kSharedBudget) --stages;
  return stages;
}

template <int kTeam_, int kCluster_>
struct StagedConfig {
  static constexpr int kTeam = kTeam_;        // threads per row (kBlock / kTeam rows per block)
  static constexpr int kCluster = kCluster_;  // blocks per row
};

// One 512-thread block per SM, kPacks packs per thread: teams of a warp (32 threads, 64 on AMD)
// to 512 threads per row (16 to 1 rows per block at a time; rows up to 16384 bf16), then
// clusters of 2, 4 or 8 blocks per row. Calls f(StagedConfig<...>{}) and returns true, or
// returns false for rows wider than 8 blocks hold (131072 bf16, 65536 fp32) or, without
// clusters, than one block holds. One block per SM, not several smaller ones: a backward
// writes one N-wide fp32 partial row per block, and 264 or 528 of them cost 3-5 points of the
// copy ceiling against 132 (H100, kernels/rmsnorm/NOTES.md); several rows per block keep as
// many rows in flight as several blocks would.
template <int kWarpSize, class F>
bool with_staged_config(int64_t packs, bool clusters, F&& f) {
  constexpr int kWarpTeam = kWarpSize > 32 ? kWarpSize : 32;
  if (packs <= 32 * kPacks) return f(StagedConfig<kWarpTeam, 1>{}), true;
  if (packs <= 64 * kPacks) return f(StagedConfig<64, 1>{}), true;
  if (packs <= 128 * kPacks) return f(StagedConfig<128, 1>{}), true;
  if (packs <= 256 * kPacks) return f(StagedConfig<256, 1>{}), true;
  if (packs <= 512 * kPacks) return f(StagedConfig<512, 1>{}), true;
  if (!clusters) return false;
  constexpr int64_t kSlice = KBENCH_CLUSTER_SLICE;
  static_assert(kSlice <= kBlock * kPacks);
  if (packs <= 2 * kSlice) return f(StagedConfig<kBlock, 2>{}), true;
  if (packs <= 4 * kSlice) return f(StagedConfig<kBlock, 4>{}), true;
  if (packs <= 8 * kSlice) return f(StagedConfig<kBlock, 8>{}), true;
  return false;
}

}  // namespace kbench::staged_rows
