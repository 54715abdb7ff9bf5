// Row kernels with their rows staged in shared memory: while a block computes on row i, its
// next rows are already on the way from HBM (async_copy.h), so the memory never waits for the
// row sums, the barriers or the arithmetic. Registers hold only what lives across rows: the
// thread's columns of w and, in backwards, its fp32 column-gradient accumulators (dw, db).
//
// One skeleton serves norm forwards and backwards; an op plugs in its arithmetic as a policy
// (rmsnorm_bwd_rows.cuh's RmsnormBwdStaged is a complete one):
//   using Type, Params;              element type; the kernel's parameters (rows, cols, eps..)
//   using Sums;                      a round's row sums: float2, float4 or RowSums<8> (reduce.h)
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
//   kRestagesIn<Config>  (optional; ops of one round)  true: in Config's rows the op makes
//                                               an output that needs no row sum (fused_add_
//                                               rmsnorm's h) in the sums pass, where it is
//                                               stored, and keeps it over staged tensor 0's
//                                               pack (restages); there the kernel calls
//   add_sums_restage(round, sums, in, held, stats, p, row, col)  add_sums that also makes that
//                                               output, stores it and returns it, and
//   store_restaged(p, row, col, in, held, stats, acc)  store_out with in[0] that output
//   col_grad(p, g)                              where column gradient g goes (needed only
//                                               where kColGrads > 0)
//   kClusterTeam  (optional)                    threads per row in a block of a cluster, if not
//                                               KBENCH_CLUSTER_TEAM (staged_config.h)
//   kGridRows  (optional)                       rows over several blocks as grid rows (true)
//                                               or clusters (false) where both could run
//                                               them; without it, grid rows only for blocks of
//                                               4 or more teams (grid_rows_for)
//   kFitPacks  (optional)                       false: kPacks per thread even where the row
//                                               fills 3/4 of them or less (with_fitted_packs)
//   kHalfTeams  (optional)                      true: rows of up to 5/8 of a team's packs on
//                                               half the team at 5 packs (with_fitted_packs);
//                                               without it, ops of one staged tensor that fit
//                                               their packs do so (half_teams)
//   kHeldShared  (optional)                     true: Held in shared memory, not registers,
//                                               for rows over several blocks (held_in_shared)
//   SharedHeld, hold_shared(p, col)  (optional) what kHeldShared keeps instead of Held (w as
//                                               floats, converted once); add_sums and store_out
//                                               then take either (shared_held_t)
//   kHeldSharedPacks  (optional)                Held in shared memory also wherever a thread
//                                               holds this many packs or more (held_in_shared)
//   kSplitHeldIn<Config>  (optional)            true: where held_in_shared in Config's rows,
//                                               only SharedHeld (hold_shared) there, RegHeld
//                                               (hold_regs) in registers, joined at each use
//                                               into a Held: join_held(r, s) (splits_held)
//   kHeldInRegsIn<Config>  (optional)           true: Held in registers in Config's rows, even
//                                               where kHeldSharedPacks would put it in shared
//                                               memory (held_in_shared), kept packed at each
//                                               use (converted there, not once into floats
//                                               before the row loop): by keep_packed where
//                                               Held is a Vec16, else keep_held_packed(held)
//   kWidePacks  (optional)                      packs per thread for rows past a 256-thread
//                                               team's kPacks (wide_packs)
//   kWholeBlockFullRows  (optional)             true: rows past a 256-thread team that fill 7/8
//                                               of a whole-block team at kPacks on one block at
//                                               kPacks, not kWidePacks (whole_block_full_rows)
//   kWideRows  (optional)                       true: rows past 3/4 of a whole-block team over
//                                               2-16 blocks of four 128-thread teams, as grid
//                                               rows (staged_config.h's with_wide_rows)
//   kWidePastEight  (optional)                  true: rows past 8 blocks of 128-thread teams
//                                               (kClusterTeam 128) over 10 or 12 of them, as
//                                               grid rows (staged_config.h)
//   kRowInRegs  (optional; forwards)            true: rows one block holds read into registers
//                                               once, their stage refilled after the row's sums
//                                               (KBENCH_ROW_IN_REGS); or per configuration:
//                                               kRowInRegsIn<Config>
//   kPipelinedRowInRegsIn<Config>  (optional; forwards)  true: the same for Config's pipelined
//                                               rows over several blocks, two rows in registers
//                                               (KBENCH_PIPELINED_ROW_IN_REGS)
//   kFiveBlocks  (optional)                     true: rows that fill 7/8 of 5 blocks at kPacks
//                                               over those 5, not 8 (staged_config.h's
//                                               with_five_blocks)
//   kTenOrTwelveBlocks  (optional)              true: rows that fill 7/8 of 10 or 12 blocks of
//                                               256-thread teams at kClusterPacks over those,
//                                               as grid rows (staged_config.h's
//                                               with_ten_or_twelve_blocks)
//   kClusterPacks  (optional)                   packs per thread for rows over 8 blocks that
//                                               fill more than 3/4 of them (the three-tensor
//                                               backwards: 2, so 4 stages fit, not 2)
//   kFullRowsKeepPacks  (optional)              true: rows that fill 7/8 or more of 8 blocks at
//                                               kPacks keep them, not kClusterPacks
//   kOneBlockStages  (optional)                 at most this many stages for rows one block
//                                               holds, if not kOneBlockMaxStages (staged_config.h)
//   kBlocksPerSm  (optional)                    a forward's rows one block holds on this many
//                                               blocks per SM where they fit (blocks_per_sm)
//   kSplitRows  (optional)                      true: rows up to twice a whole-block team's
//                                               packs on one block at twice the packs, the row
//                                               over two stages (staged_config.h's kSplitRows)
//   kScatterFold  (optional; backwards)         true: the teams' column gradients summed with
//                                               the work spread over every team (scatter_fold)
//   kOneSum  (optional)                         true: Sums is a float2 of which only .x is
//                                               used (rmsnorm's forwards; the cluster sends
//                                               move 8 bytes), so the team reduces it plainly
//                                               (team_sum_of)
//   row_total(stats)  (optional)                a float4 per row summed over all rows (polynorm's
//                                               dw and db: scalar gradients); with it
//   finish_totals(p, totals, count, stream, overlap)  host: adds the kernel's `count` float4
//                                               partial totals (one per cluster) into the outputs
//   write_totals(p, total)                      device: the outputs from the totals' sum, where
//                                               the kernel adds them itself (finalizes_in_kernel)
//
// Layout: one 512-thread block per SM (a persistent grid; two for a forward's rows of small
// stages where the op asks, blocks_per_sm). A team of kTeam threads (a warp up to
// the whole block) owns one row at a time, so a block works on 16 to 1 rows at once; rows wider
// than a block holds (16384 bf16 at 4 packs per thread, 32768 at 8) go to a cluster of 2, 4 or 8
// blocks, each block's two teams of 256 threads (KBENCH_CLUSTER_TEAM) on two rows (whole-block
// teams in a cluster of 8 beyond), block `rank` a contiguous slice of each (on a 128-byte line:
// staged_config.h's slice_packs); or, where that puts
// more blocks to work (an H100 holds only 120 blocks as clusters of 4 or 8), to a group of as many
// consecutive plain blocks whose sums meet in global memory instead ("grid rows", grid_sums.h;
// grid_rows_for says for which ops and configurations). Ops with kSplitRows take rows up to twice
// a block's on one block instead, each thread at twice the packs, the row's halves in two
// consecutive stages ("split rows": 32768 bf16 for two staged tensors). Thread `lane` of a team
// stages packs lane, lane + kTeam, ... (kPacks of them; coalesced) of every staged tensor with
// async copies, kStages rows deep. Each thread stages and reads only its own packs, so no barrier
// guards the staged rows. A row's sums are a team reduction and, in a cluster, a sum over its
// blocks through distributed shared memory (cluster.h) or global memory (grid rows); each team
// waits only for its own threads (a named barrier), so one team computes while another waits for
// its sums. In a cluster (or group) the rows are pipelined: a team sends row j + 1's sum to the
// other blocks before it waits for row j's, so the exchange overlaps the next row's arithmetic
// (KBENCH_PIPELINE_ROWS). At the end of a backward
// the teams fold their column gradients together and each block writes one fp32 partial row (its
// slice, in a cluster) per gradient to the workspace; once every block has (a grid barrier), each
// block adds up its share of the columns (finalize_partial_rows_in_block, partials.h;
// finalizes_in_kernel says where a finalize kernel does instead), deterministic. One block per
// SM keeps those partial rows few: 132 N-wide rows on an H100, against 264-528 with smaller
// blocks, which measured 3-5 points of the copy ceiling lower; where each
// block has few rows (so the partial rows are a larger part of the traffic), pairs of blocks
// launched as a cluster fold theirs into one (fold_cluster, launch_folded): 66.
//
// Shared memory per block: kStages x kStaged tensors x kPacks (half of them for split rows, whose
// rows take two stages each: 3 stages of 64 KB, a row and the next one's first half) x 512
// threads x 16 bytes, kStages
// as many as fit 200 KB (at most 4; 6 for rows one block holds, kOneBlockMaxStages): at 4
// packs, 6 stages of one tensor (4 over several blocks), 3 of two (192 KB), 2 of three; at 8
// packs, 3 of one. Rows that fill at most 3/4 of their team's packs take fewer
// packs per thread (staged_config.h's with_fitted_packs: 5120 bf16 at 5 of 8 or 3 of 4, or,
// one staged tensor at 4, 5 on half the team), so smaller stages and more of them; so do rows
// over 8 blocks of ops with kClusterPacks (three staged tensors at 2 packs: 4 stages). Ops
// with kHeldShared add their held values after the stages for rows over several blocks
// (layernorm_bwd's w: 16 KB of floats in 128-thread teams, 16-32 KB of bf16 in wider ones), ops
// with kHeldSharedPacks for rows at that many packs (layernorm's b, or w and b, at 6 or 8
// packs: 4-64 KB, with one stage fewer where they would not fit beside the stages:
// stages_beside_held; kSplitHeldIn keeps the rest, w, in registers).
// A row needs a whole number of 16-byte packs and 16-byte aligned rows (the vector path);
// launchers send other rows to their register kernels.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "harness/registry.h"
#include "kernels/common/async_copy.h"
#include "kernels/common/cluster.h"
#include "kernels/common/compat.h"
#include "kernels/common/grid_sums.h"
#include "kernels/common/launch.h"
#include "kernels/common/memory_class.h"
#include "kernels/common/partials.h"
#include "kernels/common/reduce.h"
#include "kernels/common/row_layout.h"
#include "kernels/common/staged_config.h"
#include "kernels/common/vec.h"

