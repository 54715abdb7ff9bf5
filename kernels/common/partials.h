// Per-block fp32 partial rows of column gradients (dw, db) and their sum, for norm backwards
// whose persistent grids accumulate each column's gradient in fp32 per thread across the rows
// it sees (rmsnorm_bwd, fused_add_rmsnorm_bwd, layernorm_bwd). A block folds its teams'
// accumulators into one partial row per output in the workspace; a second kernel adds the
// partial rows column by column, or (the staged kernels) the same kernel does, once every block
// has written its own. All in a fixed order, with no atomics: the result depends on the grid
// size only, never on timing (deterministic).
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"

namespace kbench {

// A thread's V consecutive fp32 partials at row + col: 16-byte accesses on the vector path
// (the partial row is 16-byte aligned there), scalar ones with bounds otherwise. Columns at
// or past `cols` read as 0 and are not written.
template <bool kVector, int V>
__device__ __forceinline__ void load_partial(float* v, const float* row, int64_t col,
                                             int64_t cols) {
  if constexpr (kVector) {
    static_assert(V % 4 == 0);
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      const float4 f = col < cols ? *reinterpret_cast<const float4*>(row + col + 4 * q)
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
      v[4 * q] = f.x;
      v[4 * q + 1] = f.y;
      v[4 * q + 2] = f.z;
      v[4 * q + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = col + i < cols ? row[col + i] : 0.f;
  }
}

template <bool kVector, int V>
__device__ __forceinline__ void store_partial(float* row, int64_t col, int64_t cols,
                                              const float* v) {
  if constexpr (kVector) {
    if (col >= cols) return;
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      *reinterpret_cast<float4*>(row + col + 4 * q) =
          make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (col + i < cols) row[col + i] = v[i];
    }
  }
}

// Adds the accumulators of every team of the block (kTeam consecutive threads) into team 0's:
// log2(kTeams) rounds; in each, the upper half of the remaining teams hands its values to the
// lower half through shared memory (`exchange`: kBlock / 2 * kRows * kCols floats). Fixed
// order, so the result is deterministic. Every thread of the block must call it; it may be
// called again with the same exchange buffer (it synchronizes before reuse). acc is the
// caller's array as declared, kRows x kCols floats (&acc and kRows = 1 for a flat array):
// indexed in the caller's own shape, the kernels compile to the code they were measured with
// (a flattened index changed ptxas' scheduling of the fold).
// kVec4: 16-byte exchanges where kCols allows (`exchange` 16-byte aligned): a quarter of the
// shared stores and loads (the staged kernels; measured with the finalize's loads at once below).
template <int kBlock, int kTeam, int kRows, int kCols, bool kVec4 = false>
__device__ __forceinline__ void fold_teams(float (*acc)[kCols], float* exchange) {
  constexpr int kTeams = kBlock / kTeam;
  constexpr int W = kVec4 && kCols % 4 == 0 ? 4 : 1;  // floats per shared access
  using Word = std::conditional_t<W == 4, float4, float>;
  Word* const words = reinterpret_cast<Word*>(exchange);
  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  // Lane fastest: no bank conflicts. c: the word's first column.
  const auto slot = [lane](int team_slot, int r, int c) {
    return ((team_slot * kRows + r) * (kCols / W) + c / W) * kTeam + lane;
  };
#pragma unroll 1
  for (int half = kTeams / 2; half >= 1; half /= 2) {
    __syncthreads();  // the previous round's (or call's) readers are done
    if (team >= half && team < 2 * half) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int c = 0; c < kCols; c += W) {
          if constexpr (W == 4) {
            words[slot(team - half, r, c)] =
                make_float4(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
          } else {
            words[slot(team - half, r, c)] = acc[r][c];
          }
        }
      }
    }
    __syncthreads();
    if (team < half) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int c = 0; c < kCols; c += W) {
          const Word v = words[slot(team, r, c)];
          if constexpr (W == 4) {
            acc[r][c] += v.x;
            acc[r][c + 1] += v.y;
            acc[r][c + 2] += v.z;
            acc[r][c + 3] += v.w;
          } else {
            acc[r][c] += v;
          }
        }
      }
    }
  }
}

