// Row kernels with their rows staged in shared memory: while a block computes on row i, its
// next rows are already on the way from HBM (async_copy.h), so the memory never waits for the
// row sums, the barriers or the arithmetic. Registers hold only what lives across rows: the
// thread's columns of w and, in backwards, its fp32 column-gradient accumulators (dw, db).
//
// One skeleton serves norm forwards and backwards; an op plugs in its arithmetic as a policy
// (rmsnorm_bwd_rows.cuh's RmsnormBwdStaged is a complete one):
//   using Type, Params;              element type; the kernel's parameters (rows, cols, eps..)
//   using Sums;                      a round's row sums: float2, or float4 (polynorm: three)
//   kStaged                          row tensors staged per row (x; dy, x, ...), read once each
//   kPacks                           16-byte packs per thread per staged tensor: kForwardPacks
//                                    (8) for a forward of one staged tensor, else kPacks (4)
//   kRounds                          rounds of row sums (one Sums per round)
//   kColGrads                        column gradients accumulated over rows (0 in forwards;
//                                    dw: 1; dw and db: 2)
//   Held, hold(p, col)               what a thread keeps for its columns across rows (w)
//   Stats                            a row's coefficients, built by finish_round
//   staged_row(p, i, row)                       staged tensor i's row
//   add_sums(round, sums, in, held, stats)      one pack's part of round `round`'s sums
//   finish_round(round, total, stats, p)        the row's (cluster-wide) sums -> stats
//   needs_round(round, stats)  (optional)       false: skip round `round` (> 0) and those after
//                                               it for this row; stats are built from sums
//                                               that are bitwise the same in every thread of
//                                               the row's team and cluster, so all agree
//   store_out(p, row, col, in, held, stats, acc)  the output pack(s) at (row, col) (y; y and
//                                               h; dx); acc[g * V + e] += gradient g of its
//                                               element e
//   col_grad(p, g)                              where column gradient g goes
//
// Layout: one 512-thread block per SM (a persistent grid). A team of kTeam threads (a warp up to
// the whole block) owns one row at a time, so a block works on 16 to 1 rows at once; rows wider
// than a block holds (16384 bf16 at 4 packs per thread, 32768 at 8) go to a cluster of 2, 4 or 8
// blocks, each block's two teams of 256 threads (KBENCH_CLUSTER_TEAM) on two rows (whole-block
// teams in a cluster of 8 beyond), block `rank` a contiguous slice of each. Thread `lane` of a team
// stages packs lane, lane + kTeam, ... (kPacks of them; coalesced) of every staged tensor with
// async copies, kStages rows deep. Each thread stages and reads only its own packs, so no barrier
// guards the staged rows. A row's sums are a team reduction and, in a cluster, a sum over its
// blocks through distributed shared memory (cluster.h); each team waits only for its own threads (a
// named barrier), so one team computes while another waits for its sums. At the end of a backward
// the teams fold their column gradients together and each block writes one fp32 partial row (its
// slice, in a cluster) per gradient to the workspace; finalize_partial_rows (partials.h) adds them,
// deterministic. One block per SM keeps those partial rows few: 132 N-wide rows on an H100, against
// 264-528 with smaller blocks, which measured 3-5 points of the copy ceiling lower.
//
// Shared memory per block: kStages x kStaged tensors x kPacks x 512 threads x 16 bytes, kStages
// as many as fit 200 KB (at most 4): at 4 packs, 4 stages of one tensor, 3 of two (192 KB), 2
// of three; at 8 packs, 3 of one.
// A row needs a whole number of 16-byte packs and 16-byte aligned rows (the vector path);
// launchers send other rows to their register kernels.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "harness/registry.h"
#include "kernels/common/async_copy.h"
#include "kernels/common/cluster.h"
#include "kernels/common/compat.h"
#include "kernels/common/launch.h"
#include "kernels/common/partials.h"
#include "kernels/common/reduce.h"
#include "kernels/common/row_layout.h"
#include "kernels/common/staged_config.h"
#include "kernels/common/vec.h"