namespace kbench::staged_rows {

// An optional member of an op's policy (the list above), inside a template of Op: Op::kMember
// where the op has one, else `fallback`.
#define KBENCH_POLICY_OPTION(kMember, fallback) \
  [] {                                          \
    if constexpr (requires { Op::kMember; }) {  \
      return Op::kMember;                       \
    } else {                                    \
      return fallback;                          \
    }                                           \
  }()
// The same for a member template of the rows' configuration: Op::kMember<Config>, else `fallback`.
#define KBENCH_POLICY_CONFIG_OPTION(kMember, fallback)        \
  [] {                                                        \
    if constexpr (requires { Op::template kMember<Config>; }) { \
      return Op::template kMember<Config>;                    \
    } else {                                                  \
      return fallback;                                        \
    }                                                         \
  }()

// Threads per row in a block of a cluster: Op::kClusterTeam where the op has one, else
// KBENCH_CLUSTER_TEAM (staged_config.h).
template <class Op>
constexpr int cluster_team() {
  return KBENCH_POLICY_OPTION(kClusterTeam, KBENCH_CLUSTER_TEAM);
}

// May rows over kCluster blocks of kTeams teams, kStages deep, be grid rows (grid_sums.h)
// rather than a hardware cluster, where grid rows put more blocks to work (row_groups_of)? Only
// where the rows are pipelined (the sum through global memory takes longer: a row without a
// next one in flight waits for all of it), and then Op::kGridRows where the op has one, else
// for blocks of 4 or more teams. Same run, H100, bf16, 1024x32768 / 512x65536, % of the copy
// ceiling, grid rows against clusters: with four 128-thread teams per block at least as fast in
// every op (layernorm_bwd 80.7 against 77.3 at 32K, polynorm_bwd 82.5 against 77.0), with two
// 256-thread teams polynorm_bwd 84.0 against 74.8 and polynorm 92.1 against 87.9 at 64K, but
// layernorm 75.5 against 91.1 and rmsnorm_bwd 75.3 against 85.1 at 32K; not pipelined (three
// staged tensors), fused_add_rmsnorm_bwd 73.0 against 84.4 (kernels/rmsnorm/NOTES.md).
template <class Op, int kTeams, int kStages>
constexpr bool grid_rows_for() {
  if constexpr (!KBENCH_PIPELINE_ROWS || kStages < 3) {
    return KBENCH_GRID_ROWS == 2;
  } else if constexpr (requires { Op::kGridRows; }) {
    return Op::kGridRows || KBENCH_GRID_ROWS == 2;
  } else {
    return kTeams >= 4 || KBENCH_GRID_ROWS == 2;
  }
}

// A row's sums over a team: reduce.h's team_reduce_sum, which scatters two or more sums over
// the lanes, or, for ops whose float2 carries one sum (kOneSum), the plain reduction, where the
// compiler drops the unused .y: scattered, the dead sum is reduced too, and rmsnorm's staged
// forward measured -0.3 to -2.0 at 16K / 32K (H200, bf16, eighty-first session).
template <class Op, int kTeam, int kBlock, class V>
__device__ __forceinline__ V team_sum_of(V v, V* scratch) {
  if constexpr (KBENCH_POLICY_OPTION(kOneSum, false)) {
    return team_reduce_sum_plain<kTeam, kBlock>(v, scratch);
  } else {
    return team_reduce_sum<kTeam, kBlock>(v, scratch);
  }
}

// Does Op take wide rows (staged_config.h's with_wide_rows)? Op::kWideRows where it has one.
template <class Op>
constexpr bool takes_wide_rows() {
  return KBENCH_POLICY_OPTION(kWideRows, false);
}
// Does Op take rows past 8 blocks of its 128-thread teams over 10 or 12 of them
// (staged_config.h's kWidePastEight)? Op::kWidePastEight where it has one.
template <class Op>
constexpr bool wide_past_eight() {
  return KBENCH_POLICY_OPTION(kWidePastEight, false);
}
// Does Op take rows that fill 7/8 of 5 blocks over those 5 (staged_config.h's
// with_five_blocks)? Op::kFiveBlocks where it has one.
template <class Op>
constexpr bool five_blocks() {
  return KBENCH_POLICY_OPTION(kFiveBlocks, false);
}
// Does Op take rows that fill 7/8 of 10 or 12 blocks at kClusterPacks over those
// (staged_config.h's with_ten_or_twelve_blocks)? Op::kTenOrTwelveBlocks where it has one.
template <class Op>
constexpr bool ten_or_twelve_blocks() {
  return KBENCH_POLICY_OPTION(kTenOrTwelveBlocks, false);
}

// Packs per thread for rows over several blocks: Op::kClusterPacks where the op has one, else
// Op::kPacks.
template <class Op>
constexpr int cluster_packs() {
  return KBENCH_POLICY_OPTION(kClusterPacks, Op::kPacks);
}

// Packs per thread for rows wider than a 256-thread team holds at Op::kPacks: Op::kWidePacks
// where the op has one (layernorm's forward: 8 packs up to there, 4 beyond), else Op::kPacks.
template <class Op>
constexpr int wide_packs() {
  return KBENCH_POLICY_OPTION(kWidePacks, Op::kPacks);
}

// Does Op keep kPacks for rows that fill 7/8 of a whole-block team at them
// (staged_config.h's KBENCH_WHOLE_BLOCK_FULL_ROWS)? Op::kWholeBlockFullRows where it has one.
template <class Op>
constexpr bool whole_block_full_rows() {
  return KBENCH_POLICY_OPTION(kWholeBlockFullRows, false);
}

// At most how many stages for rows one block holds: Op::kOneBlockStages where the op has one,
// else kOneBlockMaxStages (staged_config.h).
template <class Op>
constexpr int one_block_stages() {
  return KBENCH_POLICY_OPTION(kOneBlockStages, kOneBlockMaxStages);
}

// Do Op's rows that fill 7/8 or more of 8 blocks at kPacks keep them (with_staged_config's
// kFullRowsKeepPacks)? Op::kFullRowsKeepPacks where it has one.
template <class Op>
constexpr bool full_rows_keep_packs() {
  return KBENCH_POLICY_OPTION(kFullRowsKeepPacks, false);
}

// Are a block's teams' column gradients summed with the work spread over every team, each
// writing its share of the partial rows (partials.h's fold_teams_scattered), rather than into
// team 0's, which writes them all (fold_teams)? Where the op opts in (Op::kScatterFold:
// layernorm_bwd) with KBENCH_SCATTER_FOLD 1, the default; 0 never, 2 every backward (knobs
// for scripts/ab-flags.sh). Only where no cluster follows: blocks that fold their partial rows
// over a cluster (kFold > 1) need team 0's for fold_cluster, and in hardware-cluster rows it
// made ptxas spill 4-8 bytes. layernorm_bwd's A/B is at its kScatterFold; rmsnorm_bwd and
// fused_add_rmsnorm_bwd (two teams) measured level so (H200, bf16: -0.1 to +0.2 and -0.1 to
// +0.6; kernels/rmsnorm/NOTES.md, seventy-first session).
#ifndef KBENCH_SCATTER_FOLD
#define KBENCH_SCATTER_FOLD 1
#endif
template <class Op>
__host__ __device__ constexpr bool scatter_fold() {
  return KBENCH_SCATTER_FOLD == 2 ||
         (KBENCH_SCATTER_FOLD == 1 && KBENCH_POLICY_OPTION(kScatterFold, false));
}

// Does Op split rows of up to twice a whole-block team's packs over two stages of one block
// (with_staged_config's kSplitRows)? Op::kSplitRows where it has one and KBENCH_SPLIT_ROWS is 1
// (the default; 0 never, a knob for scripts/ab-flags.sh). Taken by the ops of two staged
// tensors at 4 packs (polynorm_bwd, fused_add_rmsnorm, fused_mul_polynorm: 3 stages of 64 KB);
// three staged tensors would need 288 KB. The one-tensor forwards at 16 packs per thread (w
// converted at each use) and layernorm's (w and b so) measured slower, and rmsnorm_bwd (dw's
// accumulators at 8 packs); layernorm_bwd's dw and db would take 128 registers.
#ifndef KBENCH_SPLIT_ROWS
#define KBENCH_SPLIT_ROWS 1
#endif
template <class Op>
constexpr bool split_rows() {
  return KBENCH_POLICY_OPTION(kSplitRows, false) && KBENCH_SPLIT_ROWS;
}

// The instructions that make v are placed before this point (an empty volatile asm reads v,
// and volatile asms keep their order), so the memory operations after it issue after them.
template <class V>
__device__ __forceinline__ void issue_before_here(const V& v) {
  const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(float)); ++i) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
    asm volatile("" ::"v"(f[i]));
#else
    asm volatile("" ::"f"(f[i]));
#endif
  }
}

