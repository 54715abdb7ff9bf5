// Per-block fp32 partial rows of column gradients (dw, db) and their sum, for norm backwards
// whose persistent grids accumulate each column's gradient in fp32 per thread across the rows
// it sees (rmsnorm_bwd, fused_add_rmsnorm_bwd, layernorm_bwd). A block folds its teams'
// accumulators into one partial row per output in the workspace; a second kernel adds the
// partial rows column by column. Both in a fixed order, with no atomics: the result depends on
// the grid size only, never on timing (deterministic).
#pragma once
#include <cstdint>

#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"

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
template <int kBlock, int kTeam, int kRows, int kCols>
__device__ __forceinline__ void fold_teams(float (*acc)[kCols], float* exchange) {
  constexpr int kTeams = kBlock / kTeam;
  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  // Lane fastest: no bank conflicts.
  const auto slot = [lane](int team_slot, int r, int c) {
    return ((team_slot * kRows + r) * kCols + c) * kTeam + lane;
  };
#pragma unroll 1
  for (int half = kTeams / 2; half >= 1; half /= 2) {
    __syncthreads();  // the previous round's (or call's) readers are done
    if (team >= half && team < 2 * half) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int c = 0; c < kCols; ++c) exchange[slot(team - half, r, c)] = acc[r][c];
      }
    }
    __syncthreads();
    if (team < half) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[r][c] += exchange[slot(team, r, c)];
      }
    }
  }
}

// out[j] = sum of the partial rows' column j. A block takes 32 groups of kCols columns (kCols
// = 4: 16-byte loads, where the rows allow; 1 otherwise) and kFinalizeGroups groups of threads
// split the partial rows; each thread issues up to kFinalizeInFlight loads before it adds
// them, then the groups' sums are added in a fixed order (deterministic). kOutputs = 2:
// blockIdx.y picks out0 (0) or out1 (1), whose num_partials partial rows follow out0's in the
// workspace. Launched to overlap the end of the kernel that wrote the partial rows
// (launch_finalize_partial_rows), so it waits for that kernel first.
//
// Four columns per thread keep a 65536-wide finalize to about two waves of blocks instead of
// eight: on the H100 that lifted the staged backwards at 65536 bf16 from 73.4 / 76.6 / 58.8% of
// the copy ceiling (rmsnorm_bwd, fused_add_rmsnorm_bwd, layernorm_bwd) to 83.7 / 84.7 / 74.6%,
// and at 32768 by 3.5-10 points (kernels/rmsnorm/NOTES.md).
constexpr int kFinalizeCols = 32;
constexpr int kFinalizeGroups = 16;
template <int kCols>
constexpr int kFinalizeInFlight = kCols == 4 ? 8 : 16;

template <class T, int kOutputs, int kCols>
__global__ void __launch_bounds__(kFinalizeCols * kFinalizeGroups)
    finalize_partial_rows(const float* partials, int64_t num_partials, int64_t cols, T* out0,
                          T* out1) {
  static_assert(kOutputs == 1 || kOutputs == 2);
  static_assert(kCols == 1 || kCols == 4);
  __shared__ float group_sums[kFinalizeGroups][kFinalizeCols * kCols];
  const float* rows = partials;
  T* out = out0;
  if constexpr (kOutputs == 2) {
    rows = partials + static_cast<int64_t>(blockIdx.y) * num_partials * cols;
    out = blockIdx.y == 0 ? out0 : out1;
  }
  const int c = threadIdx.x % kFinalizeCols;
  const int group = threadIdx.x / kFinalizeCols;
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * kFinalizeCols + c) * kCols;
  wait_for_previous_grid();
  float s[kCols] = {};
  if (col < cols) {
    for (int64_t r = group; r < num_partials; r += kFinalizeInFlight<kCols> * kFinalizeGroups) {
      float v[kFinalizeInFlight<kCols>][kCols];
#pragma unroll
      for (int u = 0; u < kFinalizeInFlight<kCols>; ++u) {
        const int64_t ru = r + u * kFinalizeGroups;
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
  for (int i = 0; i < kCols; ++i) group_sums[group][c * kCols + i] = s[i];
  __syncthreads();
  if (group == 0) {
#pragma unroll
    for (int i = 0; i < kCols; ++i) {
      if (col + i >= cols) break;
      float total = 0.f;
#pragma unroll
      for (int g = 0; g < kFinalizeGroups; ++g) total += group_sums[g][c * kCols + i];
      out[col + i] = from_float<T>(total);
    }
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
  const dim3 grid(static_cast<unsigned>(ceil_div(threads_per_row, kFinalizeCols)), kOutputs);
  auto* kernel = vector ? finalize_partial_rows<T, kOutputs, 4> : finalize_partial_rows<T, kOutputs, 1>;
  launch_overlapping_previous(kernel, grid, kFinalizeCols * kFinalizeGroups, stream,
                              overlap && KBENCH_OVERLAP_FINALIZE, partials, num_partials, cols,
                              out0, out1);
}

}  // namespace kbench