namespace kbench::staged_rows {

template <class Op, class Config, int kStages>
__global__ void __launch_bounds__(kBlock, 1) staged_rows_kernel(typename Op::Params p, float* partials) {
  constexpr int kTeam = Config::kTeam;
  constexpr int kCluster = Config::kCluster;
  constexpr int kPacks = Config::kPacks;
  using T = typename Op::Type;
  constexpr int V = Vec16<T>::kSize;
  constexpr int S = Op::kStaged;
  constexpr int kTeams = kBlock / kTeam;
  using Sums = typename Op::Sums;  // float2 or float4
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  extern __shared__ int4 stages[];  // [kStages][S][kPacks][kBlock]
  __shared__ Sums scratch[2][kBlock / kWarpSize];
  __shared__ ClusterSums<kCluster, Sums, kTeams> cluster_sums;

  const int team = static_cast<int>(threadIdx.x) / kTeam;
  const int lane = static_cast<int>(threadIdx.x) % kTeam;
  const int rank = cluster_rank<kCluster>();
  const int64_t cluster = blockIdx.x / kCluster;
  const int64_t clusters = gridDim.x / kCluster;
  const int packs = static_cast<int>(p.cols / V);
  const int slice = static_cast<int>(ceil_div(packs, kCluster));
  const int slice_end = min(packs, (rank + 1) * slice);
  const auto pack_of = [&](int k) { return rank * slice + k * kTeam + lane; };
  const auto slot = [&](int stage, int i, int k) {
    return stages + ((stage * S + i) * kPacks + k) * kBlock + threadIdx.x;
  };
  bool valid[kPacks];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) valid[k] = pack_of(k) < slice_end;

  // One batch of async copies per row: this thread's packs of every staged tensor. A row past
  // the end makes an empty batch, so every step waits for the same batch count.
  const auto stage_row = [&](int64_t row, int stage) {
    if (row < p.rows) {
#pragma unroll
      for (int i = 0; i < S; ++i) {
        const T* src = Op::staged_row(p, i, row);
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
          if (valid[k]) async_copy16(slot(stage, i, k), src + static_cast<int64_t>(pack_of(k)) * V);
        }
      }
    }
    async_commit();
  };
  const auto staged_pack = [&](int stage, int k, Vec16<T> (&in)[S]) {
#pragma unroll
    for (int i = 0; i < S; ++i) *reinterpret_cast<int4*>(&in[i]) = *slot(stage, i, k);
  };

  typename Op::Held held[kPacks];
  constexpr int kAccRows = Op::kColGrads > 0 ? Op::kColGrads : 1;  // forwards accumulate nothing
  float acc[kPacks][kAccRows * V];  // column gradient g of pack k's element e at [k][g * V + e]
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    if (valid[k]) held[k] = Op::hold(p, static_cast<int64_t>(pack_of(k)) * V);
#pragma unroll
    for (int e = 0; e < kAccRows * V; ++e) acc[k][e] = 0.f;
  }

  uint32_t sum_calls = 0;
  // The row's sum over the team, then over the cluster. Every thread of the team calls it; the
  // other teams of the block need not (each team waits at its own barrier), but all call it
  // equally often.
  const auto row_sum = [&](Sums v) {
    v = team_reduce_sum<kTeam, kBlock>(v, scratch[sum_calls & 1]);
    if constexpr (kCluster > 1) v = cluster_reduce_sum(v, cluster_sums, rank, team, lane, sum_calls);
    ++sum_calls;
    return v;
  };

  if constexpr (kCluster > 1) {
    cluster_sums_init(cluster_sums);
    cluster_sync();  // every peer has started and set up its mbarriers before any sends to it
  }
  // Team t of cluster c takes rows (c * kTeams + t) + j * row_stride. A ring of kStages row
  // buffers: a team's row j lives in stage j % kStages, and its rows j + 1 .. j + kStages - 1
  // are on the way while j computes.
  const int64_t row_stride = clusters * kTeams;
  const int64_t first_row = cluster * kTeams + team;
