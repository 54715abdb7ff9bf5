// Register-row layouts: how many threads share a row ("team"), how many 16-byte packs each
// holds, and how many blocks per SM to ask for. Forward norms that hold a whole row in
// registers (rmsnorm, fused_add_rmsnorm, layernorm) pick their layout here, so the measured
// choices below are made once.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/common/reduce.h"

namespace kbench {

template <int kBlock_, int kTeam_, int kPacks_, int kMinBlocks_>
struct RowLayout {
  static constexpr int kBlock = kBlock_;    // threads per block
  static constexpr int kTeam = kTeam_;      // threads per row (a warp, two, or the block)
  static constexpr int kPacks = kPacks_;    // Vec16 packs of the row per thread
  static constexpr int kMinBlocks = kMinBlocks_;  // __launch_bounds__ occupancy
  static constexpr int64_t kCapacity = int64_t{kTeam_} * kPacks_;  // packs per row
};

// Calls f(RowLayout<...>{}, std::bool_constant<vector>{}) with the smallest layout whose
// capacity holds `packs` packs and returns true; returns false (calling nothing) beyond register
// capacity. Warp teams first (up to 4 packs per lane, 8 rows per 256-thread block), then two-
// warp teams rather than 8 packs per lane (4 blocks of 256 threads per SM instead of 3: measured
// on H100, bf16 16384x2048, +3.4%), then one block per row. Up to 4 packs, kMinBlocks x kBlock =
// 1024 threads per SM (x and w in registers: 8 x kPacks + ~20 per thread in 16-bit types; see
// kWideFourPackRows below for twice that). Rows of up to 4096 packs (32768 bf16) take two
// 512-thread blocks per SM with 8 packs each, so one block streams while the other reduces (one
// 1024-thread block per SM left the memory idle between rows: 88% of the copy ceiling on H100 at
// 1024x32768, 95% with two). The scalar variant (vector = false) needs registers for per-element
// addresses and bounds, so it never gets 8 packs; callers whose rows carry more than x
// (allow_8_packs = false) neither.
constexpr int64_t kMaxRegisterRowPacks = 1024 * 8;  // the widest layout below

// The layouts above whose 16-byte rows span two warps or more at up to 4 packs per thread
// (1025-16384 bf16): x alone fits 32 registers there, so a kernel that re-reads its per-column
// weights per row can ask for 2048 threads per SM instead of the layout's 1024 (rmsnorm's do:
// rmsnorm_rows.cuh's kWideRowsAtFullOccupancy; polynorm's, with no per-column weights, ask for
// 1536: polynorm_math.h's kFwdThreadsPerSm).
template <int kTeam, int kPacks, bool kVector>
constexpr bool kWideFourPackRows = kVector && kTeam > kWarpSize && kPacks <= 4;

template <class F>
bool with_row_layout(int64_t packs, bool vector, bool allow_8_packs, F&& f) {
  const auto call = [&](auto layout) {
    if constexpr (decltype(layout)::kPacks <= 4) {
      if (!vector) return f(layout, std::false_type{}), true;
    }
    return f(layout, std::true_type{}), true;
  };
  const bool eight = vector && allow_8_packs;
  if (packs <= kWarpSize * 1) return call(RowLayout<256, kWarpSize, 1, 4>{});
  if (packs <= kWarpSize * 2) return call(RowLayout<256, kWarpSize, 2, 4>{});
  if (packs <= kWarpSize * 4) return call(RowLayout<256, kWarpSize, 4, 4>{});
  if (packs <= 2 * kWarpSize * 4) return call(RowLayout<256, 2 * kWarpSize, 4, 4>{});
  if (packs <= 128 * 4) return call(RowLayout<128, 128, 4, 8>{});
  if (packs <= 256 * 4) return call(RowLayout<256, 256, 4, 4>{});
  if (packs <= 512 * 4) return call(RowLayout<512, 512, 4, 2>{});
  if (packs <= 512 * 8 && eight) return call(RowLayout<512, 512, 8, 2>{});
  if (packs <= 1024 * 4) return call(RowLayout<1024, 1024, 4, 1>{});
  if (packs <= 1024 * 8 && eight) return call(RowLayout<1024, 1024, 8, 1>{});
  return false;
}

}  // namespace kbench
