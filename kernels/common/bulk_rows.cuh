// Rows staged in shared memory by bulk copies (kernels/common/bulk_copy.h, sm_90): the skeleton
// of the forwards' `*_bulk_rows` impls (fused_add_rmsnorm v4, layernorm v6, fused_mul_polynorm
// v5), whose rows one block holds at 4 packs per thread.
//
// Each row's staged tensors come into shared memory by one bulk copy each (one instruction,
// issued by one thread), not by a 16-byte cp.async per thread and pack as in the staged
// skeleton (staged_rows.cuh), whose queue of copies was fused_add_rmsnorm's wait there (ncu at
// 4096x8192 bf16 on the H200: MIO throttle 20.7% and LG throttle 7.2% of its samples; here both
// are gone, the wait is long scoreboard on the stores). A block is one team of kTeam threads:
// where the row is a whole number of warps' packs that is not a power of two (3, 5, 6, 7, 10,
// 12 or 14 warps: 3072, 5120, 6144, 7168, 10240, 12288, 14336 bf16 at 4 packs), a team of
// exactly that many ("fitted"); otherwise the smallest of 32-512 that holds the row. 512 / kTeam
// blocks (at least one) share an SM. Each block keeps as many one-row stages as its share of
// 208 KB allows, 2 to 8 (3 at the sweep's bf16 widths with two staged tensors, 6 with one),
// or fewer where the op says so for its 512-thread team (kWholeBlockStages).
// Each thread reads its packs of the row into registers (Op::take, which may store an output at
// once and adds to the row's sums); one barrier per row ends the stage's reads (thread 0 then
// starts the copies of the row that stage holds next) and publishes the warps' sums; then
// Op::store writes the outputs. Full rows (packs == kTeam * Op::kPacks: 1K, 2K, 4K, 8K, 16K bf16
// at 4 packs, and every fitted team's) take a kernel without a branch per pack. Rows of up to
// 512 * Op::kPacks packs (16384 bf16 at 4).
//
// The grid is persistent. A block takes its first groups of rows by its index and, where the op
// asks for it (Op::kClaimedPercent) on teams of 128 threads or more, the last kClaimedPercent of
// the groups one by one from a counter (row_claims.h), so SMs the memory serves faster take more
// of them: ncu counted the SMs of the by-index kernel active for 85 K to 127 K of its 128 K
// cycles at 8192x4096 on the H200. Same run, bf16, three repetitions (means), against the
// by-index kernel at 4K / 5120 / 8K / 12288 / 16K: H200 fused_add_rmsnorm (60%) 95.4 / 96.7 /
// 94.9 / 95.7 / 94.8 against 93.9 / 95.3 / 93.0 / 93.0 / 92.5, fused_mul_polynorm (40%) 98.1 /
// 97.2 at 4K / 8K against 95.8 / 92.5 (fifty-second session); H100 fused_add_rmsnorm 96.5 / 95.7
// / 95.9 / 96.4 / 95.6 against 95.7 / 94.0 / 94.8 / 95.2 / 94.3, fused_mul_polynorm 97.7 / 96.6 /
// 97.2 at 4K / 5120 / 8K against 96.8 / 95.2 / 95.0 (fifty-third). Teams of 32 and 64 (1K, 2K)
// read level or lower with claims, layernorm's kernels 1-8 lower, polynorm's 8-pack 8K rows
// 1.5-2.4 lower (H200; NOTES, fifty-second session).
//
// An Op provides:
//   Type, Params (with rows, cols), Sums (float, float2 or float4), Stats, Held, Kept
//   kStaged                          how many tensors are staged
//   kPacks                           packs per thread (4, or 8 where its registers allow)
//   kSmallestTeam, kLargestTeam,     which rows it takes (others go to the op's staged impl):
//   kFullRowsOnly,                   rows of power-of-two teams below the smallest go to the
//   kLargestFittedTeam               next team; fitted teams up to the largest (0: none)
//   kClaimedPercent                  the percent of groups claimed (0: none; above)
//   kLargestTeamOnFastMemory  (optional)  power-of-two teams past kLargestTeam up to this one
//                                    on GPUs with fast memory only (staged_rows::fast_memory)
//   kClaimsFromTeam  (optional)      the smallest team whose rows are claimed, if not 128
//   kWholeBlockStages  (optional)    at most this many stages for a team of 512 threads (one
//                                    block per SM), where fewer than fit measured faster
//   aligned(p)                       host: every row of every tensor 16-byte aligned
//   staged(p, i)                     tensor i's first element
//   hold(p, col, valid)              what a thread keeps across rows for its pack at col (w)
//   keep_held_packed(held)           keep_packed (vec.h) on each of held's packs, in place: on
//                                    a copy returned from hold, fused_add_rmsnorm's code differs
//   take(p, in, row, col, sums)      the pack's staged values in -> what the thread keeps of
//                                    it until the outputs (and its terms in sums)
//   stats(p, total)                  the row's statistics from the team's sums
//   store(p, row, col, kept, held, stats)
//   kSecondRound                     whether a second round of sums over the kept packs may
//                                    follow (layernorm's variance where one round would lose
//                                    digits); then needs_second_round(stats), add_second(sums,
//                                    kept, stats) and second_stats(p, total, stats)
//
// Same run, % of the copy ceiling, bf16, three repetitions (means), fused_add_rmsnorm's v4
// against v3 at 1K / 2K / 4K / 5120 / 8K / 16K (kernels/rmsnorm/NOTES.md, forty-third session):
//   H200 95.9 / 95.6 / 94.0 / 94.6 / 93.5 / 92.4 against 94.5 / 94.0 / 91.8 / 93.9 / 91.3 / 91.8
//   H100 96.3 / 95.9 / 95.4 / 94.7 / 95.7 / 95.0 against 95.7 / 94.9 / 95.2 / 95.1 / 95.0 / 94.9
// The branch-free kernel for full rows added 0.5 / 0.9 / 0.3 / - / 0.0 / 0.8 on the H200, and
// made the skeleton the faster one for layernorm at 1K-4K (94.5 / 95.3 / 95.0 against v4's 93.1
// / 94.3 / 93.8) and fused_mul_polynorm at 1K-8K (96.3 / 96.9 / 95.4 / 93.0 against 93.9 /
// 93.5 / 92.3 / 92.5); rows that are not full (5120) read 3-4 lower, wider ones 1-4.5 lower
// (NOTES, forty-fifth session). rmsnorm (+0.6 at 1K / 2K, lower from 4K) and polynorm (lower at
// every width) keep their staged impls. A stage of several rows (blocks of 128 or 512 threads
// over teams of 32-256: the knob KBENCH_BULK_MIN_BLOCK, the block's least size) read 1.0-3.0
// lower at 1K-8K on the H200, and L2 evict-first hints on the copies 3-4 lower at every width;
// outputs stored by bulk copies from the stage, and 2 or 8 packs per thread, read lower too
// (NOTES, forty-fourth session). A row's stores deferred past the next row's sums (an mbarrier
// arrive and wait in place of the barrier) and scattered team sums (publish before the barrier,
// one or two shared loads and a butterfly after) each gained 1.5-2.7 at 16K for the ops of two
// or three sums, but lost at 1K-4K and for fused_add_rmsnorm, and did not add (forty-sixth
// session). Fitted teams, same run, H200, bf16, two repetitions (means), fused_add_rmsnorm's v4
// at 3072 / 5120 / 6144 / 7168 / 10240 / 12288 / 14336: 95.5 / 95.1 / 94.1 / 94.6 / 94.8 / 91.3
// / 94.0 against 94.7 / 94.6 / 93.1 / 93.7 / 93.7 / 90.6 / 93.6 on power-of-two teams; the
// other ops' limits are at their policies (NOTES, forty-eighth session).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "harness/registry.h"
#include "kernels/common/bulk_copy.h"
#include "kernels/common/compat.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"
#include "kernels/common/row_claims.h"
#include "kernels/common/staged_rows.cuh"
#include "kernels/common/vec.h"