#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) stage_row(first_row + j * row_stride, j);
  int stage = 0;
  // Block- and cluster-uniform loop: a team past the last row still joins the row sums.
  for (int64_t step = cluster * kTeams; step < p.rows; step += row_stride) {
    const int64_t row = step + team;
    const bool has_row = row < p.rows;
    const int ahead = stage == 0 ? kStages - 1 : stage - 1;  // (stage + kStages - 1) % kStages
    stage_row(row + (kStages - 1) * row_stride, ahead);
    async_wait<kStages - 1>();  // this thread's copies of `row` have landed

    typename Op::Stats stats;
#pragma unroll
    for (int round = 0; round < Op::kRounds; ++round) {
      if constexpr (requires { Op::needs_round(round, stats); }) {
        if (round > 0 && !Op::needs_round(round, stats)) break;  // the same in the whole cluster
      }
      Sums sums{};
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        if (!valid[k] || !has_row) continue;
        Vec16<T> in[S];
        staged_pack(stage, k, in);
        Op::add_sums(round, sums, in, held[k], stats);
      }
      Op::finish_round(round, row_sum(sums), stats, p);
    }

    if (has_row) {
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        if (!valid[k]) continue;
        Vec16<T> in[S];
        staged_pack(stage, k, in);
        Op::store_out(p, row, static_cast<int64_t>(pack_of(k)) * V, in, held[k], stats, acc[k]);
      }
    }
    stage = stage + 1 == kStages ? 0 : stage + 1;
  }
  allow_next_grid_to_start();  // a backward's finalize (launch_finalize_partial_rows)

  // No block leaves while a peer may still send to it (each waits for all values it is sent,
  // but the last sends should not race the exit either).
  if constexpr (kCluster > 1) cluster_sync();
  if constexpr (Op::kColGrads > 0) {
    // The teams' accumulators into team 0's, through the stage buffers (no copy is in flight
    // any more: the batches left are empty), then this block's partial rows: column gradient
    // g's at row g * clusters + cluster.
    if constexpr (kTeams > 1) {
      static_assert(kBlock / 2 * kPacks * kAccRows * V * sizeof(float) <=
                    size_t{kStages} * S * kPacks * kBlock * sizeof(int4));
      fold_teams<kBlock, kTeam, kPacks, kAccRows * V>(acc, reinterpret_cast<float*>(stages));
    }
    if (team == 0) {
#pragma unroll
      for (int g = 0; g < Op::kColGrads; ++g) {
        float* partial = partials + (g * clusters + cluster) * p.cols;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
          if (valid[k]) {
            store_partial<true, V>(partial, static_cast<int64_t>(pack_of(k)) * V, p.cols, &acc[k][g * V]);
          }
        }
      }
    }
  }
  (void)partials;  // forwards have none
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

// The staged kernels' partial rows: at most one per block per column gradient.
inline size_t workspace_bytes(const Shape& s, int col_grads, int sm_count) {
  return static_cast<size_t>(col_grads) *
         static_cast<size_t>(max_persistent_blocks(s.m, sm_count, kMaxBlocksPerSm)) *
         static_cast<size_t>(s.n) * sizeof(float);
}

// What the device allows, read once per device: clusters (sm_90+) and the shared memory one
// block may opt into.
struct DeviceLimits {
  bool clusters = false;
  size_t shared_bytes = 0;
};
inline DeviceLimits device_limits() {
  static std::atomic<int64_t> cache[64];  // shared bytes * 2 + clusters, + 1 (never 0)
  const int64_t packed = once_per_device(cache, [](int device) {
    int major = 0, shared = 0;
    KB_GPU_CHECK(gpuDeviceGetAttribute(&major, gpuDevAttrComputeCapabilityMajor, device));
    KB_GPU_CHECK(gpuDeviceGetAttribute(&shared, gpuDevAttrMaxSharedMemoryPerBlockOptin, device));
    return (int64_t{shared} << 1 | (KBENCH_HAS_CLUSTERS && major >= 9 ? 1 : 0)) + 1;
  });
  return DeviceLimits{((packed - 1) & 1) != 0, static_cast<size_t>((packed - 1) >> 1)};
}