// Does Op keep what it holds per column (w) in shared memory, after the stages, rather than in
// registers, for rows over kCluster blocks? Where the op opts in (kHeldShared) and
// KBENCH_HELD_SHARED says so: 1 (the default) for rows over several blocks, 0 never, 2 for all
// rows (knobs for scripts/ab-flags.sh). layernorm_bwd's wide rows spilled 16-40 bytes per
// thread (ptxas) with w in registers and spill nothing so: same run, H100, bf16, 77.5 / 82.0 /
// 72.4% of the copy ceiling at 512x65536 / 1024x32768 / 768x40000 against 75.4 / 81.1 / 69.9;
// for rows one block holds (no spills either way) 2 measured up to 1.8 points slower, and with
// w as floats (SharedHeld) 1-2.5 slower on the H200 at 1024-12288 bf16.
#ifndef KBENCH_HELD_SHARED
#define KBENCH_HELD_SHARED 1
#endif
// Rows one block holds read from their stage into registers once, as soon as they land, and
// the stage refilled with the team's row kStages on once the row's sums are made from those
// registers, so kStages rows are in flight across the row's reduction and stores rather than
// kStages - 1 (8-pack rows: 64 KB more per block). 1 (the default): forwards that opt in
// (kRowInRegs: rmsnorm, polynorm; kRowInRegsIn<Config>: layernorm's 16-bit rows on teams of up
// to 128 threads at 4 or 8 packs); 2: every forward; 0: never (knobs for scripts/ab-flags.sh).
// Same run, H100, % of the copy ceiling, three repetitions, every forward against 0, bf16 at
// 1K-32K: rmsnorm +0.5 to +2.3 (+1.2 to +1.9 in fp16), polynorm +1 to +2.4 at 3072, 4K, 6144,
// 12288, 20480 and 32K, -0.8 at 16K, within 0.5 elsewhere (fp16 +0.3 to +1.3); layernorm +0.5
// to +1.1 at 1K-8K but -0.5 to -1.8 at 3072, 6144, 16K and 20480 (fp16 -5.8 at 5120: 4-20 bytes
// of spills in those kernels); fused_mul_polynorm -0.3 to -1.3, so it does not opt in;
// fused_add_rmsnorm within 0.5. The backwards (2 and 3 staged tensors, column gradients in
// registers) lost 1-6: polynorm_bwd 83.6 against 87.3 at 8K (kernels/rmsnorm/NOTES.md,
// thirty-fifth session). On GPUs with fast memory (fast_memory, below) the ops' kFastMemory
// policies read fewer rows into registers: the H200 lost 1-5 points to some of these.
#ifndef KBENCH_ROW_IN_REGS
#define KBENCH_ROW_IN_REGS 1
#endif
// The same for pipelined rows over several blocks: two rows in registers (the one that waits
// for its sum from the row's other blocks, and the next, whose sum is sent first), and kStages
// rows in flight across the wait and the stores, not kStages - 2. 1 (the default): forwards in
// the configurations they opt in for (kPipelinedRowInRegsIn<Config>); 2: every forward; 0:
// never (knobs for scripts/ab-flags.sh). Same run, H100, bf16, % of the copy ceiling, three
// repetitions, every forward against 0: layernorm +0.8 / +1.2 / +1.9 at 1024x32768 / 512x65536 /
// 683x49152 (4 and 3 packs), polynorm +2.1 at 512x65536 (8 packs), rmsnorm +1.8 / +2.4 at
// 839x40000 / 683x49152 (5 and 6 packs); but with two rows of 8 packs beside w rmsnorm spilled
// 120-132 bytes (79.1-79.5 against 94.0-94.4 at 64K), layernorm's 5-pack rows 152 (68.5-68.6
// against 93.5-94.4 at 40000), polynorm's 5-pack rows lost 2 at 40000, and fused_mul_polynorm
// 0.7-1.7 (kernels/rmsnorm/NOTES.md, thirty-fifth session). With w kept packed beside 8-pack rows
// (held, below) rmsnorm spills 8 bytes there and gains +3.1 (bf16) / +4.2 (fp16) at 64K
// (thirty-sixth session). The backwards' pipelined rows read into registers lost 1-3.5 at
// 40000-64K on the H100 (polynorm_bwd, fused_mul_polynorm_bwd; the others spill), and 3-6 on
// the H200 (polynorm_bwd 71.3 against 77.4 at 512x65536; their rows one block holds -2 to -7;
// fortieth session): forwards only.
#ifndef KBENCH_PIPELINED_ROW_IN_REGS
#define KBENCH_PIPELINED_ROW_IN_REGS 1
#endif
// Where an op splits what it holds (splits_held: layernorm's w in registers, b in shared
// memory), the packs in registers stay packed and are converted at each use. Left alone, the
// compiler converted some of w's packs to floats once, out of the row loop, which takes
// registers: layernorm's fp16 16K kernel (8 packs on 256-thread teams) then spilled 24 bytes
// (128 registers; 119 and no spills so) and ncu read its warps stalled 4.4 cycles per
// instruction on local memory, where bf16's read nothing of the kind. Same run, H100, % of the
// copy ceiling, five repetitions, against 0: fp16 95.2 against 93.4 at 2048x16384 and 93.6
// against 90.6 at 4096x16384; bf16 there +0.4 / -0.4, the 6-pack rows (3072, 6144, 12288) within
// 0.3 in both dtypes (kernels/rmsnorm/NOTES.md, thirty-sixth session). 0: a knob for
// scripts/ab-flags.sh.
#ifndef KBENCH_KEEP_SPLIT_PACKED
#define KBENCH_KEEP_SPLIT_PACKED 1
#endif
// Ops with kHeldSharedPacks keep it there, too, wherever a thread holds that many packs or
// more (layernorm's forward: w and b at 6 or 8 packs, as floats in registers they would take
// 96 or 128), but in the configurations where Op::kHeldInRegsIn<Config> (layernorm's 16-bit
// rows one block holds at 6 or 8 packs on fast memory, kept packed: 48 or 64).
template <class Op, class Config>
constexpr bool kHeldInRegs = KBENCH_POLICY_CONFIG_OPTION(kHeldInRegsIn, false);
template <class Op, class Config>
__host__ __device__ constexpr bool held_in_shared() {
  if constexpr (kHeldInRegs<Op, Config>) return false;
  if constexpr (requires { Op::kHeldSharedPacks; }) {
    if (Config::kPacks >= Op::kHeldSharedPacks) return true;
  }
  if constexpr (requires { Op::kHeldShared; }) {
    return Op::kHeldShared &&
           (KBENCH_HELD_SHARED == 2 || (KBENCH_HELD_SHARED == 1 && Config::kCluster > 1));
  } else {
    return false;
  }
}
// What Op keeps in shared memory where held_in_shared: Op::SharedHeld (made by
// Op::hold_shared) where it has one and a block's fit beside kStages stages in
// kHeldSharedBudget, else Held. (layernorm_bwd's w as floats: converted once, not twice per row.)
constexpr size_t kHeldSharedBudget = 216 * 1024;  // of sm_90's 227 KB per block
// Does Op, in Config's rows, keep only part of it there (Op::SharedHeld), the rest in
// registers (Op::RegHeld)? Op::kSplitHeldIn<Config> where it has one.
template <class Op, class Config>
constexpr bool splits_held = KBENCH_POLICY_CONFIG_OPTION(kSplitHeldIn, false);
// (A variable, not a function: the kernel reads it, and stage_bytes is host-only.)
template <class Op, class Config, int kStages>
constexpr bool kSharedHeldIsOwn = [] {
  if constexpr (requires { Op::template kSplitHeldIn<Config>; }) {
    return splits_held<Op, Config>;  // its SharedHeld is the split's part, Held the whole
  } else if constexpr (requires { typename Op::SharedHeld; }) {
    return kStages * stage_bytes(Op::kStaged, Config::kStagePacks) +
               size_t{Config::kPacks} * Config::kTeam * sizeof(typename Op::SharedHeld) <=
           kHeldSharedBudget;
  } else {
    return false;
  }
}();
// Op::Held, or where kPart the part of it Part<Op> names (named only then: an op may lack it).
template <class Op, bool kPart, template <class> class Part>
struct HeldOr {
  using type = typename Op::Held;
};
template <class Op, template <class> class Part>
struct HeldOr<Op, true, Part> {
  using type = Part<Op>;
};
template <class Op>
using SharedHeldOf = typename Op::SharedHeld;
template <class Op>
using RegHeldOf = typename Op::RegHeld;
template <class Op, class Config, int kStages>
using shared_held_t = typename HeldOr<Op, kSharedHeldIsOwn<Op, Config, kStages>, SharedHeldOf>::type;
// Shared memory of a block of Config's rows: kStages stages, and the held values where
// held_in_shared (one per pack of a team: the block's teams share their columns).
template <class Op, class Config, int kStages>
constexpr size_t staged_shared_bytes() {
  return kStages * stage_bytes(Op::kStaged, Config::kStagePacks) +
         (held_in_shared<Op, Config>()
              ? size_t{Config::kPacks} * Config::kTeam * sizeof(shared_held_t<Op, Config, kStages>)
              : 0);
}

// kStages, or fewer (never under 2) where the held values beside them would pass what a block
// may take (sm_90: 227 KB, less the kernel's own few hundred bytes of sums).
constexpr size_t kBlockSharedLimit = 226 * 1024;
template <class Op, class Config, int kStages>
constexpr int stages_beside_held() {
  if constexpr (kStages > 2 && staged_shared_bytes<Op, Config, kStages>() > kBlockSharedLimit) {
    return stages_beside_held<Op, Config, kStages - 1>();
  } else {
    return kStages;
  }
}

// Does Op fit its packs per thread to the row (with_fitted_packs)? Op::kFitPacks where the op
// has one, else KBENCH_FIT_PACKS.
template <class Op>
constexpr bool fit_packs() {
  return KBENCH_POLICY_OPTION(kFitPacks, KBENCH_FIT_PACKS);
}

// Does Op put rows of up to 5/8 of a team's packs on half the team at 5 packs each
// (with_fitted_packs' kHalfTeams)? Op::kHalfTeams where the op has one, else ops of one staged
// tensor that fit their packs (kFitPacks).
template <class Op>
constexpr bool half_teams() {
  return KBENCH_POLICY_OPTION(kHalfTeams, Op::kStaged == 1 && fit_packs<Op>());
}

// Does Op, in Config's rows, make an output in its sums pass and keep it in place of staged
// tensor 0's pack (kRestagesIn, add_sums_restage, store_restaged)? Then the outputs pass reads
// it rather than making it again.
template <class Op, class Config>
constexpr bool restages = KBENCH_POLICY_CONFIG_OPTION(kRestagesIn, false);

// Does Op sum a float4 per row over all rows (row_total, finish_totals)?
template <class Op>
constexpr bool has_row_totals = requires(const typename Op::Stats& s) { Op::row_total(s); };

// Is Op a forward (no column gradients, no row totals)?
template <class Op>
constexpr bool is_forward = Op::kColGrads == 0 && !has_row_totals<Op>;

// Does Op read Config's rows one block holds into registers once (KBENCH_ROW_IN_REGS)? Forwards
// with Op::kRowInRegsIn<Config>, else Op::kRowInRegs, by the knob. (A variable, not a function:
// the kernel reads it.)
template <class Op>
constexpr bool row_in_regs() {
  return KBENCH_POLICY_OPTION(kRowInRegs, false);
}
template <class Op, class Config>
constexpr bool kReadsRowsIntoRegs =
    opt_in_takes(KBENCH_ROW_IN_REGS, KBENCH_POLICY_CONFIG_OPTION(kRowInRegsIn, row_in_regs<Op>())) &&
    is_forward<Op>;