#ifndef KBENCH_BULK_STAGE_KB
#define KBENCH_BULK_STAGE_KB 208  // an SM's stages in all: 3 of a 16K bf16 row of two tensors
#endif
// Rows of a whole number of warps at Op::kPacks that is not a power of two (5120 bf16: 640 packs,
// 5 warps at 4) on a team of exactly that many threads ("fitted teams"), full, rather than on
// the next power of two's team, whose slots they fill 62-94% of, through the kernel with a
// branch per pack: 1 (the default; teams up to Op::kLargestFittedTeam), 0 never, 2 every
// fitted team whatever the op's limit (knobs for scripts/ab-flags.sh).
#ifndef KBENCH_BULK_FITTED_TEAMS
#define KBENCH_BULK_FITTED_TEAMS 1
#endif
#ifndef KBENCH_BULK_MIN_BLOCK
#define KBENCH_BULK_MIN_BLOCK 32  // 32: a block is one team (one row per stage)
#endif

namespace kbench::bulk_rows {

constexpr int kMaxStages = 8;
constexpr int kThreadsPerSm = 512;
// Claimed groups (row_claims.h) for teams of 128 threads or more (4 blocks per SM or fewer),
// for ops whose kClaimedPercent is not 0; at most 40 claims per SM
// (32768 rows of 1K on 2112 blocks, 60% claimed: fused_add_rmsnorm 86.1 against 96.2, the
// counter's atomics too many), H200, bf16, NOTES (fifty-second session).
constexpr int kClaimsFromTeam = 128;
constexpr int64_t kMostClaimsPerSm = 40;

// The optional members of an Op (the list above), or their defaults.
template <class Op>
constexpr int largest_team_on_fast_memory() {
  if constexpr (requires { Op::kLargestTeamOnFastMemory; }) {
    return std::max(Op::kLargestTeam, Op::kLargestTeamOnFastMemory);
  } else {
    return Op::kLargestTeam;
  }
}
template <class Op>
constexpr int claims_from_team() {
  if constexpr (requires { Op::kClaimsFromTeam; }) {
    return Op::kClaimsFromTeam;
  } else {
    return kClaimsFromTeam;
  }
}

template <class Op, int kTeam>
constexpr int most_stages() {
  if constexpr (requires { Op::kWholeBlockStages; }) {
    return kTeam == kThreadsPerSm ? Op::kWholeBlockStages : kMaxStages;
  } else {
    return kMaxStages;
  }
}

template <class Op, int kTeam, int kBlock, bool kFull, bool kClaims>
__global__ void __launch_bounds__(kBlock, kThreadsPerSm / kBlock)
    bulk_rows_kernel(typename Op::Params p, int stages, RowClaims claims) {
#if KBENCH_BULK_COPY
  using T = typename Op::Type;
  using Sums = typename Op::Sums;
  constexpr int kPacks = Op::kPacks;  // per thread
  constexpr int kRows = kBlock / kTeam;  // rows per stage
  constexpr int kTeamWarps = kTeam / kWarpSize;
  constexpr int kStaged = Op::kStaged;
  constexpr int V = Vec16<T>::kSize;
  extern __shared__ __align__(128) unsigned char stage_memory[];
  __shared__ uint64_t full[kMaxStages];
  __shared__ Sums warp_sums[2][kBlock / kWarpSize];
  __shared__ int64_t stage_groups[kMaxStages];  // a claimed stage's group; -1: the block's end

  const int64_t cols = p.cols;
  const int packs = static_cast<int>(cols / V);
  const uint32_t row_bytes = static_cast<uint32_t>(cols * sizeof(T));
  const uint32_t tensor_bytes = kRows * row_bytes;  // one tensor's rows in a stage
  const int64_t groups = ceil_div(p.rows, kRows);
  const int team = static_cast<int>(threadIdx.x) / kTeam;
  const int lane = static_cast<int>(threadIdx.x) % kTeam;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;

  const auto stage = [&](int s) {
    return stage_memory + static_cast<size_t>(s) * kStaged * tensor_bytes;
  };
  const auto start_copies = [&](int64_t group, int s) {
    const int64_t first = group * kRows;
    const uint32_t bytes =
        static_cast<uint32_t>(p.rows - first < kRows ? p.rows - first : kRows) * row_bytes;
    barrier_expect_bytes(&full[s], kStaged * bytes);
#pragma unroll
    for (int i = 0; i < kStaged; ++i) {
      bulk_copy(stage(s) + i * tensor_bytes, Op::staged(p, i) + first * cols, bytes, &full[s]);
    }
  };
  // A block's groups go by its index (block b: b, b + grid, ...), as every thread computes,
  // up to by_index_end; with kClaims thread 0 claims the rest from the counter and tells the
  // readers through stage_groups, each claim asked one refill ahead so its answer is back when
  // it is used.
  const int64_t by_index_end =
      kClaims && claims.first_claimed < groups ? claims.first_claimed : groups;
  [[maybe_unused]] uint32_t claimed = 0;  // thread 0: the claim asked ahead
  [[maybe_unused]] bool ended = by_index_end == groups;  // thread 0: nothing left to claim
  // Thread 0: stage s's next group, `by_index` while that is the block's by index.
  const auto fill_stage = [&](int s, int64_t by_index) {
    if (by_index < by_index_end) {
      start_copies(by_index, s);
      if constexpr (kClaims) {
        if (!ended && by_index + gridDim.x >= by_index_end) claimed = atomicAdd(claims.counter, 1u);
      }
      return;
    }
    if constexpr (kClaims) {
      const int64_t group = ended ? groups : by_index_end + claimed;
      if (group < groups) {
        claimed = atomicAdd(claims.counter, 1u);
        stage_groups[s] = group;  // published to the readers by the barrier's arrival
        start_copies(group, s);
      } else {
        ended = true;
        stage_groups[s] = -1;
        barrier_expect_bytes(&full[s], 0);  // the phase completes with no copy
      }
    }
  };
  if (threadIdx.x == 0) {
    if constexpr (kClaims) {
      if (blockIdx.x == 0) *claims.clear = 0;  // a later launch's counter
      // A block with no group by index asks its first claim now.
      if (!ended && blockIdx.x >= by_index_end) claimed = atomicAdd(claims.counter, 1u);
    }
    for (int s = 0; s < stages; ++s) barrier_init(&full[s], 1);
    barrier_init_fence();
    for (int s = 0; s < stages; ++s) {
      fill_stage(s, blockIdx.x + static_cast<int64_t>(s) * gridDim.x);
    }
  }
  typename Op::Held held[kPacks];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const int pack = k * kTeam + lane;
    held[k] = Op::hold(p, pack * V, pack < packs);
    Op::keep_held_packed(held[k]);
  }
  __syncthreads();  // the barriers' init