// fold_teams' sum with its work spread over every team. A thread's accumulators are kRows x
// kCols / 4 float4 "units"; team scattered_fold_owner(u) adds unit u over the teams and hands
// the sum to store(u, sum) (the staged kernels write it to the partial rows), so each team
// writes its share of them. One exchange (every thread stores all its units, then loads the
// teams' values of the units its team owns) instead of fold_teams' log2(kTeams) rounds, in each
// of which half the remaining teams wait and team 0 alone adds and then stores everything. The
// teams' values are added in team order, so the sums are deterministic (not bitwise
// fold_teams': another order). Every unit goes through the exchange, so the accumulators are
// dead after the first barrier (no registers held for the second half). `exchange`: kRows x
// kCols / 4 x kBlock float4s. Every thread of the block must call it.
template <int kTeams, int kUnits>
__host__ __device__ constexpr int scattered_fold_owner(int unit) {
  return unit * kTeams / kUnits;  // contiguous units per team: whole packs where they divide
}
static_assert(scattered_fold_owner<4, 16>(3) == 0 && scattered_fold_owner<4, 16>(4) == 1 &&
              scattered_fold_owner<4, 16>(15) == 3 && scattered_fold_owner<2, 8>(4) == 1 &&
              scattered_fold_owner<16, 16>(9) == 9 && scattered_fold_owner<16, 8>(7) == 14);
template <int kBlock, int kTeam, int kRows, int kCols, class Store>
__device__ __forceinline__ void fold_teams_scattered(const float (*acc)[kCols], float4* exchange,
                                                     Store&& store) {
  static_assert(kCols % 4 == 0);
  constexpr int kTeams = kBlock / kTeam;
  constexpr int kQuads = kCols / 4;
  constexpr int kUnits = kRows * kQuads;
  const int team = static_cast<int>(threadIdx.x) / kTeam;
  const int lane = static_cast<int>(threadIdx.x) % kTeam;
  // Team t's value of unit u, this lane's: lane fastest, so no bank conflicts.
  const auto slot = [lane](int u, int t) { return (u * kTeams + t) * kTeam + lane; };
  __syncthreads();  // every team is done with the buffers (the stages) the exchange reuses
#pragma unroll
  for (int u = 0; u < kUnits; ++u) {
    const float* a = &acc[u / kQuads][4 * (u % kQuads)];
    exchange[slot(u, team)] = make_float4(a[0], a[1], a[2], a[3]);
  }
  __syncthreads();
#pragma unroll
  for (int u = 0; u < kUnits; ++u) {
    if (scattered_fold_owner<kTeams, kUnits>(u) != team) continue;
    float4 total = exchange[slot(u, 0)];
#pragma unroll
    for (int t = 1; t < kTeams; ++t) add_to(total, exchange[slot(u, t)]);
    store(u, total);
  }
}

// out[j] = sum of the partial rows' column j. A block of kFinalizeThreads threads takes
// kFinalizeThreads / groups groups of kCols columns (kCols = 4: 16-byte loads, where the rows
// allow; 1 otherwise), and its `groups` groups of threads split the partial rows; each thread
// issues up to kFinalizeInFlight loads before it adds them, then the groups' sums are added in a
// fixed order (deterministic). kOutputs = 2: blockIdx.y picks out0 (0) or out1 (1), whose
// num_partials partial rows follow out0's in the workspace. Launched to overlap the end of the
// kernel that wrote the partial rows (launch_finalize_partial_rows), so it waits for that
// kernel first.
//
// Four columns per thread keep a 65536-wide finalize to about two waves of blocks instead of
// eight: on the H100 that lifted the staged backwards at 65536 bf16 from 73.4 / 76.6 / 58.8% of
// the copy ceiling (rmsnorm_bwd, fused_add_rmsnorm_bwd, layernorm_bwd) to 83.7 / 84.7 / 74.6%,
// and at 32768 by 3.5-10 points (kernels/rmsnorm/NOTES.md). `groups` (finalize_groups) is as
// few as give each thread at most kFinalizeInFlight rows: 132 partial rows take 16 groups (the
// columns are few: N <= 16384), the 15 of a 65536-wide row's clusters 2, so a block covers
// 8 times the columns and the whole finalize is one wave: same run, H100, bf16, 65536,
// layernorm_bwd 78.7% of the copy ceiling against 75.4, rmsnorm_bwd 85.7 against 83.7; H200
// fused_add_rmsnorm_bwd 83.9 against 78.8.
constexpr int kFinalizeThreads = 512;
constexpr int kFinalizeMaxGroups = 16;
template <int kCols>
constexpr int kFinalizeInFlight = kCols == 4 ? 8 : 16;