// Pipelined rows in Config's configuration too (KBENCH_PIPELINED_ROW_IN_REGS)?
// Op::kPipelinedRowInRegsIn<Config> where it has one, by the knob; forwards only.
template <class Op, class Config>
constexpr bool kReadsPipelinedRowsIntoRegs =
    opt_in_takes(KBENCH_PIPELINED_ROW_IN_REGS, KBENCH_POLICY_CONFIG_OPTION(kPipelinedRowInRegsIn, false)) &&
    is_forward<Op>;

// Does Op fit the packs of rows over several blocks (staged_config.h's with_cluster_packs)?
// The forwards that fit their packs; the backwards measured the same or slower so.
template <class Op>
constexpr bool fit_cluster_packs() {
  return fit_packs<Op>() && is_forward<Op>;
}

// Blocks per SM for a forward's rows one block holds in Config (CUDA; 1 on HIP, where
// __launch_bounds__'s second argument means something else and nothing was measured):
// Op::kBlocksPerSm where the op has one, KBENCH_FORWARD_BLOCKS_PER_SM where that is set (a knob
// for scripts/ab-flags.sh: 1 never, 2 every forward), else 1; and only where that many blocks
// fit an SM's shared memory with 2 stages or more each (fits_blocks_per_sm: stages of 48 KB or
// less, so 4-6 packs per thread of one staged tensor, 3 of two). Each block takes 1/n of the
// shared budget and, at n = 2, 64 registers per thread (polynorm's kernels took 62-87): twice
// the warps to issue a row's arithmetic, about as many bytes in flight.
template <class Op, class Config>
constexpr int blocks_per_sm() {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  return 1;
#else
  constexpr int n = KBENCH_FORWARD_BLOCKS_PER_SM ? KBENCH_FORWARD_BLOCKS_PER_SM
                                                 : KBENCH_POLICY_OPTION(kBlocksPerSm, 1);
  if constexpr (n > 1 && Config::kCluster == 1 && is_forward<Op>) {
    constexpr int stages =
        stages_of(Op::kStaged, Config::kStagePacks, one_block_stages<Op>(), kSharedBudget / n);
    constexpr size_t shared = stages * stage_bytes(Op::kStaged, Config::kStagePacks);
    return !held_in_shared<Op, Config>() && fits_blocks_per_sm(shared, n) ? n : 1;
  } else {
    return 1;
  }
#endif
}

// The column gradients of the kFold blocks of a cluster, each on rows of its own, into one
// partial row: rank r collects every block's packs k with k % kFold == r (team 0's, which holds
// its block's after fold_teams), adds them in rank order (deterministic) and writes only those.
// kFold times fewer partial rows to write and for the finalize to read back. `exchange`: the
// stage buffers, kPacks x kAcc x kTeam floats. Every thread of every block of the cluster calls it.
template <int kFold, int kTeam, int kPacks, int kAcc>
__device__ __forceinline__ void fold_cluster(float (&acc)[kPacks][kAcc], float4* exchange, bool holder,
                                             int lane) {
  static_assert(kPacks % kFold == 0 && kAcc % 4 == 0);
  const int rank = cluster_rank<kFold>();
  // Sender q's float4 c of its pack k (k / kFold among its owner's), this lane's: lane fastest.
  const auto slot = [lane](int q, int k, int c) {
    return ((q * (kPacks / kFold) + k / kFold) * (kAcc / 4) + c) * kTeam + lane;
  };
  const auto quad = [&acc](int k, int c) {
    return make_float4(acc[k][4 * c], acc[k][4 * c + 1], acc[k][4 * c + 2], acc[k][4 * c + 3]);
  };
  cluster_sync_shared_only();  // every block of the cluster is done with its stage buffers
  if (holder) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      if (k % kFold == rank) continue;
#pragma unroll
      for (int c = 0; c < kAcc / 4; ++c) store_to_peer(peer_address(exchange + slot(rank, k, c), k % kFold), quad(k, c));
    }
  }
  cluster_sync();  // every block's stores have landed
  if (holder) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      if (k % kFold != rank) continue;
#pragma unroll
      for (int c = 0; c < kAcc / 4; ++c) {
        float4 total = rank == 0 ? quad(k, c) : exchange[slot(0, k, c)];
        for (int q = 1; q < kFold; ++q) add_to(total, q == rank ? quad(k, c) : exchange[slot(q, k, c)]);
        acc[k][4 * c] = total.x;
        acc[k][4 * c + 1] = total.y;
        acc[k][4 * c + 2] = total.z;
        acc[k][4 * c + 3] = total.w;
      }
    }
  }
}

// Does a backward's staged kernel sum its own partial rows (column gradients) or totals, once
// every block has written its own (grid_arrive / grid_wait_all: all blocks resident at once, as
// for grid rows), rather than leave them to a finalize kernel (partials.h, finish_totals)? That
// kernel, launched to overlap the main one's end, still cost 4-6 us a call on the H200: without
// it (dw left unsummed, timing only) layernorm_bwd read 89.7 / 85.2 / 82.8% of the copy ceiling
// at 1K / 16K / 64K bf16 against 83.5 / 79.3 / 75.3, rmsnorm_bwd 94.6 against 86.6 at 1K. In the
// kernel the sum still waits for the last block and a few L2 round trips: same run, H200,
// layernorm_bwd +1.4 to +4.2 at every N (78.8 against 74.6 at 64K), rmsnorm_bwd +0 to +3.1,
// polynorm_bwd -0.5 to +1.8 (kernels/rmsnorm/NOTES.md, fifteenth session).
// KBENCH_INKERNEL_FINALIZE: 1 (the default) every backward but the three-tensor ones
// (fused_add_rmsnorm_bwd, fused_mul_polynorm_bwd) in pipelined rows over several blocks (grid
// rows or clusters), which measured 1-3 points slower so at 32K / 64K; 0 never, 2 always
// (knobs for scripts/ab-flags.sh). Their rows in hardware clusters that are not pipelined
// (fused_mul_polynorm_bwd's rows of 28672-32768 bf16 at 4 packs, 2 stages) sum in the kernel:
// same run, bf16, % of the copy ceiling against the finalize kernel, H200 85.4 / 82.9 against
// 83.3 / 81.9 at 1024x32768 / 1170x28672, H100 90.1 / 88.9 against 88.2 / 88.0; its pipelined
// rows at 512x65536 measured 78.9 against 80.3 in the kernel (H200; twenty-second session,
// kernels/rmsnorm/NOTES.md).
#ifndef KBENCH_INKERNEL_FINALIZE
#define KBENCH_INKERNEL_FINALIZE 1
#endif
template <class Op, int kCluster, bool kGridRows, int kStages>
__host__ __device__ constexpr bool finalizes_in_kernel() {
  if constexpr (is_forward<Op>) {
    return false;  // a forward
  } else {
    constexpr bool kPipelined = pipelines_rows(kCluster, kStages);
    return KBENCH_INKERNEL_FINALIZE == 2 ||
           (KBENCH_INKERNEL_FINALIZE == 1 &&
            (Op::kStaged < 3 || kCluster == 1 || (!kGridRows && !kPipelined)));
  }
}