  int s = 0;
  uint32_t phase = 0;
  int parity = 0;
  for (int64_t by_index = blockIdx.x; kClaims || by_index < groups; by_index += gridDim.x) {
    barrier_wait(&full[s], phase);
    int64_t group = by_index;
    if constexpr (kClaims) {
      if (by_index >= by_index_end) {
        group = stage_groups[s];
        if (group < 0) break;
      }
    }
    const int64_t row = group * kRows + team;
    // A stage of one row is always live (group < groups), and a full row (kFull: packs ==
    // kTeam * kPacks) has all its packs: no branch per pack (ncu at 4096x8192 bf16 on the H200
    // counted 0.75 more branch instructions per element with it).
    const bool live = kRows == 1 || row < p.rows;
    const unsigned char* row_stage = stage(s) + team * row_bytes;
    typename Op::Kept kept[kPacks];
    Sums sums{};
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int col = (k * kTeam + lane) * V;
      if (live && (kFull || col < cols)) {
        Vec16<T> in[kStaged];
#pragma unroll
        for (int i = 0; i < kStaged; ++i) {
          in[i] = load_vec(reinterpret_cast<const T*>(row_stage + i * tensor_bytes) + col);
        }
        kept[k] = Op::take(p, in, row, col, sums);
      }
    }
    sums = warp_reduce_sum(sums);
    if constexpr (kTeamWarps > 1) {
      if (threadIdx.x % kWarpSize == 0) warp_sums[parity][warp] = sums;
    }
    __syncthreads();  // the stage is read (and the warps' sums are out)
    if (threadIdx.x == 0) fill_stage(s, by_index + static_cast<int64_t>(stages) * gridDim.x);
    if constexpr (kTeamWarps > 1) {
      sums = Sums{};
#pragma unroll
      for (int i = 0; i < kTeamWarps; ++i) add_to(sums, warp_sums[parity][team * kTeamWarps + i]);
    }
    typename Op::Stats stats = Op::stats(p, sums);
    if constexpr (Op::kSecondRound) {
      // A second round of sums over the kept packs (layernorm's sum (x - mean)^2 for rows whose
      // one-round variance would cancel). Every thread of the team takes the same decision (its
      // totals are bitwise the same), and a team is the block (kRows == 1, launch_bulk_rows
      // asserts it): the barrier is safe.
      if (Op::needs_second_round(stats)) {
        __shared__ Sums round_sums[kTeamWarps];
        Sums second{};
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
          const int col = (k * kTeam + lane) * V;
          if (live && (kFull || col < cols)) Op::add_second(second, kept[k], stats);
        }
        second = warp_reduce_sum(second);
        if constexpr (kTeamWarps > 1) {
          if (threadIdx.x % kWarpSize == 0) round_sums[warp] = second;
          __syncthreads();
          second = Sums{};
#pragma unroll
          for (int i = 0; i < kTeamWarps; ++i) add_to(second, round_sums[i]);
        }
        Op::second_stats(p, second, stats);
      }
    }
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int col = (k * kTeam + lane) * V;
      if (live && (kFull || col < cols)) Op::store(p, row, col, kept[k], held[k], stats);
    }
    parity ^= 1;
    if (++s == stages) {
      s = 0;
      phase ^= 1;
    }
  }