// Forwards: rows of `packs` packs go to Op's staged kernels, clusters included
// (KBENCH_FORWARD_CLUSTERS=1, the default), or (0, a knob for scripts/ab-flags.sh) only when
// one block holds them (16384 bf16 at 4 packs per thread, 32768 at 8) or they are past
// register capacity (65536 fp32), leaving the rest to the register-row kernels (row_layout.h).
// Those were faster than clusters of one row per block (H100, rmsnorm at 32768 and 65536
// bf16: 88.6 / 85.6% of the copy ceiling against 82.1 / 80.8%), not than two rows per block
// (85.2 against 90.7% at 65536, kernels/rmsnorm/NOTES.md).
#ifndef KBENCH_FORWARD_CLUSTERS
#define KBENCH_FORWARD_CLUSTERS 1
#endif
template <class Op>
bool forward_rows_for_staged(int64_t packs) {
  return KBENCH_FORWARD_CLUSTERS || packs <= int64_t{kBlock} * Op::kPacks ||
         packs > kMaxRegisterRowPacks;
}

// Launches Op's staged kernel and the finalize of its column gradients (if any) and returns
// true, or returns false (launching nothing) when these rows are not for the staged kernels:
// not 16-byte aligned (`aligned`, the caller's check of its tensors), too wide for this
// device, or (a forward) not forward_rows_for_staged. The caller then runs its register
// kernels.
template <class Op>
bool launch_staged(const typename Op::Params& p, bool aligned, const LaunchArgs& a) {
  using T = typename Op::Type;
  const int64_t packs = p.cols / Vec16<T>::kSize;
  if (!aligned) return false;
  if constexpr (Op::kColGrads == 0) {
    if (!forward_rows_for_staged<Op>(packs)) return false;
  } else {
    if (reinterpret_cast<uintptr_t>(a.workspace) % 16 != 0) return false;
    require_workspace(a, workspace_bytes(a.shape, Op::kColGrads, a.sm_count), "staged rows");
  }
  const DeviceLimits limits = device_limits();
  const gpuStream_t stream = stream_of(a);
  float* partials = static_cast<float*>(a.workspace);
  int64_t clusters = 0;
  const bool launched = with_staged_config<kWarpSize, Op::kPacks>(packs, limits.clusters, [&](auto config) {
    using C = decltype(config);
    constexpr int kStages = stages_of(Op::kStaged, C::kPacks);
    constexpr size_t kShared = kStages * stage_bytes(Op::kStaged, C::kPacks);
    if (kShared > limits.shared_bytes) return;
    auto* kernel = staged_rows_kernel<Op, C, kStages>;
    static std::atomic<uint64_t> opted_in{0};  // one per configuration (and Op)
    allow_shared_bytes(reinterpret_cast<const void*>(kernel), kShared, opted_in);
    const int64_t per_sm = std::max(a.sm_count, 1);
    const int64_t row_groups = ceil_div(p.rows, kBlock / C::kTeam);  // a block's teams take a group
    if constexpr (C::kCluster == 1) {
      clusters = std::min(row_groups, per_sm);
      kernel<<<static_cast<int>(clusters), kBlock, kShared, stream>>>(p, partials);
      KB_GPU_CHECK_LAUNCH();
    } else {
      static std::atomic<int64_t> resident_cache[64];  // clusters that fit at once
      const int64_t resident = once_per_device(resident_cache, [&](int) {
        return std::max(1, max_active_clusters(kernel, kBlock, kShared, C::kCluster));
      });
      clusters = std::min<int64_t>({row_groups, resident, per_sm / C::kCluster});
      launch_in_clusters(kernel, static_cast<int>(clusters * C::kCluster), kBlock, kShared,
                         stream, C::kCluster, p, partials);
    }
  });
  if (!launched || clusters == 0) return false;
  if constexpr (Op::kColGrads > 0) {
    launch_finalize_partial_rows<Op::kColGrads>(stream, partials, clusters, p.cols, Op::col_grad(p, 0),
                                                Op::col_grad(p, Op::kColGrads - 1), limits.clusters);
  }
  return true;
}

}  // namespace kbench::staged_rows