// kFold > 1 (backwards whose rows fit one block, kCluster = 1): launched in clusters of kFold
// blocks that share one partial row per column gradient (fold_cluster). kGridRows (kCluster >
// 1): the kCluster blocks of a row are consecutive plain blocks, not a hardware cluster, and
// sum through global memory (grid_sums.h, `grid`) instead of distributed shared memory.
template <class Op, class Config, int kStages, int kFold = 1, bool kGridRows = false, int kBlocksPerSm = 1>
__global__ void __launch_bounds__(kBlock, kBlocksPerSm)
    staged_rows_kernel(typename Op::Params p, float* partials, GridSums grid) {
  constexpr int kTeam = Config::kTeam;
  constexpr int kCluster = Config::kCluster;
  constexpr int kPacks = Config::kPacks;
  // Split rows (kSplit = 2): a row's packs k < kStagePacks in one stage, the rest in the next.
  constexpr int kSplit = Config::kSplit;
  constexpr int kStagePacks = Config::kStagePacks;
  using T = typename Op::Type;
  constexpr int V = Vec16<T>::kSize;
  constexpr int S = Op::kStaged;
  constexpr int kTeams = kBlock / kTeam;
  using Sums = typename Op::Sums;
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  static_assert(kSplit == 1 || (kCluster == 1 && kStages > kSplit),
                "a split row and one part ahead");
  static_assert(kFold == 1 || (kCluster == 1 && Op::kColGrads > 0));
  static_assert(!kGridRows || (kCluster > 1 && kTeams <= kGridMaxTeams));
  constexpr bool kHardwareCluster = kCluster > 1 && !kGridRows;
  constexpr bool kFinalizeHere = finalizes_in_kernel<Op, kCluster, kGridRows, kStages>();
  extern __shared__ int4 stages[];  // [kStages][S][kStagePacks][kBlock]
  __shared__ Sums scratch[2][kBlock / kWarpSize];
  // Pipelined rows (KBENCH_PIPELINE_ROWS, staged_config.h): in a cluster, a row's sum is sent
  // before the previous row's is awaited, where a row is staged beyond the two in use.
  constexpr bool kPipelined = pipelines_rows(kCluster, kStages);
  struct NoClusterSums {};
  __shared__ std::conditional_t<!kGridRows, ClusterSums<kCluster, Sums, kTeams, kPipelined ? 8 : 2>,
                                NoClusterSums>
      cluster_sums;

  const int team = static_cast<int>(threadIdx.x) / kTeam;
  const int lane = static_cast<int>(threadIdx.x) % kTeam;
  const int rank = kGridRows ? static_cast<int>(blockIdx.x % kCluster) : cluster_rank<kCluster>();
  const int64_t cluster = blockIdx.x / kCluster;
  const int64_t clusters = gridDim.x / kCluster;
  const int packs = static_cast<int>(p.cols / V);
  const int slice = slice_packs(packs, kCluster);  // block `rank`'s packs of a row
  const int slice_end = min(packs, (rank + 1) * slice);
  const auto pack_of = [&](int k) { return rank * slice + k * kTeam + lane; };
  // Pack k's column, a constant offset from pack 0's (so each pack's address is one too).
  const int64_t first_col = static_cast<int64_t>(pack_of(0)) * V;
  const auto col_of = [&](int k) { return first_col + int64_t{k} * kTeam * V; };
  // This thread's slots of a stage (computed once per row), then tensor i's pack k at a
  // constant offset from them.
  int4* const thread_slots = stages + threadIdx.x;
  const auto stage_slots = [&](int stage) {
    return thread_slots + stage * (S * kStagePacks * kBlock);
  };
  // A row's stage, or (split rows) stages: part h (packs h * kStagePacks ..) in the stage after
  // part h - 1's. (A plain pointer where rows are not split: as a struct, the compiler redid
  // each pack's shared address in its branch.)
  struct SplitSlots {
    const int4* part[kSplit];
  };
  using RowSlots = std::conditional_t<kSplit == 1, const int4*, SplitSlots>;
  const auto row_slots = [&](int stage) {
    if constexpr (kSplit == 1) {
      return stage_slots(stage);
    } else {
      SplitSlots slots;
#pragma unroll
      for (int h = 0; h < kSplit; ++h) {
        slots.part[h] = stage_slots(stage + h < kStages ? stage + h : stage + h - kStages);
      }
      return slots;
    }
  };
  bool valid[kPacks];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) valid[k] = pack_of(k) < slice_end;
  // Does every lane of this thread's warp have its pack k (its last lane does)?
  const int warp_last = lane | (kWarpSize - 1);
  const auto warp_has = [&](int k) { return rank * slice + k * kTeam + warp_last < slice_end; };
  // f(k) for each of this thread's packs that the row has. Where it has them all (the last is
  // valid: pack_of grows with k), without a branch per pack (KBENCH_WHOLE_PACKS): with one, the
  // compiler redid each pack's output address and the op's per-row products in its branch.
  // Config::kWarpWholePacks: only where every lane of the warp has them all.
  // Of split rows, only part `part`'s packs (a std::integral_constant; kSplit: all).
  constexpr std::integral_constant<int, kSplit> kAllParts{};
  const auto for_valid_packs = [&](auto&& f, auto part) {
    constexpr int kPart = decltype(part)::value;
    constexpr int kFirst = kPart == kSplit ? 0 : kPart * kStagePacks;
    constexpr int kEnd = kPart == kSplit ? kPacks : kFirst + kStagePacks;
    if (KBENCH_WHOLE_PACKS && (Config::kWarpWholePacks ? warp_has(kEnd - 1) : valid[kEnd - 1])) {
#pragma unroll
      for (int k = kFirst; k < kEnd; ++k) f(k);
    } else {
#pragma unroll
      for (int k = kFirst; k < kEnd; ++k) {
        if (valid[k]) f(k);
      }
    }
  };

  // One batch of async copies per row (per part of a split row): this thread's packs of every
  // staged tensor. A row past the end makes an empty batch, so every step waits for the same
  // batch count. The copies' addresses are constant offsets from the thread's first slot,
  // converted to a shared address once, and from its first column (KBENCH_SLOT_OFFSETS,
  // staged_config.h).
  // A loop's stage (`in_loop`, std::true_type) is a variable; where the copies carry their L2
  // hint its slots go through per_thread_slot, else ptxas drops the hint's policy (async_copy.h).
  const SharedSlot first_slot = shared_slot(thread_slots);
  const auto stage_part = [&](int64_t row, int part, int stage, auto in_loop) {
    if (row < p.rows) {
      constexpr int kSlotBytes = kBlock * static_cast<int>(sizeof(int4));
      SharedSlot stage_slot = first_slot;
      if constexpr (KBENCH_ASYNC_COPY && KBENCH_ASYNC_EVICT_LAST && KBENCH_SLOT_OFFSETS &&
                    decltype(in_loop)::value) {
        stage_slot = per_thread_slot(first_slot + stage * S * kStagePacks * kSlotBytes);
        stage = 0;  // in stage_slot now
      }
#pragma unroll
      for (int i = 0; i < S; ++i) {
        const T* src = Op::staged_row(p, i, row) + col_of(part * kStagePacks);
#pragma unroll
        for (int k = 0; k < kStagePacks; ++k) {
          const int slot = (stage * S + i) * kStagePacks + k;  // in the thread's slots
          const T* pack_src = src + k * kTeam * V;              // col_of(part * kStagePacks + k)
          const SharedSlot dst = KBENCH_SLOT_OFFSETS ? stage_slot + slot * kSlotBytes
                                                     : shared_slot(thread_slots + slot * kBlock);
          const bool has_pack = valid[part * kStagePacks + k];
          if constexpr (KBENCH_PREDICATED_COPIES) {
            async_copy16_if(has_pack, dst, pack_src);
          } else if (has_pack) {
            async_copy16(dst, pack_src);
          }
        }
      }
    }
    async_commit();
  };
  const auto stage_row = [&](int64_t row, int stage) {  // kSplit 1, in a loop
    stage_part(row, 0, stage, std::true_type{});
  };
  // Tensor i's pack k of a row's stage(s): its slot, for ops that restage. (staged_pack
  // addresses the same slots itself: through this lambda, other ops' kernels compiled to a few
  // instructions more or fewer.)
  const auto pack_slot = [&](RowSlots slots, int i, int k) -> const int4& {
    const int4* part;
    if constexpr (kSplit == 1) {
      part = slots;
    } else {
      part = slots.part[k / kStagePacks];
    }
    return part[(i * kStagePacks + k % kStagePacks) * kBlock];
  };
  const auto staged_pack = [&](RowSlots slots, int k, Vec16<T> (&in)[S]) {
    const int4* part;
    if constexpr (kSplit == 1) {
      part = slots;
    } else {
      part = slots.part[k / kStagePacks];
    }
#pragma unroll
    for (int i = 0; i < S; ++i) {
      *reinterpret_cast<int4*>(&in[i]) = part[(i * kStagePacks + k % kStagePacks) * kBlock];
    }
  };

  // Rows read into registers once, of forwards that do not write back into their stage: rows
  // one block holds in one stage (KBENCH_ROW_IN_REGS), pipelined rows over several blocks
  // (KBENCH_PIPELINED_ROW_IN_REGS; row_regs holds the row that waits for its sum).
  constexpr bool kPipelinedInRegs =
      kReadsPipelinedRowsIntoRegs<Op, Config> && kPipelined && kSplit == 1 && !restages<Op, Config>;
  constexpr bool kRowInRegs =
      (kReadsRowsIntoRegs<Op, Config> && kCluster == 1 && kSplit == 1 && !restages<Op, Config>) ||
      kPipelinedInRegs;
  Vec16<T> row_regs[kRowInRegs ? kPacks : 1][S];
  // Pack k of every staged tensor of the row in `slots` (or in row_regs).
  const auto row_pack = [&](RowSlots slots, int k, Vec16<T> (&in)[S]) {
    if constexpr (kRowInRegs) {
#pragma unroll
      for (int i = 0; i < S; ++i) in[i] = row_regs[k][i];
    } else {
      staged_pack(slots, k, in);
    }
  };
  // The packs of the row in `slots` read into `regs` (row_regs or a next row's), once.
  const auto read_row = [&](RowSlots slots, auto& regs) {
    for_valid_packs([&](int k) { staged_pack(slots, k, regs[k]); }, kAllParts);
  };

  // What the thread holds for its columns (w): in registers, or (held_in_shared) after the
  // stages in shared memory, written by team 0 for all teams as 16-byte slots
  // [pack][slot][lane] (conflict-free reads; SharedHeld may take several).
  // Ops that split it (splits_held) keep Op::RegHeld (from Op::hold_regs) in registers and
  // Op::SharedHeld in shared memory there, joined at each use (Op::join_held) into a Held.
  using Held = typename Op::Held;
  using SharedHeld = shared_held_t<Op, Config, kStages>;
  constexpr bool kHeldShared = held_in_shared<Op, Config>();
  constexpr bool kHeldSplit = kHeldShared && splits_held<Op, Config>;
  using RegHeld = typename HeldOr<Op, kHeldSplit, RegHeldOf>::type;  // what stays in registers
  constexpr int kHeldSlots = static_cast<int>(sizeof(SharedHeld) / sizeof(int4));
  static_assert(!kHeldShared || sizeof(SharedHeld) % sizeof(int4) == 0);
  RegHeld held_regs[kHeldShared && !kHeldSplit ? 1 : kPacks];
  int4* const held_shared = stages + kStages * S * kStagePacks * kBlock;
  const auto held = [&](int k) -> decltype(auto) {
    if constexpr (kHeldShared) {
      SharedHeld h;
#pragma unroll
      for (int q = 0; q < kHeldSlots; ++q) {
        reinterpret_cast<int4*>(&h)[q] = held_shared[(k * kHeldSlots + q) * kTeam + lane];
      }
      if constexpr (kHeldSplit) {
        if constexpr (KBENCH_KEEP_SPLIT_PACKED && std::is_same_v<RegHeld, Vec16<T>>) {
          keep_packed(held_regs[k]);
        }
        return Op::join_held(held_regs[k], h);
      } else {
        return h;
      }
    } else {
      // Held kept packed, converted at each use rather than once into floats before the row
      // loop: a Vec16 (w) in split rows, which hold twice the op's packs, and in 8-pack
      // pipelined rows read into registers two rows beside it (ptxas: 128 registers and spills
      // so in rmsnorm's forward at 16 packs; 120-132 bytes of spills in its pipelined 8-pack
      // rows, 8 so; at 5 and 6 packs, 8 bytes of spills or none, it read 0.3-0.6 slower on the
      // H100); and wherever Op::kHeldInRegsIn<Config> (Op::keep_held_packed where Held is not a
      // Vec16): as floats, layernorm's one-block 8-pack rows spilled 228 bytes, and rmsnorm's
      // warps waited before their first row for w, loaded after the prologue's copies.
      constexpr bool kVec16 = std::is_same_v<Held, Vec16<T>>;
      constexpr bool kWideHeld =
          (kSplit > 1 || (kPipelinedInRegs && kPacks >= 8 && sizeof(T) == 2)) && kVec16;
      if constexpr (kWideHeld || (kHeldInRegs<Op, Config> && kVec16)) {
        keep_packed(held_regs[k]);
      } else if constexpr (kHeldInRegs<Op, Config>) {
        Op::keep_held_packed(held_regs[k]);
      }
      return static_cast<const Held&>(held_regs[k]);
    }
  };
  const auto hold_in_shared = [&](int k) {
    SharedHeld h;
    if constexpr (kSharedHeldIsOwn<Op, Config, kStages>) {
      h = Op::hold_shared(p, col_of(k));
    } else {
      h = Op::hold(p, col_of(k));
    }
#pragma unroll
    for (int q = 0; q < kHeldSlots; ++q) {
      held_shared[(k * kHeldSlots + q) * kTeam + lane] = reinterpret_cast<const int4*>(&h)[q];
    }
  };
  constexpr int kAccRows = Op::kColGrads > 0 ? Op::kColGrads : 1;  // forwards accumulate nothing
  float acc[kPacks][kAccRows * V];  // column gradient g of pack k's element e at [k][g * V + e]
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    if constexpr (kHeldShared) {
      if (valid[k] && team == 0) hold_in_shared(k);
      if constexpr (kHeldSplit) {
        if (valid[k]) held_regs[k] = Op::hold_regs(p, col_of(k));
      }
    } else {
      if (valid[k]) held_regs[k] = Op::hold(p, col_of(k));
    }