#endif
}

// Launches Op's rows and returns true, or returns false (launching nothing) where the skeleton
// does not apply: unaligned rows, rows past 512 * Op::kPacks packs, devices without bulk
// copies, and rows the op leaves to its staged impl (teams past Op::kLargestTeam, or on fast
// memory past Op::kLargestTeamOnFastMemory, or below Op::kSmallestTeam; rows that are not full
// where Op::kFullRowsOnly).
template <class Op>
bool launch_bulk_rows(const typename Op::Params& p, const LaunchArgs& a) {
  using T = typename Op::Type;
  if (!Op::aligned(p) || !staged_rows::device_limits().clusters) return false;
  const int64_t packs = p.cols / Vec16<T>::kSize;
  const auto launch = [&](auto team) -> bool {
    constexpr int kTeam = decltype(team)::value;
    constexpr int kPacks = Op::kPacks;
    constexpr bool kFitted = !is_power_of_two(kTeam);  // takes its full rows only
    constexpr bool kTaken =
        kFitted ? kTeam <= Op::kLargestFittedTeam || KBENCH_BULK_FITTED_TEAMS == 2
                : kTeam >= Op::kSmallestTeam && kTeam <= largest_team_on_fast_memory<Op>();
    if constexpr (!kTaken) {
      return false;  // another team's rows, or the op's staged impl's
    } else {
      if (!kFitted && kTeam > Op::kLargestTeam && !staged_rows::fast_memory()) return false;
      if (packs > int64_t{kTeam} * kPacks) return false;  // a larger team's row
      const bool full = packs == int64_t{kTeam} * kPacks;
      // (A larger power-of-two team's rows are not full either.)
      if ((Op::kFullRowsOnly || kFitted) && !full) return false;
      constexpr int kBlock = std::max(KBENCH_BULK_MIN_BLOCK, kTeam);
      constexpr int kRows = kBlock / kTeam;
      // (Named here in host code too, which keeps nvcc from calling kSecondRound unreferenced.)
      static_assert(!Op::kSecondRound || kRows == 1, "a second round of sums needs one team per block");
      constexpr int kBlocksPerSm = std::max(1, kThreadsPerSm / kBlock);
      const size_t budget = size_t{KBENCH_BULK_STAGE_KB} * 1024 / kBlocksPerSm;
      const size_t stage_bytes = size_t{Op::kStaged} * kRows * p.cols * sizeof(T);
      const int stages =
          static_cast<int>(std::min<size_t>(most_stages<Op, kTeam>(), budget / stage_bytes));
      if (stages < 2) return false;
      const int64_t groups = ceil_div(p.rows, kRows);
      const int grid = static_cast<int>(
          std::min<int64_t>(groups, int64_t{std::max(a.sm_count, 1)} * kBlocksPerSm));
      const auto run = [&](auto full_rows) {
        constexpr bool kClaims = Op::kClaimedPercent > 0 && kTeam >= claims_from_team<Op>();
        constexpr bool kFullRows = decltype(full_rows)::value;
        const auto kernel = bulk_rows_kernel<Op, kTeam, kBlock, kFullRows, kClaims>;
        static std::atomic<uint64_t> done{0}, carveout{0};
        allow_shared_bytes(reinterpret_cast<const void*>(kernel), budget, done);
        if (kBlocksPerSm > 1) prefer_shared_carveout(reinterpret_cast<const void*>(kernel), carveout);
        const RowClaims claims =
            kClaims ? row_claims_for_launch(groups, grid, Op::kClaimedPercent,
                                            kMostClaimsPerSm * std::max(a.sm_count, 1))
                    : RowClaims{};
        kernel<<<grid, kBlock, stages * stage_bytes, stream_of(a)>>>(p, stages, claims);
      };
      if (full) {
        run(std::true_type{});
      } else if constexpr (!Op::kFullRowsOnly && !kFitted) {
        run(std::false_type{});
      }
      KB_GPU_CHECK_LAUNCH();
      return true;
    }
  };
  using std::integral_constant;
  // The widths in use (3072, 5120, 6144, 7168, 10240, 12288, 14336 bf16 at 4 packs) take fitted
  // teams, not every whole number of warps: each team is a kernel per op and dtype.
  const auto launch_fitted = [&]() -> bool {
    if (!KBENCH_BULK_FITTED_TEAMS || packs % (kWarpSize * Op::kPacks) != 0) return false;
    switch (packs / (kWarpSize * Op::kPacks)) {
      case 3: return launch(integral_constant<int, 3 * kWarpSize>{});
      case 5: return launch(integral_constant<int, 5 * kWarpSize>{});
      case 6: return launch(integral_constant<int, 6 * kWarpSize>{});
      case 7: return launch(integral_constant<int, 7 * kWarpSize>{});
      case 10: return launch(integral_constant<int, 10 * kWarpSize>{});
      case 12: return launch(integral_constant<int, 12 * kWarpSize>{});
      case 14: return launch(integral_constant<int, 14 * kWarpSize>{});
      default: return false;
    }
  };
  return launch_fitted() || launch(integral_constant<int, 32>{}) ||
         launch(integral_constant<int, 64>{}) ||
         launch(integral_constant<int, 128>{}) || launch(integral_constant<int, 256>{}) ||
         launch(integral_constant<int, 512>{});
}

}  // namespace kbench::bulk_rows