// Groups of threads that split num_partials rows in finalize_partial_rows: the fewest (a power
// of two, at most kFinalizeMaxGroups) whose threads' loads in flight cover them all, or the
// most. KBENCH_FINALIZE_GROUPS=0 always takes the most (a knob for scripts/ab-flags.sh).
#ifndef KBENCH_FINALIZE_GROUPS
#define KBENCH_FINALIZE_GROUPS 1
#endif
constexpr int finalize_groups(int64_t num_partials, int in_flight) {
  int groups = KBENCH_FINALIZE_GROUPS ? 1 : kFinalizeMaxGroups;
  while (groups < kFinalizeMaxGroups && int64_t{groups} * in_flight < num_partials) groups *= 2;
  return groups;
}
#if KBENCH_FINALIZE_GROUPS
static_assert(finalize_groups(15, 8) == 2 && finalize_groups(16, 8) == 2 &&
              finalize_groups(33, 8) == 8 && finalize_groups(132, 8) == 16 &&
              finalize_groups(1, 8) == 1 && finalize_groups(132, 16) == 16);
#endif

template <class T, int kOutputs, int kCols>
__global__ void __launch_bounds__(kFinalizeThreads)
    finalize_partial_rows(const float* partials, int64_t num_partials, int64_t cols, int groups,
                          T* out0, T* out1) {
  static_assert(kOutputs == 1 || kOutputs == 2);
  static_assert(kCols == 1 || kCols == 4);
  __shared__ float group_sums[kFinalizeThreads * kCols];  // [group][column of the block]
  const float* rows = partials;
  T* out = out0;
  if constexpr (kOutputs == 2) {
    rows = partials + static_cast<int64_t>(blockIdx.y) * num_partials * cols;
    out = blockIdx.y == 0 ? out0 : out1;
  }
  const int block_cols = kFinalizeThreads / groups;  // threads per group
  const int c = static_cast<int>(threadIdx.x) % block_cols;
  const int group = static_cast<int>(threadIdx.x) / block_cols;
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * block_cols + c) * kCols;
  wait_for_previous_grid();
  float s[kCols] = {};
  if (col < cols) {
    for (int64_t r = group; r < num_partials; r += int64_t{kFinalizeInFlight<kCols>} * groups) {
      float v[kFinalizeInFlight<kCols>][kCols];
#pragma unroll
      for (int u = 0; u < kFinalizeInFlight<kCols>; ++u) {
        const int64_t ru = r + int64_t{u} * groups;
        load_partial<kCols == 4, kCols>(v[u], rows + (ru < num_partials ? ru : 0) * cols, col,
                                        ru < num_partials ? cols : 0);
      }
#pragma unroll
      for (int u = 0; u < kFinalizeInFlight<kCols>; ++u) {
#pragma unroll
        for (int i = 0; i < kCols; ++i) s[i] += v[u][i];
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kCols; ++i) group_sums[threadIdx.x * kCols + i] = s[i];
  __syncthreads();
  if (group == 0) {
#pragma unroll
    for (int i = 0; i < kCols; ++i) {
      if (col + i >= cols) break;
      float total = 0.f;
      for (int g = 0; g < groups; ++g) total += group_sums[(g * block_cols + c) * kCols + i];
      out[col + i] = from_float<T>(total);
    }
  }
}

// finalize_partial_rows inside the kernel that wrote the partial rows, once every block has
// written them (staged_rows.cuh's finalizes_in_kernel, after grid_wait_all): block b of the grid
// adds up its share of the 16-byte column groups (cols % 4 == 0, partials 16-byte aligned),
// out0's and then out1's, each over the num_partials rows. Up to kInBlockSplits threads per
// column group split the rows, their sums meet in `scratch` (blockDim.x float4) and are added
// in a fixed order (deterministic). Each thread issues its rows' loads at once (kInBlockInFlight
// at a time). A per-block timeline (%globaltimer, H200) put this sum at 2.1 / 3.3 us of
// layernorm_bwd's kernel at 32K / 64K bf16 when each load waited for the one before; with the
// loads at once and fold_teams' 16-byte exchanges, same run, H200, bf16, % of the copy ceiling:
// rmsnorm_bwd +1.6 / +1.7 at 32K / 64K (84.5 / 84.7 against 82.8 / 83.0), layernorm_bwd +0.8 /
// +0.8 (82.5 / 79.4 against 81.7 / 78.7), +0 to +1 at 1K-16K (kernels/rmsnorm/NOTES.md,
// thirty-ninth session).
constexpr int kInBlockSplits = 16;
constexpr int kInBlockInFlight = 8;
template <int kOutputs, class T>
__device__ __forceinline__ void finalize_partial_rows_in_block(const float* partials,
                                                               int64_t num_partials, int64_t cols,
                                                               T* out0, T* out1, float4* scratch) {
  const int64_t quads = cols / 4;
  const int64_t per_block = ceil_div(quads, gridDim.x);
  const int64_t begin = blockIdx.x * per_block;
  const int64_t left = quads - begin;  // from this block's first column group on
  const int64_t block_quads = left <= 0 ? 0 : per_block < left ? per_block : left;
  const int64_t items = kOutputs * block_quads;
  const int threads = static_cast<int>(blockDim.x);
  for (int64_t base = 0; base < items; base += threads) {
    const int n = static_cast<int>(items - base < threads ? items - base : threads);
    int splits = 1;
    while (splits < kInBlockSplits && 2 * splits * n <= threads && splits < num_partials) {
      splits *= 2;
    }
    const int item = static_cast<int>(threadIdx.x) % n;
    const int split = static_cast<int>(threadIdx.x) / n;
    const int64_t i = base + item;
    const int out = kOutputs == 2 && i >= block_quads ? 1 : 0;
    const int64_t quad = begin + (i - out * block_quads);
    if (split < splits) {
      const float4* column =
          reinterpret_cast<const float4*>(partials + out * num_partials * cols) + quad;
      float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
      // Up to kInBlockInFlight rows' loads issued before the first add (a loop of a load and an
      // add waited for each load in turn, an L2 round trip each); rows past the end read as 0.
      for (int64_t r0 = split; r0 < num_partials; r0 += int64_t{kInBlockInFlight} * splits) {
        float4 v[kInBlockInFlight];
#pragma unroll
        for (int u = 0; u < kInBlockInFlight; ++u) {
          const int64_t r = r0 + int64_t{u} * splits;
          v[u] = r < num_partials ? column[r * quads] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < kInBlockInFlight; ++u) add_to(s, v[u]);
      }
      scratch[split * n + item] = s;
    }
    __syncthreads();
    if (split == 0) {
      float4 total = scratch[item];
      for (int q = 1; q < splits; ++q) add_to(total, scratch[q * n + item]);
      T* const o = (out == 0 ? out0 : out1) + quad * 4;
      o[0] = from_float<T>(total.x);
      o[1] = from_float<T>(total.y);
      o[2] = from_float<T>(total.z);
      o[3] = from_float<T>(total.w);
    }
    __syncthreads();  // scratch is free again
  }
}

// Sums num_partials partial rows of `cols` fp32 columns into out0; kOutputs = 2: the next
// num_partials rows into out1 as well, in the same launch. `overlap` (sm_90+): launched while
// the kernel that wrote the partial rows is still finishing (launch_overlapping_previous),
// which hides the launch gap between the two; the finalize waits for that kernel before it
// reads. KBENCH_OVERLAP_FINALIZE=0 turns it off (a knob for scripts/ab-flags.sh).
#ifndef KBENCH_OVERLAP_FINALIZE
#define KBENCH_OVERLAP_FINALIZE 1
#endif
template <int kOutputs, class T>
void launch_finalize_partial_rows(gpuStream_t stream, const float* partials, int64_t num_partials,
                                  int64_t cols, T* out0, T* out1 = nullptr, bool overlap = false) {
  const bool vector = cols % 4 == 0 && reinterpret_cast<uintptr_t>(partials) % 16 == 0;
  const int64_t threads_per_row = vector ? cols / 4 : cols;
  const int in_flight = vector ? kFinalizeInFlight<4> : kFinalizeInFlight<1>;
  const int groups = finalize_groups(num_partials, in_flight);
  const int64_t blocks = ceil_div(threads_per_row, kFinalizeThreads / groups);
  const dim3 grid(static_cast<unsigned>(blocks), kOutputs);
  auto* kernel = vector ? finalize_partial_rows<T, kOutputs, 4> : finalize_partial_rows<T, kOutputs, 1>;
  launch_overlapping_previous(kernel, grid, kFinalizeThreads, stream,
                              overlap && KBENCH_OVERLAP_FINALIZE, partials, num_partials, cols,
                              groups, out0, out1);
}

}  // namespace kbench