#pragma unroll
    for (int e = 0; e < kAccRows * V; ++e) acc[k][e] = 0.f;
  }
  if constexpr (kHeldShared) __syncthreads();

  // Scalar gradients: every thread of a team adds up its rows' (bitwise equal) row_totals.
  float4 totals = make_float4(0.f, 0.f, 0.f, 0.f);

  // Round `round`'s sums of this thread's packs of `row`, staged in `slots` (zero where the
  // team has no row). Ops that restage write their output over tensor 0's packs here (each
  // thread its own slots: no barrier).
  constexpr bool kRestages = restages<Op, Config>;
  static_assert(!kRestages || Op::kRounds == 1);
  const auto pack_sums = [&](int round, RowSlots slots, int64_t row, bool has_row,
                             const typename Op::Stats& stats) {
    Sums sums{};
    if (!has_row) return sums;
    for_valid_packs([&](int k) {
      Vec16<T> in[S];
      row_pack(slots, k, in);
      if constexpr (kRestages) {
        const Vec16<T> out =
            Op::add_sums_restage(round, sums, in, held(k), stats, p, row, col_of(k));
        // This thread's own slot: no other thread reads it.
        const_cast<int4&>(pack_slot(slots, 0, k)) = *reinterpret_cast<const int4*>(&out);
      } else {
        Op::add_sums(round, sums, in, held(k), stats);
      }
    }, kAllParts);
    return sums;
  };
  // The row's outputs (and its share of the gradients) from its stage(s) and stats: of part
  // `part` only, or (kAllParts) of all.
  const auto store_row = [&](int64_t row, RowSlots slots, const typename Op::Stats& stats,
                             auto part) {
    if constexpr (has_row_totals<Op>) {
      if constexpr (decltype(part)::value == kSplit || decltype(part)::value == 0) {
        add_to(totals, Op::row_total(stats));
      }
    }
    for_valid_packs([&](int k) {
      Vec16<T> in[S];
      row_pack(slots, k, in);
      if constexpr (kRestages) {
        Op::store_restaged(p, row, col_of(k), in, held(k), stats, acc[k]);
      } else {
        Op::store_out(p, row, col_of(k), in, held(k), stats, acc[k]);
      }
    }, part);
  };

  // The sum over the row's blocks in two halves: send this block's, wait for all of them
  // (through distributed shared memory in a cluster, global memory in grid rows).
  // (A grid-rows team's slots, from blockIdx and threadIdx rather than held in registers.)
  const auto group_team = [] {
    return static_cast<int>(blockIdx.x / kCluster * kTeams + threadIdx.x / kTeam);
  };
  const auto send_to_row_blocks = [&](const Sums& v, uint32_t call) {
    if constexpr (kGridRows) {
      grid_send_sum<kCluster>(v, grid, group_team(), rank, lane, call);
    } else {
      cluster_send_sum(v, cluster_sums, rank, team, lane, call);
    }
  };
  const auto wait_for_row_blocks = [&](uint32_t call) {
    if constexpr (kGridRows) {
      return grid_wait_sum<kCluster, Sums>(grid, group_team(), call);
    } else {
      return cluster_wait_sum(cluster_sums, team, call);
    }
  };
  // The team's sums of a row: over the team (team_sum_of), then over the row's blocks, each
  // call numbered in `calls`: row_sum does both; pipelined rows split the blocks' part into
  // send_sum (returns the call's number) and, later, wait_for_row_blocks. Every thread of the
  // team calls these; the other teams of the block need not (each team waits at its own
  // barrier), but all make the same calls.
  uint32_t calls = 0;
  const auto send_sum = [&](Sums v) {
    v = team_sum_of<Op, kTeam, kBlock>(v, scratch[calls & 1]);
    send_to_row_blocks(v, calls);
    return calls++;
  };
  const auto row_sum = [&](Sums v) {
    v = team_sum_of<Op, kTeam, kBlock>(v, scratch[calls & 1]);
    if constexpr (kCluster > 1) {
      send_to_row_blocks(v, calls);
      v = wait_for_row_blocks(calls);
    }
    ++calls;
    return v;
  };
  // Rounds after the first, where the op has them and the row needs them.
  const auto later_rounds = [&](RowSlots slots, int64_t row, bool has_row,
                                 typename Op::Stats& stats) {
#pragma unroll
    for (int round = 1; round < Op::kRounds; ++round) {
      if constexpr (requires { Op::needs_round(round, stats); }) {
        if (!Op::needs_round(round, stats)) break;  // the same in the whole cluster
      }
      Op::finish_round(round, row_sum(pack_sums(round, slots, row, has_row, stats)), stats, p);
    }
  };

  if constexpr (kHardwareCluster) {
    cluster_sums_init(cluster_sums);
    cluster_sync();  // every peer has started and set up its mbarriers before any sends to it
  }
  // Rows go in steps of row_stride, one row per team: in a step that all rows fill, team t of
  // cluster c takes row step + c * kTeams + t (a block's teams on consecutive rows). A last,
  // partial step deals its rows over the clusters first (team t of cluster c takes step + t *
  // clusters + c; team_row_of, staged_config.h): dealt as the full steps are, the last step of
  // 4096 rows of 8192 (400 rows for 528 teams) left 32 of 132 SMs without a row. A ring of
  // kStages row buffers: a team's row j lives in stage j % kStages, and its rows j + 1 .. j +
  // kStages - 1 are on the way while j computes. The loops run the same steps in every block (a
  // team without a row in a step still joins the row sums).
  const int64_t row_stride = clusters * kTeams;
  const int own_offset = static_cast<int>(cluster) * kTeams + team;  // a block per SM at most
  const int spread_offset = team * static_cast<int>(clusters) + static_cast<int>(cluster);
  const auto team_row = [&](int64_t step) {
    return team_row_of(step, p.rows, row_stride, own_offset, spread_offset);
  };
  if constexpr (kSplit > 1) {  // split rows: every stage, the first parts
#pragma unroll
    for (int q = 0; q < kStages; ++q) {
      stage_part(team_row(q / kSplit * row_stride), q % kSplit, q, std::false_type{});
    }
  } else {
    constexpr int kAhead = kRowInRegs ? kStages : kStages - 1;
#pragma unroll
    for (int j = 0; j < kAhead; ++j) stage_part(team_row(j * row_stride), 0, j, std::false_type{});
  }
  int stage = 0;
  const auto next_stage = [](int s) { return s + 1 == kStages ? 0 : s + 1; };
  const auto ahead_stage = [](int s) { return s == 0 ? kStages - 1 : s - 1; };  // (s + kStages - 1) % kStages
  if constexpr (kPipelinedInRegs) {
    // As below, each row read into registers (row_regs: row j; next_regs: row j + 1) as soon as
    // it lands and its stage refilled after its sums, so kStages rows are in flight while row j
    // waits for its sum and is written, not kStages - 2.
    const typename Op::Stats no_stats{};
    const auto first_sums = [&](const Vec16<T> (&regs)[kPacks][S], bool has_row) {
      Sums sums{};
      if (has_row) for_valid_packs([&](int k) { Op::add_sums(0, sums, regs[k], held(k), no_stats); }, kAllParts);
      return sums;
    };
    uint32_t row_call = 0;
    if (p.rows > 0) {
      async_wait<kStages - 1>();  // the first row
      const bool has_row = team_row(0) < p.rows;
      if (has_row) read_row(row_slots(0), row_regs);
      const Sums sums = first_sums(row_regs, has_row);
      issue_before_here(sums);
      stage_part(team_row(kStages * row_stride), 0, 0, std::false_type{});
      row_call = send_sum(sums);
    }
    for (int64_t step = 0; step < p.rows; step += row_stride) {
      const int64_t row = team_row(step);
      const bool has_row = row < p.rows;
      const int next = next_stage(stage);
      uint32_t next_call = 0;
      Vec16<T> next_regs[kPacks][S];
      if (step + row_stride < p.rows) {
        async_wait<kStages - 1>();  // this thread's copies of the next step's row have landed
        const int64_t next_row = team_row(step + row_stride);
        const bool has_next = next_row < p.rows;
        if (has_next) read_row(row_slots(next), next_regs);
        const Sums sums = first_sums(next_regs, has_next);
        issue_before_here(sums);
        stage_row(team_row(step + (kStages + 1) * row_stride), next);
        next_call = send_sum(sums);
      }
      const RowSlots slots = row_slots(stage);
      typename Op::Stats stats;
      Op::finish_round(0, wait_for_row_blocks(row_call), stats, p);
      later_rounds(slots, row, has_row, stats);
      if (has_row) store_row(row, slots, stats, kAllParts);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
#pragma unroll
        for (int i = 0; i < S; ++i) row_regs[k][i] = next_regs[k][i];
      }
      row_call = next_call;
      stage = next;
    }
  } else if constexpr (kPipelined) {
    // Row j's first-round sum travels over the cluster while the team sums row j + 1: its sum
    // is sent before row j's is awaited. Row j + 1 must have landed by then, so kStages - 2 rows
    // are in flight rather than kStages - 1.
    const typename Op::Stats no_stats{};
    uint32_t row_call = 0;
    if (p.rows > 0) {
      async_wait<kStages - 2>();  // the first row
      row_call = send_sum(pack_sums(0, row_slots(0), team_row(0), team_row(0) < p.rows, no_stats));
    }
    for (int64_t step = 0; step < p.rows; step += row_stride) {
      const int64_t row = team_row(step);
      const bool has_row = row < p.rows;
      const int next = next_stage(stage);
      stage_row(team_row(step + (kStages - 1) * row_stride), ahead_stage(stage));
      uint32_t next_call = 0;
      if (step + row_stride < p.rows) {
        async_wait<kStages - 2>();  // this thread's copies of the next step's row have landed
        const int64_t next_row = team_row(step + row_stride);
        next_call = send_sum(pack_sums(0, row_slots(next), next_row, next_row < p.rows, no_stats));
      }
      const RowSlots slots = row_slots(stage);
      typename Op::Stats stats;
      Op::finish_round(0, wait_for_row_blocks(row_call), stats, p);
      later_rounds(slots, row, has_row, stats);
      if (has_row) store_row(row, slots, stats, kAllParts);
      row_call = next_call;
      stage = next;
    }
  } else if constexpr (kSplit > 1) {
    // Split rows: part q of the team's row sequence (row q / kSplit's part q % kSplit) in stage
    // q % kStages. A row's parts all land before its sums; each part's stage is refilled, with
    // the part kStages later, as soon as its outputs are written: kStages - kSplit parts are in
    // flight while the row is summed.
    const auto stage_ahead = [&](int64_t step, int part, int stage) {
      const int ahead = part + kStages;  // parts after this row's first
      stage_part(team_row(step + ahead / kSplit * row_stride), ahead % kSplit, stage,
                 std::true_type{});
    };
    static_assert(kSplit == 2, "two parts per row below");
    for (int64_t step = 0; step < p.rows; step += row_stride) {
      const int64_t row = team_row(step);
      const bool has_row = row < p.rows;
      async_wait<kStages - kSplit>();  // this thread's copies of every part of `row` have landed
      const RowSlots slots = row_slots(stage);
      typename Op::Stats stats;
      Op::finish_round(0, row_sum(pack_sums(0, slots, row, has_row, stats)), stats, p);
      later_rounds(slots, row, has_row, stats);
      if (has_row) store_row(row, slots, stats, std::integral_constant<int, 0>{});
      stage_ahead(step, 0, stage);
      if (has_row) store_row(row, slots, stats, std::integral_constant<int, 1>{});
      stage_ahead(step, 1, next_stage(stage));
      stage = next_stage(next_stage(stage));
    }
  } else if constexpr (kRowInRegs) {
    // Row j read into registers as soon as it lands; its sums made from them, then its stage
    // refilled with row j + kStages (the sums read every register first: a warp issues in
    // order, so the reads are done before the copies that overwrite their slots start).
    for (int64_t step = 0; step < p.rows; step += row_stride) {
      const int64_t row = team_row(step);
      const bool has_row = row < p.rows;
      async_wait<kStages - 1>();  // this thread's copies of `row` have landed
      const RowSlots slots = row_slots(stage);
      if (has_row) read_row(slots, row_regs);
      typename Op::Stats stats;
      const Sums sums = pack_sums(0, slots, row, has_row, stats);
      issue_before_here(sums);
      stage_row(team_row(step + kStages * row_stride), stage);
      Op::finish_round(0, row_sum(sums), stats, p);
      later_rounds(slots, row, has_row, stats);
      if (has_row) store_row(row, slots, stats, kAllParts);
      stage = next_stage(stage);
    }
  } else {
    for (int64_t step = 0; step < p.rows; step += row_stride) {
      const int64_t row = team_row(step);
      const bool has_row = row < p.rows;
      stage_row(team_row(step + (kStages - 1) * row_stride), ahead_stage(stage));
      async_wait<kStages - 1>();  // this thread's copies of `row` have landed

      const RowSlots slots = row_slots(stage);
      typename Op::Stats stats;
      Op::finish_round(0, row_sum(pack_sums(0, slots, row, has_row, stats)), stats, p);
      later_rounds(slots, row, has_row, stats);
      if (has_row) store_row(row, slots, stats, kAllParts);
      stage = next_stage(stage);
    }
  }
  allow_next_grid_to_start();  // a backward's finalize (launch_finalize_partial_rows)

  // No block leaves while a peer may still send to it (each waits for all values it is sent,
  // but the last sends should not race the exit either).
  if constexpr (kHardwareCluster) cluster_sync();
  if constexpr (Op::kColGrads > 0) {
    // The teams' accumulators into team 0's (or, scattered, each team's share of them), through
    // the stage buffers (no copy is in flight any more: the batches left are empty), then this
    // block's partial rows: column gradient g's at row g * groups + group, one row per cluster
    // (a row's blocks each hold a slice of it, or kFold blocks fold theirs together).
    constexpr int kGroup = kCluster > 1 ? kCluster : kFold;
    const int64_t groups = gridDim.x / kGroup;
    const int64_t group = blockIdx.x / kGroup;
    constexpr int kUnits = kPacks * kAccRows * V / 4;  // fold_teams_scattered's float4s a thread
    constexpr bool kScattered = kTeams > 1 && kFold == 1 && !kHardwareCluster &&
                                scatter_fold<Op>() &&
                                kUnits <= kStages * S * kStagePacks;  // its exchange fits
    if constexpr (kScattered) {
      // Each team writes the units it owns: float4 c of pack k, of column gradient 4c / V.
      const auto store_unit = [&](int u, float4 sum) {
        constexpr int kQuads = kAccRows * V / 4;
        const int k = u / kQuads, c = u % kQuads;
        if (valid[k]) {
          float* partial = partials + (4 * c / V * groups + group) * p.cols;
          store_partial<true, 4>(partial, col_of(k) + 4 * c % V, p.cols, &sum.x);
        }
      };
      fold_teams_scattered<kBlock, kTeam, kPacks, kAccRows * V>(acc, reinterpret_cast<float4*>(stages),
                                                                store_unit);
    } else if constexpr (kTeams > 1) {
      static_assert(kBlock / 2 * kPacks * kAccRows * V * sizeof(float) <=
                    size_t{kStages} * S * kStagePacks * kBlock * sizeof(int4));
      fold_teams<kBlock, kTeam, kPacks, kAccRows * V, true>(acc, reinterpret_cast<float*>(stages));
    }
    if constexpr (kFold > 1) {
      constexpr int kAcc = kAccRows * V;
      static_assert(size_t{kPacks} * kAcc * kTeam * sizeof(float) <=
                    size_t{kStages} * S * kStagePacks * kBlock * sizeof(int4));
      fold_cluster<kFold, kTeam, kPacks>(acc, reinterpret_cast<float4*>(stages), team == 0, lane);
    }
    const int fold_rank = cluster_rank<kFold>();
    if (!kScattered && team == 0) {  // (fold_teams_scattered wrote its own)
#pragma unroll
      for (int g = 0; g < Op::kColGrads; ++g) {
        float* partial = partials + (g * groups + group) * p.cols;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
          if (valid[k] && k % kFold == fold_rank) {
            store_partial<true, V>(partial, col_of(k), p.cols, &acc[k][g * V]);
          }
        }
      }
    }
  }
  if constexpr (Op::kColGrads > 0 && kFinalizeHere) {
    // Every block's partial rows, then this block's columns of their sum (the stages: scratch).
    constexpr int kGroup = kCluster > 1 ? kCluster : kFold;
    grid_arrive(grid);
    grid_wait_all(grid);
    finalize_partial_rows_in_block<Op::kColGrads>(partials, gridDim.x / kGroup, p.cols,
                                                  Op::col_grad(p, 0), Op::col_grad(p, Op::kColGrads - 1),
                                                  reinterpret_cast<float4*>(stages));
  }
  if constexpr (has_row_totals<Op>) {
    // The teams' totals in a fixed order; rank 0 writes the cluster's (every rank's teams saw
    // the same rows and bitwise the same sums).
    __shared__ float4 team_totals[kTeams];
    if (lane == 0) team_totals[team] = totals;
    __syncthreads();
    if (threadIdx.x == 0 && rank == 0) {
      for (int t = 1; t < kTeams; ++t) add_to(totals, team_totals[t]);
      reinterpret_cast<float4*>(partials)[cluster] = totals;
    }
    if constexpr (kFinalizeHere) {
      // Block 0 adds every cluster's totals (a fixed order) once all have written theirs.
      grid_arrive(grid);
      if (blockIdx.x == 0) {
        grid_wait_all(grid);
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int64_t c = threadIdx.x; c < clusters; c += kBlock) {
          add_to(sum, reinterpret_cast<const float4*>(partials)[c]);
        }
        sum = team_reduce_sum_plain<kBlock, 0>(sum, reinterpret_cast<float4*>(stages));
        if (threadIdx.x == 0) Op::write_totals(p, sum);
      }
    }
  }
  (void)partials;  // forwards have none
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

// The staged kernels' partial rows: at most one per block per column gradient; or (row_totals)
// one float4 per block.
inline size_t workspace_bytes(const Shape& s, int col_grads, int sm_count) {
  return static_cast<size_t>(col_grads) *
         static_cast<size_t>(max_persistent_blocks(s.m, sm_count, kMaxBlocksPerSm)) *
         static_cast<size_t>(s.n) * sizeof(float);
}
inline size_t totals_workspace_bytes(const Shape& s, int sm_count) {
  return static_cast<size_t>(max_persistent_blocks(s.m, sm_count, kMaxBlocksPerSm)) * 16;
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

// Does this GPU take the forwards' policies for fast memory (memory_class.h: 16 bytes per SM
// clock or more, or KBENCH_FAST_MEMORY)? The ops that differ pick their policy through it
// (launch_staged_for_memory, below: rmsnorm, layernorm, polynorm and their kFastMemory). The
// environment is read once per process, not at each (timed) launch.
inline bool fast_memory() {
  static const std::optional<bool> forced = fast_memory_override();
  if (forced) return *forced;
  static std::atomic<int64_t> cache[64];  // 2: fast, 1: not (0: not asked yet)
  return once_per_device(cache, [](int device) -> int64_t {
    int memory_khz = 0, bus_bits = 0, sm_khz = 0, sms = 0;
    KB_GPU_CHECK(gpuDeviceGetAttribute(&memory_khz, gpuDevAttrMemoryClockRate, device));
    KB_GPU_CHECK(gpuDeviceGetAttribute(&bus_bits, gpuDevAttrGlobalMemoryBusWidth, device));
    KB_GPU_CHECK(gpuDeviceGetAttribute(&sm_khz, gpuDevAttrClockRate, device));
    KB_GPU_CHECK(gpuDeviceGetAttribute(&sms, gpuDevAttrMultiProcessorCount, device));
    return is_fast_memory(memory_bytes_per_sm_clock(memory_khz, bus_bits, sm_khz, sms)) ? 2 : 1;
  }) == 2;
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

// The GridSums of a launch that is not grid rows (whose kernels take grid_sums_for_launch's):
// slots and an epoch where the kernel sums its own partial rows (grid_arrive), else none.
template <class Op, int kCluster, int kStages>
GridSums sums_for_launch() {
  return finalizes_in_kernel<Op, kCluster, false, kStages>() ? grid_sums_for_launch() : GridSums{};
}

// Backwards whose rows fit one block: clusters of KBENCH_FOLD_PARTIALS blocks (1: none, a knob
// for scripts/ab-flags.sh) that fold their column gradients into one partial row
// (fold_cluster), where each of the `blocks` takes at most kFoldMaxRows rows and such clusters
// fill all but at most kFold - 1 of the SMs. Returns false, launching nothing, where not; else
// `partial_rows` gets the partial rows per column gradient.
//
// Measured on the H100 (bf16, M * N = 32M, % of the copy ceiling, folds of 2 against none): at
// N = 16384 (15.5 rows per block) rmsnorm_bwd 85.2 -> 87.2, fused_add_rmsnorm_bwd 85.2 -> 88.3,
// layernorm_bwd 76.6 -> 80.7; at 8192 (31 rows) -0.1 to +0.9; at 5120 (50 rows) -1.0 to 0 and
// at 1024 (248 rows) -0.6 to 0, where the partial rows are a small part of the traffic. Folds of
// 4 leave 4 of 132 SMs idle, so they are not taken there.
#ifndef KBENCH_FOLD_PARTIALS
#define KBENCH_FOLD_PARTIALS 2
#endif
template <class Op, class C, int kStages>
bool launch_folded(const typename Op::Params& p, float* partials, const GridSums& grid, int64_t blocks,
                   const DeviceLimits& limits, gpuStream_t stream, int64_t& partial_rows) {
  constexpr int kFold = KBENCH_FOLD_PARTIALS;
  if constexpr (kFold == 1 || Op::kColGrads == 0 || !KBENCH_HAS_CLUSTERS || C::kPacks % kFold != 0) {
    (void)p, (void)partials, (void)grid, (void)blocks, (void)limits, (void)stream, (void)partial_rows;
    return false;
  } else {
    constexpr int64_t kFoldMaxRows = 32;
    if (!limits.clusters || blocks < 2 * kFold || p.rows > kFoldMaxRows * blocks) return false;
    constexpr size_t kShared = staged_shared_bytes<Op, C, kStages>();
    auto* kernel = staged_rows_kernel<Op, C, kStages, kFold>;
    static std::atomic<uint64_t> opted_in{0};
    allow_shared_bytes(reinterpret_cast<const void*>(kernel), kShared, opted_in);
    static std::atomic<int64_t> resident_cache[64];  // clusters that fit at once
    const int64_t resident = once_per_device(resident_cache, [&](int) {
      return std::max(1, max_active_clusters(kernel, kBlock, kShared, kFold));
    });
    if ((resident + 1) * kFold <= blocks) return false;  // kFold or more SMs would idle
    partial_rows = std::min(ceil_div(blocks, kFold), resident);
    launch_in_clusters(kernel, static_cast<int>(partial_rows * kFold), kBlock, kShared, stream,
                       kFold, p, partials, grid);
    return true;
  }
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
  static_assert(Op::kColGrads == 0 || !has_row_totals<Op>, "one kind of gradient workspace");
  if constexpr (is_forward<Op>) {
    if (!forward_rows_for_staged<Op>(packs)) return false;
  } else {
    if (reinterpret_cast<uintptr_t>(a.workspace) % 16 != 0) return false;
    require_workspace(a, Op::kColGrads > 0 ? workspace_bytes(a.shape, Op::kColGrads, a.sm_count)
                                           : totals_workspace_bytes(a.shape, a.sm_count),
                      "staged rows");
  }
  const DeviceLimits limits = device_limits();
  const gpuStream_t stream = stream_of(a);
  float* partials = static_cast<float*>(a.workspace);
  int64_t clusters = 0;
  bool finalized = false;  // by the kernel itself (finalizes_in_kernel)
  // Rows over several blocks: hardware clusters or grid rows (row_groups_of).
  const bool multi_block_rows = limits.clusters || KBENCH_GRID_ROWS != 0;
  const bool launched =
      with_staged_config<kWarpSize, Op::kPacks, cluster_team<Op>(), fit_packs<Op>(), cluster_packs<Op>(),
                         half_teams<Op>(), takes_wide_rows<Op>(), full_rows_keep_packs<Op>(),
                         split_rows<Op>(), wide_packs<Op>(), fit_cluster_packs<Op>(),
                         wide_past_eight<Op>(), five_blocks<Op>(), ten_or_twelve_blocks<Op>(),
                         whole_block_full_rows<Op>()>(
      packs, multi_block_rows, [&](auto config) {
    using C = decltype(config);
    constexpr int kMostStages = C::kCluster > 1 ? kMaxStages : one_block_stages<Op>();
    constexpr int kPerSm = blocks_per_sm<Op, C>();
    constexpr int kStages = stages_beside_held<
        Op, C, stages_of(Op::kStaged, C::kStagePacks, kMostStages, kSharedBudget / kPerSm)>();
    constexpr size_t kShared = staged_shared_bytes<Op, C, kStages>();
    if (kShared > limits.shared_bytes) return;
    const int64_t per_sm = std::max(a.sm_count, 1);
    const int64_t row_groups = ceil_div(p.rows, kBlock / C::kTeam);  // a block's teams take a group
    if constexpr (C::kCluster == 1) {
      auto* kernel = staged_rows_kernel<Op, C, kStages, 1, false, kPerSm>;
      static std::atomic<uint64_t> opted_in{0};  // one per configuration (and Op)
      allow_shared_bytes(reinterpret_cast<const void*>(kernel), kShared, opted_in);
      if constexpr (kPerSm > 1) {
        static std::atomic<uint64_t> carved_out{0};
        prefer_shared_carveout(reinterpret_cast<const void*>(kernel), carved_out);
      }
      const int64_t blocks = std::min({row_groups, per_sm * kPerSm, kOneBlockRowsMaxBlocks});
      finalized = finalizes_in_kernel<Op, 1, false, kStages>();
      const GridSums grid = sums_for_launch<Op, 1, kStages>();
      if (!launch_folded<Op, C, kStages>(p, partials, grid, blocks, limits, stream, clusters)) {
        clusters = blocks;
        kernel<<<static_cast<int>(clusters), kBlock, kShared, stream>>>(p, partials, grid);
        KB_GPU_CHECK_LAUNCH();
      }
    } else {
      // Hardware clusters hold at most 8 blocks (portably); wider groups are grid rows only.
      constexpr bool kMayCluster = C::kCluster <= kMaxClusterBlocks;
      int64_t resident = 0;  // hardware clusters that fit at once (none without clusters)
      if constexpr (kMayCluster) {
        if (limits.clusters) {
          auto* kernel = staged_rows_kernel<Op, C, kStages>;
          static std::atomic<uint64_t> opted_in{0};
          allow_shared_bytes(reinterpret_cast<const void*>(kernel), kShared, opted_in);
          static std::atomic<int64_t> resident_cache[64];
          resident = once_per_device(resident_cache, [&](int) {
            return std::max(1, max_active_clusters(kernel, kBlock, kShared, C::kCluster));
          });
        }
      }
      constexpr bool kMayGridRows = grid_rows_for<Op, kBlock / C::kTeam, kStages>();
      const RowGroups groups =
          row_groups_of(row_groups, resident, a.sm_count, C::kCluster,
                        kMayGridRows ? KBENCH_GRID_ROWS : 0);
      clusters = groups.groups;
      const int blocks = static_cast<int>(clusters * C::kCluster);
      if (clusters == 0) return;
      if (groups.grid_rows) {  // never without kMayGridRows (mode 0)
        if constexpr (kMayGridRows) {
          finalized = finalizes_in_kernel<Op, C::kCluster, true, kStages>();
          // At most one block per SM (row_groups_of), so the blocks of a group run at once.
          static_assert(kGridRowsMaxBlocks <= kGridMaxBlocks);
          auto* grid_kernel = staged_rows_kernel<Op, C, kStages, 1, true>;
          static std::atomic<uint64_t> grid_opted_in{0};
          allow_shared_bytes(reinterpret_cast<const void*>(grid_kernel), kShared, grid_opted_in);
          grid_kernel<<<blocks, kBlock, kShared, stream>>>(p, partials, grid_sums_for_launch());
          KB_GPU_CHECK_LAUNCH();
        }
      } else if constexpr (kMayCluster) {
        finalized = finalizes_in_kernel<Op, C::kCluster, false, kStages>();
        auto* kernel = staged_rows_kernel<Op, C, kStages>;
        launch_in_clusters(kernel, blocks, kBlock, kShared, stream, C::kCluster, p, partials,
                           sums_for_launch<Op, C::kCluster, kStages>());
      }
    }
  });
  if (!launched || clusters == 0) return false;
  if constexpr (Op::kColGrads > 0) {
    if (!finalized) {
      launch_finalize_partial_rows<Op::kColGrads>(stream, partials, clusters, p.cols, Op::col_grad(p, 0),
                                                  Op::col_grad(p, Op::kColGrads - 1), limits.clusters);
    }
  }
  if constexpr (has_row_totals<Op>) {
    if (!finalized) {
      Op::finish_totals(p, static_cast<const float4*>(a.workspace), clusters, stream, limits.clusters);
    }
  }
  return true;
}

// launch_staged with the policy for this GPU's memory (fast_memory): FastOp where it is fast,
// else Op. For the forwards whose policies differ by GPU (rmsnorm, layernorm, polynorm).
template <class Op, class FastOp>
bool launch_staged_for_memory(const typename Op::Params& p, bool aligned, const LaunchArgs& a) {
  return fast_memory() ? launch_staged<FastOp>(p, aligned, a) : launch_staged<Op>(p, aligned, a);
}

}  // namespace kbench::staged_rows
