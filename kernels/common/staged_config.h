// The shape choices of the staged-row kernels (staged_rows.cuh): block size, packs per thread,
// how many rows fit shared memory, and which team or cluster takes a row of a given width.
// Plain C++, so the unit tests check them without a GPU (tests/unit/test_staged_config.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace kbench::staged_rows {

// Rows in flight per team: this one and the next kStages - 1, as many as fit kSharedBudget, at
// most KBENCH_MAX_STAGES (a knob for scripts/ab-flags.sh; 2 measured 1-4 points slower) for
// rows over several blocks, KBENCH_ONE_BLOCK_STAGES (below) for rows one block holds.
#ifndef KBENCH_MAX_STAGES
#define KBENCH_MAX_STAGES 4
#endif
// Threads per row in a block of a cluster (a knob for scripts/ab-flags.sh): 256, two rows per
// block at a time, each over twice the blocks; 512, one row per block. 256 measured 8-13
// points of the copy ceiling faster at 32768 and 65536 bf16 in every staged op (H100,
// kernels/rmsnorm/NOTES.md): while one team waits for its row's sums from the other blocks,
// the other team computes.
#ifndef KBENCH_CLUSTER_TEAM
#define KBENCH_CLUSTER_TEAM 256
#endif
// 16-byte packs per thread per staged tensor in forwards of one staged tensor (x): 8 gives
// each block 64 KB of x per step and holds a 32768-bf16 row in one block; 4 elsewhere (a
// backward's fp32 column gradients live in registers, 4 x 8 per gradient; two staged tensors
// at 8 would leave room for only 1 stage). A knob for scripts/ab-flags.sh.
#ifndef KBENCH_FORWARD_PACKS
#define KBENCH_FORWARD_PACKS 8
#endif
// Rows that fill at most 3/4 of their team's packs take fewer packs per thread (1, the
// default; an op may opt out), so smaller stages and more of them. A knob for
// scripts/ab-flags.sh: 0 never. Measured on the H100 at 5120 bf16 (640 packs; % of the copy
// ceiling, fitted against not): rmsnorm 95.4-96.1 -> 99.2-99.5 (H200: 89.3-89.4 -> 92.3-93.1),
// rmsnorm_bwd +1, the two-input forwards +0.5; polynorm_bwd -1.8 and polynorm -0.5, and
// layernorm -7 on the H200, so those opt out; the rest within 0.5. Backward rows at 3 packs
// are not folded (fold_cluster splits packs in pairs): 12288 bf16, say.
#ifndef KBENCH_FIT_PACKS
#define KBENCH_FIT_PACKS 1
#endif
// The async copies that stage a row addressed as constant offsets from the thread's first
// slot, converted to a shared address once (1, the default), or each converted anew (0, a knob
// for scripts/ab-flags.sh): 27 instructions fewer per row in polynorm_bwd's loop. Same run,
// bf16: H200 polynorm_bwd +1.1 to +1.8 at 2K-16K, fused_mul_polynorm_bwd +1.6 / +2.8 at 32K /
// 64K; H100 forwards mixed (polynorm -0.5 to -0.8 at 2K-16K, fused_mul_polynorm +0.2 to +0.9;
// kernels/rmsnorm/NOTES.md, eleventh session).
#ifndef KBENCH_SLOT_OFFSETS
#define KBENCH_SLOT_OFFSETS 1
#endif
// Each async copy predicated inside its asm statement (1, the default; async_copy16_if), or
// guarded by a branch (0, a knob for scripts/ab-flags.sh): with the branches the compiler redid
// each copy's address arithmetic in its branch, ~8 instructions per copy (cuobjdump, sm_90).
#ifndef KBENCH_PREDICATED_COPIES
#define KBENCH_PREDICATED_COPIES 1
#endif
// A row's packs summed and stored without a branch per pack where the thread has them all (1,
// the default; staged_rows.cuh's for_valid_packs), or each behind its own branch (0, a knob
// for scripts/ab-flags.sh).
#ifndef KBENCH_WHOLE_PACKS
#define KBENCH_WHOLE_PACKS 1
#endif
constexpr int kBlock = 512;  // threads per block, one block per SM
constexpr int kMaxClusterBlocks = 8;  // a portable hardware cluster's blocks
constexpr int kPackBytes = 16;
constexpr int kForwardPacks = KBENCH_FORWARD_PACKS;
constexpr int kPacks = 4;  // everywhere else
constexpr int kMaxStages = KBENCH_MAX_STAGES;
constexpr size_t kSharedBudget = 200 * 1024;  // of sm_90's 227 KB per SM
constexpr int kMaxBlocksPerSm = 1;            // bounds a backward's partial rows
// Rows over a cluster, pipelined (1, the default; 0 never, a knob for scripts/ab-flags.sh): a
// team sends row j + 1's sum to the cluster before it waits for row j's, so the exchange over
// distributed shared memory overlaps the next row's arithmetic; one row fewer is in flight
// (taken only where at least 3 stages fit). Same run, H100, bf16, 32768 / 65536, % of the copy
// ceiling, pipelined against not: polynorm_bwd 77.3 / 75.0 against 73.3 / 66.6, rmsnorm_bwd
// 85.3 / 85.4 against 82.1 / 83.7, fused_mul_polynorm 92.2 / 92.2 against 88.5 / 90.0,
// layernorm_bwd 79.8 / 77.9 against 78.7 / 76.2; the others +0 to +3. The same for a team's
// warps through mbarriers (rows one block holds, no cluster) measured 1-6 points slower for
// most ops and was dropped (kernels/rmsnorm/NOTES.md, eighth session).
#ifndef KBENCH_PIPELINE_ROWS
#define KBENCH_PIPELINE_ROWS 1
#endif

// Rows over several blocks as groups of plain blocks that sum through global memory ("grid
// rows", grid_sums.h), rather than hardware clusters that sum through distributed shared
// memory: 1 (the default) where that puts more blocks to work than the clusters that fit at
// once (an H100 holds 30 clusters of 4 and 15 of 8 of these blocks: 120 SMs, against 33 groups
// of 4 on 132 SMs and 16 of 8 on 128) and the op's rows may take them (staged_rows.cuh's
// grid_rows_for), 0 never, 2 always (knobs for scripts/ab-flags.sh).
#ifndef KBENCH_GRID_ROWS
#define KBENCH_GRID_ROWS 1
#endif
constexpr int64_t kGridRowsMaxBlocks = 1024;  // grid_sums.h's slots hold this many

// Rows one block holds: up to KBENCH_ONE_BLOCK_STAGES stages (a knob for scripts/ab-flags.sh),
// so stages of 32-40 KB (one staged tensor at 4 or 5 packs) are 5 or 6 deep, not 4; an op may
// opt out (staged_rows.cuh's one_block_stages). Same run, bf16, % of the copy ceiling, two
// repetitions, 6 against 4: H200 rmsnorm 95.6 / 95.8 against 93.7 / 93.5 at 32768x1024,
// layernorm +1 to +2 at 1K-4K, -0.5 to +0.4 at 5120-16K; H100 rmsnorm +1.8 at 1K and +2.4 at
// 65536x512, layernorm +1.1 and +2.2 there, -0.6 to +0.6 elsewhere; polynorm -3.4 at 65536x512
// on the H100 (so it opts out), +-0.4 at 1K on both.
#ifndef KBENCH_ONE_BLOCK_STAGES
#define KBENCH_ONE_BLOCK_STAGES 6
#endif
constexpr int kOneBlockMaxStages = KBENCH_ONE_BLOCK_STAGES;

// At most this many blocks for rows one block holds (a lab knob for scripts/ab-flags.sh; 0, the
// default: one per SM). The forwards' rows over clusters of 4 or 8 blocks run on 120-128 of 132
// SMs (the clusters that fit at once); capping rows one block holds at 120 blocks measures what
// 12 idle SMs cost where nothing else changes: same run, H200, rmsnorm v5 bf16 at 1K-32K, two
// repetitions, 2.9-4.5 points of the copy ceiling (91.3 against 95.4 at 4096x8192;
// kernels/rmsnorm/NOTES.md, twenty-eighth session).
#ifndef KBENCH_MAX_BLOCKS
#define KBENCH_MAX_BLOCKS 0
#endif
constexpr int64_t kOneBlockRowsMaxBlocks = KBENCH_MAX_BLOCKS > 0 ? KBENCH_MAX_BLOCKS : INT64_MAX;

// A last, partial step of rows dealt over all blocks (1, the default), not to the first blocks'
// teams in turn (0; a knob for scripts/ab-flags.sh; team_row_of below).
#ifndef KBENCH_SPREAD_LAST_STEP
#define KBENCH_SPREAD_LAST_STEP 1
#endif

// Blocks per SM for forwards' rows one block holds, for every forward (a knob for
// scripts/ab-flags.sh: 1 never, 2 every forward where they fit), or 0: each op's
// (staged_rows.cuh's blocks_per_sm).
#ifndef KBENCH_FORWARD_BLOCKS_PER_SM
#define KBENCH_FORWARD_BLOCKS_PER_SM 0
#endif
constexpr size_t kSmSharedBytes = 228 * 1024;  // sm_90's shared memory per SM
// Beside each block's stages: the 1 KB the hardware keeps per block and the kernel's own sums.
constexpr size_t kBlockSharedExtra = 3 * 1024;
// Do n blocks of `shared` bytes of stages each fit one SM?
constexpr bool fits_blocks_per_sm(size_t shared, int n) {
  return static_cast<size_t>(n) * (shared + kBlockSharedExtra) <= kSmSharedBytes;
}

// Callable from the kernels as well as from host code and the unit tests.
#if defined(__CUDACC__) || defined(__HIP__)
#define KBENCH_HOST_DEVICE __host__ __device__
#else
#define KBENCH_HOST_DEVICE
#endif

// Packs of a row per block of a row over `cluster` blocks (block `rank` takes packs rank *
// slice .. (rank + 1) * slice - 1 of those the row has): ceil(packs / cluster) rounded up to
// KBENCH_SLICE_ALIGN packs (8, the default: 128 bytes, so every slice starts on a cache line,
// the row itself does where N * sizeof(T) is a multiple of 128; 1, a knob for
// scripts/ab-flags.sh: not rounded). Never more than a block's slots where ceil(packs / cluster)
// is not (those are multiples of 8 packs); the last blocks may get fewer packs, or none.
// Unaligned, a warp's 512 contiguous bytes span five lines, not four: 40000 bf16 is 5000 packs,
// 1250 per block of 4, 625 of 8. Same run, bf16, % of the copy ceiling, means of three
// repetitions, 839x40000, aligned against not: H200 rmsnorm 86.6 / 83.6, layernorm 79.3 / 74.2,
// fused_add_rmsnorm 90.4 / 84.5, polynorm 76.0 / 75.6, fused_mul_polynorm 80.2 / 73.3,
// rmsnorm_bwd 84.2 / 73.5, fused_add_rmsnorm_bwd 86.2 / 74.9, polynorm_bwd 64.0 / 60.3,
// fused_mul_polynorm_bwd 72.5 / 67.7, layernorm_bwd 66.2 / 64.9 (10 blocks in both); H100
// (with layernorm_bwd's groups of 10, against 8-block clusters unaligned): rmsnorm 93.1 / 91.2,
// layernorm 91.1 / 86.3, fused_add_rmsnorm 92.2 / 87.2, polynorm 90.0 / 86.7, fused_mul_polynorm
// 89.9 / 83.6, rmsnorm_bwd 87.3 / 81.2, fused_add_rmsnorm_bwd 87.2 / 81.0, polynorm_bwd 78.9 /
// 74.9, fused_mul_polynorm_bwd 78.7 / 75.3, layernorm_bwd 77.3 / 75.9. Rows whose slices were
// aligned already (every power of two from 1024 on) run as before: rmsnorm at 512x65536 93.7 /
// 93.9, layernorm_bwd at 2048x16384 and 512x65536 within 0.5 (H100; kernels/rmsnorm/NOTES.md,
// twenty-ninth session).
#ifndef KBENCH_SLICE_ALIGN
#define KBENCH_SLICE_ALIGN 8
#endif
KBENCH_HOST_DEVICE constexpr int slice_packs(int packs, int cluster) {
  const int slice = (packs + cluster - 1) / cluster;
  if (cluster == 1) return slice;
  return (slice + KBENCH_SLICE_ALIGN - 1) / KBENCH_SLICE_ALIGN * KBENCH_SLICE_ALIGN;
}

// Whether rows over `cluster` blocks with `stages` stages are pipelined (KBENCH_PIPELINE_ROWS).
KBENCH_HOST_DEVICE constexpr bool pipelines_rows(int cluster, int stages) {
  return KBENCH_PIPELINE_ROWS && cluster > 1 && stages >= 3;
}

// The row a team takes in the step of rows step .. step + row_stride - 1 (staged_rows.cuh's
// loops; row_stride = row groups x teams per group; a row at or past `rows` is none). In a step
// the rows fill, a group's teams take consecutive rows (own_offset = group * teams + team); in
// a last, partial step the rows are dealt over the groups first (spread_offset = team * groups
// + group), so every SM takes its share of them rather than the first groups all of them.
// (32-bit offsets: as 64-bit ones, rmsnorm's forward at 8 packs spilled.)
KBENCH_HOST_DEVICE constexpr int64_t team_row_of(int64_t step, int64_t rows, int64_t row_stride,
                                                 int own_offset, int spread_offset) {
  const bool full = !KBENCH_SPREAD_LAST_STEP || step + row_stride <= rows;
  return step + (full ? own_offset : spread_offset);
}

// Shared memory of one stage (one row per team) of `staged` tensors, `packs` per thread.
constexpr size_t stage_bytes(int staged, int packs) {
  return static_cast<size_t>(staged) * packs * kBlock * kPackBytes;
}

// As many stages as fit the budget, never fewer than 2 (this row and the next), at most `most`
// (kMaxStages; kOneBlockMaxStages for rows one block holds, where the op takes it).
constexpr int stages_of(int staged, int packs, int most = kMaxStages, size_t budget = kSharedBudget) {
  int stages = most;
  while (stages > 2 && stages * stage_bytes(staged, packs) > budget) --stages;
  return stages;
}

// Which blocks take rows over `cluster` blocks, `row_groups` groups of rows at most (a group:
// one row per team of each block): hardware clusters, `resident_clusters` of them at once (0
// where the device has none), or groups of one block per SM summing through global memory,
// whichever puts more blocks to work (`mode`: KBENCH_GRID_ROWS). groups 0: neither can run.
struct RowGroups {
  int64_t groups = 0;
  bool grid_rows = false;
};
constexpr RowGroups row_groups_of(int64_t row_groups, int64_t resident_clusters, int sm_count,
                                  int cluster, int mode = KBENCH_GRID_ROWS) {
  const int64_t sms = sm_count < 1 ? 1 : sm_count;
  const int64_t by_clusters = resident_clusters < sms / cluster ? resident_clusters : sms / cluster;
  const int64_t by_grid = (sms < kGridRowsMaxBlocks ? sms : kGridRowsMaxBlocks) / cluster;
  const bool grid_rows = mode == 2 || (mode == 1 && by_grid > by_clusters);
  const int64_t most = grid_rows ? by_grid : by_clusters;
  return RowGroups{row_groups < most ? row_groups : most, grid_rows};
}

// Does a row of `packs` packs fit `slots` slots and fill 7/8 or more of them? The test for
// taking fewer packs per thread, or fewer blocks, than the rest of a width's rows.
KBENCH_HOST_DEVICE constexpr bool fills_seven_eighths(int64_t packs, int64_t slots) {
  return packs <= slots && 8 * packs >= 7 * slots;
}

template <int kTeam_, int kCluster_, int kPacks_, int kSplit_ = 1, bool kWarpWholePacks_ = false>
struct StagedConfig {
  static constexpr int kTeam = kTeam_;        // threads per row (kBlock / kTeam rows per block)
  static constexpr int kCluster = kCluster_;  // blocks per row
  static constexpr int kPacks = kPacks_;      // packs per thread per staged tensor
  // Stages per row: 1, or 2 for split rows (with_staged_config's kSplitRows): a row one block
  // holds at twice the op's packs, its halves in consecutive stages.
  static constexpr int kSplit = kSplit_;
  static constexpr int kStagePacks = kPacks_ / kSplit_;  // packs per thread per tensor in a stage
  // Whether a thread sums and stores its packs without a branch per pack only where every lane
  // of its warp has all of them (true; staged_rows.cuh's for_valid_packs), or wherever it has
  // them itself (false). Where a warp's lanes differ, the latter runs both paths one after the
  // other in that warp, and the team waits for it at every row: rows over several blocks at
  // 5/8 of the packs (with_cluster_packs) end inside a warp (40000 bf16: 1256 packs a block,
  // lanes 232-255 of 256 one pack short), as do wide rows over 5 or more than 8 blocks
  // (with_wide_rows). Only those configurations set it (and layernorm's 5/8 rows over 4 or 8
  // blocks, with_staged_config): in every kernel it cost elsewhere.
  static constexpr bool kWarpWholePacks = kWarpWholePacks_;
  static_assert(kPacks_ % kSplit_ == 0);
};

// One 512-thread block per SM, kPacks packs per thread (the op's: 4 or 8): teams of a warp (32
// threads, 64 on AMD) to 512 threads per row (16 to 1 rows per block at a time; rows up to
// 512 x kPacks packs: 16384 bf16 at 4), then clusters of 2, 4 or 8 blocks per row with
// kClusterTeam threads of each block on a row (the op's, by default KBENCH_CLUSTER_TEAM: teams
// of 256 at 4 packs hold rows up to 65536 bf16), then teams of 256 and whole blocks in a
// cluster of 8; one block per row at fitted packs (with_fitted_packs, kFit); rows over 8
// blocks that fill more than 3/4 of kClusterPacks per thread (fewer than kPacks) at those. Calls
// f(StagedConfig<...>{}) and returns
// true, or returns false for rows wider than 8 blocks hold (131072 bf16 at 4 packs) or,
// without clusters, than one block holds. One block per SM, not several smaller ones: a
// backward writes one N-wide fp32 partial row per block, and 264 or 528 of them cost 3-5
// points of the copy ceiling against 132 (H100, kernels/rmsnorm/NOTES.md); several rows per
// block keep as many rows in flight as several blocks would.
// A row of `packs` packs on one team of kTeam threads at up to kPacks packs each: at 5/8 or 3/4
// of kPacks where that holds it (5120 bf16 at 8 packs: 640 packs, team 128 at 5), so each
// stage is only as large as the row and more stages fit.
// kHalfTeams (staged_rows.cuh's half_teams: layernorm's forward, polynorm_bwd; 4 packs, with
// or without kFit; rows one block holds): first 5 packs on half the team where that holds the
// row (5120 bf16: 640 packs on 128 threads, every slot used, rather than 768 or 1024 slots on
// 256).
// kWide (ops with kWideRows): rows past 3/4 of a whole-block team as with_wide_rows.
template <int kTeam, int kPacks, bool kFit, bool kHalfTeams = false, class F>
void with_fitted_packs(int64_t packs, F&& f) {
  constexpr int kFive = kPacks * 5 / 8;
  constexpr int kSix = kPacks * 3 / 4;
  if constexpr (kHalfTeams && kPacks == 4 && kTeam >= 128) {  // half: a warp on AMD too
    if (packs <= kTeam / 2 * 5) return f(StagedConfig<kTeam / 2, 1, 5>{});
  }
  const int64_t needed = (packs + kTeam - 1) / kTeam;
  if constexpr (kFit && kFive > kPacks / 2) {
    if (needed <= kFive) return f(StagedConfig<kTeam, 1, kFive>{});
  }
  if constexpr (kFit && kSix > kPacks / 2 && kSix > kFive) {
    if (needed <= kSix) return f(StagedConfig<kTeam, 1, kSix>{});
  }
  f(StagedConfig<kTeam, 1, kPacks>{});
}

// Rows over kCluster blocks of kTeam-thread teams at 3/4 of kPacks where the row fills 7/8 or
// more of those slots, also at 5/8 where it fills 7/8 of those (2, the default, for ops that
// ask: kFitClusters, the forwards), 3/4 only (1), or at kPacks (0; knobs for
// scripts/ab-flags.sh).
// 49152 bf16 at 8 packs fills 6 exactly on 4 blocks of two 256-thread teams: stages of 48 KB,
// 4 deep, not 64 KB 3 deep. Same run, H200, bf16, % of the copy ceiling, three repetitions, at
// 683x49152 against 8 packs (layernorm's forward 3 against 4): rmsnorm 90.3-91.1 against
// 86.9-87.2, polynorm 84.6-85.1 against 81.2-82.1, layernorm 88.2-88.7 against 86.9-88.0,
// fused_add_rmsnorm and fused_mul_polynorm within 0.5; H100: rmsnorm and polynorm +3 to +3.4 at
// 49152 / 98304, fused_mul_polynorm -0.8 / -0.2 (thirtieth session). At 5/8 (40000 bf16: 5000
// packs on 4 blocks, 98% of 5120 slots; 80000 on 8) the rows end inside a warp, which then ran
// both of for_valid_packs' paths: polynorm 70.3-71.3 against 74.7-77.5 at 839x40000 (H200,
// twenty-ninth and thirty-first sessions). With that warp on the branchy path alone
// (StagedConfig's kWarpWholePacks, only in these configurations: in every kernel it made
// rmsnorm's 8-pack cluster kernels spill 32-52 bytes, 75.4 against 87.3-88.0 at 40000), same
// run, H200, two repetitions, 839x40000 / 419x80000: polynorm 81.4-81.6 / 78.2-78.4 against
// 74.7-76.2 / 74.2-74.3, rmsnorm 89.3-89.6 / 90.0-90.6 against 87.3-88.0 / 87.9-88.3; the other
// ops take no 5-pack rows (kernels/rmsnorm/NOTES.md, thirty-first session). H100, same run, two
// repetitions: polynorm 92.4-92.5 / 90.6-91.3 against 88.8-89.6 / 85.8-87.3, rmsnorm 94.7-95.3 /
// 94.9-95.6 against 92.7-93.0 / 93.7-93.9 (thirty-second session). Rows that fill less keep
// kPacks: layernorm at 3 of 4 (81% of the slots) measured 75.8 against 78.8-79.2 at 839x40000
// (H200), the backwards at 3 of 4 the same or slower (rmsnorm_bwd -1 to -2.7 at 20480-40000).
#ifndef KBENCH_FIT_CLUSTER_PACKS
#define KBENCH_FIT_CLUSTER_PACKS 2
#endif
template <int kTeam, int kCluster, int kPacks, bool kFitClusters,
          int kLevel = KBENCH_FIT_CLUSTER_PACKS, class F>
void with_cluster_packs(int64_t packs, F&& f) {
  constexpr int kFive = kPacks * 5 / 8;
  constexpr int kSix = kPacks * 3 / 4;
  constexpr int64_t kFiveSlots = int64_t{kCluster} * kTeam * kFive;
  constexpr int64_t kSixSlots = int64_t{kCluster} * kTeam * kSix;
  if constexpr (kLevel >= 2 && kFitClusters && kFive > kPacks / 2) {
    if (fills_seven_eighths(packs, kFiveSlots)) {
      return f(StagedConfig<kTeam, kCluster, kFive, 1, true>{});
    }
  }
  if constexpr (kLevel >= 1 && kFitClusters && kSix > kPacks / 2) {
    if (fills_seven_eighths(packs, kSixSlots)) return f(StagedConfig<kTeam, kCluster, kSix>{});
  }
  f(StagedConfig<kTeam, kCluster, kPacks>{});
}

// Wide rows (ops with kWideRows: layernorm_bwd): rows of `packs` packs over the fewest of 2, 4,
// 5, 8, 10, 12 and 16 blocks (kWideMaxBlocks) of four kWideTeam-thread teams at kPacks packs
// each, as grid rows (staged_rows.cuh; groups of more than 8 blocks can only be grid rows). Calls
// f(StagedConfig<...>{}) and returns true, or returns false where the row needs more blocks
// or would fill 3/4 or less of more than 8 blocks' slots (H100, layernorm_bwd at 768x40000,
// 61% of 16 blocks' slots: 70.5% of the copy ceiling against 74.0 in clusters of 8 blocks of
// two 256-thread teams).
constexpr int kWideTeam = 128;
// At most 16 blocks (a knob for scripts/ab-flags.sh): with 8, 65536 bf16 goes to two 256-thread
// teams per block over 8 blocks instead, 15 partial rows instead of 8. Same run, H200, bf16,
// three repetitions, with the in-kernel finalize: 76.8-77.6% of the copy ceiling at 512x65536
// against 79.0-79.6.
#ifndef KBENCH_WIDE_MAX_BLOCKS
#define KBENCH_WIDE_MAX_BLOCKS 16
#endif
// Groups of 5 blocks between 4 and 8, and of 10 and 12 between 8 and 16 (2, the default); 10
// and 12 only (1); 2, 4, 8, 16 only (0; knobs for scripts/ab-flags.sh). Rows of 4097-6144
// packs (32776-49152 bf16) so fill more than 4/5 of their group, not 3/4 or less of 16 blocks
// (which sent them to clusters of 8 blocks of two 256-thread teams). Same run, bf16, % of the
// copy ceiling, three repetitions, layernorm_bwd, with aligned slices (slice_packs above),
// against 0 with unaligned ones: H200 66.2 / 78.4 against 59.2 / 71.4 at 839x40000 / 683x49152
// (10 / 12 blocks), H100 77.3 / 83.7 against 75.9 / 82.0 (twenty-ninth session). Rows of
// 2049-2560 packs (16392-20480 bf16) fill 80-100% of 5 blocks, 50-63% of 8: with the whole-pack
// path decided per warp (KBENCH_WIDE_WARP_PACKS below; 18432 on 5 blocks ends inside warp 2),
// same run, H200, two repetitions, 2 against 1: 72.0-72.1 / 74.4-74.6 against 65.4-65.5 /
// 70.6-70.7 at 1820x18432 / 1638x20480, within 0.5 at 16384 and 32768. Groups of 6 and 7 blocks
// too measured +1.2 at 23040 and +0.5 at 24576 (6), but -3 at 28672 (7): not taken (H200,
// thirty-second session; the twenty-ninth's, without the warp path: 24576 on 6 H100 -1.5).
#ifndef KBENCH_WIDE_MIDDLE_GROUPS
#define KBENCH_WIDE_MIDDLE_GROUPS 2
#endif
constexpr int kWideMaxBlocks = KBENCH_WIDE_MAX_BLOCKS;
// The next group after one of `blocks` blocks: 2, 4, 5, 8, 10, 12, 16 (then past any maximum).
constexpr int next_wide_blocks(int blocks) {
  if (blocks == 4 && KBENCH_WIDE_MIDDLE_GROUPS >= 2) return 5;
  if (blocks == 5) return 8;
  if (blocks < 8 || !KBENCH_WIDE_MIDDLE_GROUPS) return blocks * 2;
  return blocks < 12 ? blocks + 2 : blocks + 4;
}
// Wide rows' whole-pack path decided per warp (StagedConfig's kWarpWholePacks): in groups of 5
// and of more than 8 blocks (1, the default), never (0), in every group (2; knobs for
// scripts/ab-flags.sh). 40000 bf16 on 10 blocks is 504 packs a block, so warp 3 of each team has
// lanes with 4 packs and lanes with 3; per thread, that warp ran both paths in turn. Same run,
// H100, bf16, % of the copy ceiling, two repetitions, 1 against 0: 79.3-79.4 against 77.2-77.4
// at 839x40000, 80.9-81.0 against 77.2-77.3 at 763x44000 (12 blocks), within 0.5 at 49152,
// 16384, 18432 and 1 at 65536, where every lane has all its packs. 2 made the groups of 4 and 8
// blocks spill 4 bytes (kernels/rmsnorm/NOTES.md, thirty-second session).
#ifndef KBENCH_WIDE_WARP_PACKS
#define KBENCH_WIDE_WARP_PACKS 1
#endif
template <int kPacks, int kBlocks = 2, int kMost = kWideMaxBlocks, class F>
bool with_wide_rows(int64_t packs, F&& f) {
  constexpr int64_t kSlots = int64_t{kBlocks} * kWideTeam * kPacks;
  constexpr bool kWarpPacks =
      KBENCH_WIDE_WARP_PACKS >= 2 ||
      (KBENCH_WIDE_WARP_PACKS == 1 && (kBlocks > kMaxClusterBlocks || (kBlocks & (kBlocks - 1))));
  if (packs <= kSlots) {
    if (kBlocks > kMaxClusterBlocks && 4 * packs <= 3 * kSlots) return false;
    return f(StagedConfig<kWideTeam, kBlocks, kPacks, 1, kWarpPacks>{}), true;
  }
  if constexpr (next_wide_blocks(kBlocks) <= kMost) {
    return with_wide_rows<kPacks, next_wide_blocks(kBlocks), kMost>(packs, f);
  } else {
    return false;
  }
}

// kWidePastEight (staged_rows.cuh's wide_past_eight: polynorm_bwd, whose cluster team is 128):
// rows past 8 blocks of 128-thread teams (4097-6144 packs: 32776-49152 bf16) over groups of 10
// or 12 blocks of them, grid rows as with_wide_rows takes, not 8 blocks of two 256-thread
// teams (61-75% of their slots). Same run, bf16, % of the copy ceiling, two repetitions: H200
// 74.0-74.4 / 73.7-73.9 / 76.7 against 63.6-63.7 / 65.6-65.8 / 69.7-70.0 at 839x40000 /
// 763x44000 / 683x49152; H100 81.3-81.4 / 81.8-82.0 against 78.5 / 80.3-80.5, but 82.6-82.9
// against 83.3-83.5 at 49152. Groups of 16 too (KBENCH_WIDE_PAST_EIGHT_MOST=16, a knob for
// scripts/ab-flags.sh): 69.4-69.5 against 63.6-64.4 at 599x56000, but 74.6 against 77.1-77.5
// at 512x65536 (H200; kernels/rmsnorm/NOTES.md, thirty-second session).
#ifndef KBENCH_WIDE_PAST_EIGHT_MOST
#define KBENCH_WIDE_PAST_EIGHT_MOST 12
#endif
//
// kFullRowsKeepPacks (fused_mul_polynorm_bwd): rows that fill 7/8 or more of 8 blocks of
// kClusterTeam threads at kPacks keep kPacks (2 stages, so hardware clusters, not pipelined)
// rather than take kClusterPacks. Same run, bf16, % of the copy ceiling, 4 packs against 2:
// fused_mul_polynorm_bwd at 1024x32768 H200 82.0-82.3 against 78.8-79.4, H100 87.5-88.7
// against 86.5, at 1170x28672 (7/8) H100 87.5-87.6 against 84.3-84.5; but at 1280x25600 (78%)
// H200 59.5-59.6 against 64.9-65.3, H100 78.8-78.9 against 79.5-79.6; fused_add_rmsnorm_bwd (a
// cluster team of 256, so 4 blocks) at 32768 H100 83.9-84.4 against 87.4-87.5. On an H200 that
// holds 15 clusters of 8 (120 SMs; grid rows take 128) the 32K gain was within noise: 77.4-79.9
// against 78.4-79.4 (kernels/rmsnorm/NOTES.md, sixteenth session).
//
// kSplitRows (staged_rows.cuh's split_rows): rows past a whole-block team's packs, up to twice
// them, on one block at 2 x kPacks, the row's halves in two stages of kPacks (kSplit = 2), so
// no sums cross blocks (and no clusters are needed); only for ops whose 3 such stages fit.
// Same run, bf16, % of the copy ceiling, split against rows over several blocks: polynorm_bwd
// at 1024x32768 H200 84.2-84.5 against 78.9-79.2, H100 89.6-90.1 against 85.1-85.7
// (kernels/rmsnorm/NOTES.md, seventeenth session). The same on each of a cluster of 2 blocks,
// for rows up to 4 times a block's (not pipelined: one part ahead), measured 5-18 points
// slower at 44000-65536 bf16 (H200), but for polynorm_bwd at 52000: not taken.
//
// kWidePacks (staged_rows.cuh's wide_packs): rows past a 256-thread team's packs take the
// configurations of kWidePacks packs per thread instead, kClusterPacks with them (layernorm's
// forward: 8 up to there, 4 beyond).
//
// kFitClusters (staged_rows.cuh's fit_cluster_packs: the forwards): rows over a cluster at 3/4
// or 5/8 of the packs where they fill those (with_cluster_packs above).
//
// Rows past a 256-thread team's kPacks that a whole-block team holds at 5/8 of kPacks (layernorm's
// forward: 16392-20480 bf16 at 5 of 8 packs) on one block at those (1, the default), not over a
// cluster of 4 blocks at kWidePacks (0, a knob for scripts/ab-flags.sh). Same run, layernorm,
// % of the copy ceiling, three repetitions, at 1820x18432 / 1638x20480: H100 bf16 96.4-97.8 /
// 96.7-97.4 against 88.8-89.1 / 90.8, fp16 95.9-97.6 / 97.4-98.0 against 88.4-88.8 /
// 90.5-90.6; H200 bf16 89.4-89.7 against 81.3-81.5 at 20480, fp16 90.0-90.4 against 80.1-80.3.
// 24576 on one block at 6 packs (b in shared memory, 3 stages) measured 3-4 points slower than
// clusters on the H200 (kernels/rmsnorm/NOTES.md, twenty-ninth session).
#ifndef KBENCH_WHOLE_BLOCK_FIVE
#define KBENCH_WHOLE_BLOCK_FIVE 1
#endif
// kWholeBlockFullRows (staged_rows.cuh's whole_block_full_rows: layernorm's forward on GPUs with
// fast memory): rows past a 256-thread team's kPacks that fill 7/8 or more of a whole-block team
// at kPacks (28672-32768 bf16 at 8 packs) on one block at kPacks, not over a cluster at
// kWidePacks (1, the default, where the op opts in; 0 never, a knob for scripts/ab-flags.sh).
// Measured with layernorm's w and b in registers there (its kHeldInRegsIn): same run, H200, bf16,
// % of the copy ceiling, three repetitions, against 4 blocks of two 256-thread teams at 4 packs:
// 88.7-89.2 against 86.7-87.1 at 1024x32768, 88.5-89.1 against 87.1-87.5 at 1170x28672
// (kernels/rmsnorm/NOTES.md, forty-first session).
#ifndef KBENCH_WHOLE_BLOCK_FULL_ROWS
#define KBENCH_WHOLE_BLOCK_FULL_ROWS 1
#endif
// Past a whole block, rows that fill 7/8 or more of 4 or 8 blocks of kClusterTeam threads at 5/8 of
// kPacks (layernorm's forward: 35840-40960 and 71680-81920 bf16 at 5 of 8 packs) take those, the
// whole-pack path decided per warp (StagedConfig's kWarpWholePacks: 40000 ends inside warp 7) (1,
// the default), rather than kWidePacks over 8 blocks, 61-63% of their slots (0, a knob for
// scripts/ab-flags.sh). Same run, H100, bf16, % of the copy ceiling, four calls of two repetitions:
// 92.6-94.1 against 90.7-91.6 at 839x40000, 91.3-93.1 against 88.6-89.5 at 917x36608, 92.6-93.9
// against 91.0-91.6 at 819x40960, 92.2-93.9 against 86.4-87.1 at 419x80000. Per thread (these
// kernels then need no spills; with the warp path bf16's spill 16-32 bytes) it read 91.7-92.7 at
// 40000, 92.9-95.1 at 40960 (full slices). H200, one call: 85.1-85.2 / 86.6-87.3 / 87.9-88.0 /
// 87.2-87.4 against 74.3 / 79.6 / 80.3 / 72.1-72.4 at 917x36608 / 839x40000 / 819x40960 /
// 419x80000 (kernels/rmsnorm/NOTES.md, thirty-second and thirty-third sessions).
#ifndef KBENCH_WIDE_CLUSTER_FIVE
#define KBENCH_WIDE_CLUSTER_FIVE 1
#endif
// Rows that fill 7/8 or more of 5 blocks of kTeam threads at kPacks go over those 5 (a hardware
// cluster of 5, or a group of 5 grid-row blocks), the whole-pack path decided per warp, rather
// than over 8 blocks at 56-63% of the slots: 40000 bf16 at 4 packs on 256-thread teams, 5000 of
// 5120 slots; 18432 on 128-thread teams, 2304 of 2560. Only for ops whose rows over several
// blocks do not fit 5/8 of their packs (with_cluster_packs takes 40000 at 5 of 8 packs on 4
// blocks), and only where the op opts in (kFiveBlocks: fused_mul_polynorm and its backward)
// with KBENCH_CLUSTER_FIVE_BLOCKS 1, the default; 0 never, 2 every such op (knobs for
// scripts/ab-flags.sh). Same run, bf16, % of the copy ceiling, two repetitions, 5 blocks against
// 8 at 917x36608 / 839x40000 / 819x40960: H200 fused_mul_polynorm +4.8 to +6.5 (85.3-85.9 against
// 79.6-80.2 at 40000), fused_mul_polynorm_bwd +0.6 to +1.7 (and 79.0 against 73.9-74.0 at
// 1820x18432); H100 fused_mul_polynorm -0.1 to +0.9, fused_mul_polynorm_bwd +1.0 to +3.3. Every
// other op lost: H200 fused_add_rmsnorm -2.1 to -4.0, rmsnorm_bwd -3.5 to -3.9 at 40000-40960,
// fused_add_rmsnorm_bwd -2.3 to -3.5; H100 -0.8 to -3.4 (kernels/rmsnorm/NOTES.md, thirty-third
// session).
#ifndef KBENCH_CLUSTER_FIVE_BLOCKS
#define KBENCH_CLUSTER_FIVE_BLOCKS 1
#endif
// An opt-in knob's reading for an op: 0 never, 1 where the op opts in, 2 every op it reaches.
constexpr bool opt_in_takes(int knob, bool op_opts_in) {
  return knob == 2 || (knob == 1 && op_opts_in);
}
template <int kTeam, int kPacks, bool kOptedIn, class F>
bool with_five_blocks(int64_t packs, F&& f) {
  if constexpr (opt_in_takes(KBENCH_CLUSTER_FIVE_BLOCKS, kOptedIn)) {
    constexpr int64_t kSlots = int64_t{5} * kTeam * kPacks;
    if (fills_seven_eighths(packs, kSlots)) {
      return f(StagedConfig<kTeam, 5, kPacks, 1, true>{}), true;
    }
  }
  return false;
}

// Rows past 8 blocks of 256-thread teams at kClusterPacks (the three-tensor backwards at 2:
// stages of 48 KB, 4 deep, so pipelined) that fill 7/8 of 10 or 12 of them take those, as grid
// rows, the whole-pack path decided per warp; rather than 5 or 8 blocks at the op's 4 packs (2
// stages of 96 KB, not pipelined, so hardware clusters): 40000 bf16 is 5000 of 10 blocks' 5120
// slots, 49152 all of 12 blocks' 6144. Only where the op opts in (kTenOrTwelveBlocks:
// fused_mul_polynorm_bwd) with KBENCH_WIDE_CLUSTER_PACKS 1, the default; 0 never, 2 every such op
// (knobs for scripts/ab-flags.sh). Same run, bf16, % of the copy ceiling, at 917x36608 /
// 839x40000 / 819x40960 / 763x44000 / 683x49152: H200, three repetitions,
// fused_mul_polynorm_bwd 72.1-72.4 / 74.5-75.0 / 74.5-74.7 / 72.3-72.5 / 76.4-77.1 against
// 72.4-72.9 / 73.6-74.1 / 74.1-74.3 / 72.9-73.8 / 71.8-72.1; H100, two calls on two machines,
// 81.9-82.4 / 83.7-84.0 / 83.9-84.5 / 82.2-82.3 / 85.1-85.3 against 80.0-81.3 (79.4-80.3 at
// 49152) in one, -1.4 to +2.1 in the other (where the default read 83.5-85.9).
// fused_add_rmsnorm_bwd lost 4.1-10.1 points so on the H100 (kernels/rmsnorm/NOTES.md,
// thirty-third and thirty-fourth sessions).
#ifndef KBENCH_WIDE_CLUSTER_PACKS
#define KBENCH_WIDE_CLUSTER_PACKS 1
#endif
template <int kPacks, bool kOptedIn, class F>
bool with_ten_or_twelve_blocks(int64_t packs, F&& f) {
  if constexpr (opt_in_takes(KBENCH_WIDE_CLUSTER_PACKS, kOptedIn)) {
    constexpr int64_t kTen = int64_t{10} * 256 * kPacks, kTwelve = int64_t{12} * 256 * kPacks;
    if (fills_seven_eighths(packs, kTen)) return f(StagedConfig<256, 10, kPacks, 1, true>{}), true;
    if (fills_seven_eighths(packs, kTwelve)) {
      return f(StagedConfig<256, 12, kPacks, 1, true>{}), true;
    }
  }
  return false;
}

template <int kWarpSize, int kPacks, int kClusterTeam = KBENCH_CLUSTER_TEAM,
          bool kFit = KBENCH_FIT_PACKS, int kClusterPacks = kPacks, bool kHalfTeams = false,
          bool kWide = false, bool kFullRowsKeepPacks = false, bool kSplitRows = false,
          int kWidePacks = kPacks, bool kFitClusters = kFit, bool kWidePastEight = false,
          bool kFiveBlocks = false, bool kTenOrTwelveBlocks = false,
          bool kWholeBlockFullRows = false, class F>
bool with_staged_config(int64_t packs, bool clusters, F&& f) {
  constexpr int kWarpTeam = kWarpSize > 32 ? kWarpSize : 32;
  // Rows a warp holds at half the packs take half: the same rows per block, with stages half
  // the size and so more of them (H100, rmsnorm at 1024 bf16: 4 packs 98.9% of the copy
  // ceiling, 8 packs 94.7%).
  if constexpr (kPacks > 4) {
    if (packs <= kWarpTeam * (kPacks / 2)) return f(StagedConfig<kWarpTeam, 1, kPacks / 2>{}), true;
  }
  if (packs <= 32 * kPacks) return with_fitted_packs<kWarpTeam, kPacks, kFit>(packs, f), true;
  if (packs <= 64 * kPacks) return with_fitted_packs<64, kPacks, kFit, kHalfTeams>(packs, f), true;
  if (packs <= 128 * kPacks) return with_fitted_packs<128, kPacks, kFit, kHalfTeams>(packs, f), true;
  if (packs <= 256 * kPacks) return with_fitted_packs<256, kPacks, kFit, kHalfTeams>(packs, f), true;
  if constexpr (kWidePacks != kPacks) {
    // Rows a whole-block team holds at 5/8 of kPacks keep them (KBENCH_WHOLE_BLOCK_FIVE;
    // 16392-20480 bf16 at 5 of 8: one block, 5 stages of 40 KB), rather than go to clusters.
    constexpr int kFive = kPacks * 5 / 8;
    if constexpr (kFit && KBENCH_WHOLE_BLOCK_FIVE && kFive > kWidePacks) {
      if (packs <= int64_t{kBlock} * kFive) return f(StagedConfig<kBlock, 1, kFive>{}), true;
    }
    // Rows that fill 7/8 of a whole-block team at kPacks keep them (KBENCH_WHOLE_BLOCK_FULL_ROWS;
    // 28672-32768 bf16 at 8: one block, 3 stages of 64 KB).
    if constexpr (opt_in_takes(KBENCH_WHOLE_BLOCK_FULL_ROWS, kWholeBlockFullRows)) {
      if (fills_seven_eighths(packs, int64_t{kBlock} * kPacks)) {
        return f(StagedConfig<kBlock, 1, kPacks>{}), true;
      }
    }
    if constexpr (kFit && kFitClusters && KBENCH_WIDE_CLUSTER_FIVE && kFive > kWidePacks) {
      // Rows that fill 7/8 of 4 or 8 blocks of kClusterTeam threads at 5/8 of kPacks keep those
      // (KBENCH_WIDE_CLUSTER_FIVE; 40000 bf16 on 4 blocks at 5 of 8: 98% of the slots).
      constexpr int64_t kFour = int64_t{4} * kClusterTeam * kFive, kEight = 2 * kFour;
      if (clusters && fills_seven_eighths(packs, kFour)) {
        return f(StagedConfig<kClusterTeam, 4, kFive, 1, true>{}), true;
      }
      if (clusters && fills_seven_eighths(packs, kEight)) {
        return f(StagedConfig<kClusterTeam, 8, kFive, 1, true>{}), true;
      }
    }
    return with_staged_config<kWarpSize, kWidePacks, kClusterTeam, kFit, kWidePacks, kHalfTeams,
                              kWide, kFullRowsKeepPacks, kSplitRows, kWidePacks, kFitClusters,
                              kWidePastEight, kFiveBlocks, kTenOrTwelveBlocks>(packs, clusters, f);
  } else {
    if constexpr (kWide) {
      // Rows that fill more than 3/4 of a whole-block team's packs (12296-16384 bf16 at 4) and
      // wider: with_wide_rows. Larger groups of blocks, so fewer of them and fewer partial rows
      // of the column gradients (33 instead of 66 folded ones at 16384, 8 instead of 15 at 65536
      // on 132 SMs), and four teams per block, whose row sums overlap.
      if (clusters && 4 * packs > 3 * kBlock * kPacks && with_wide_rows<kPacks>(packs, f)) {
        return true;
      }
    }
    if (packs <= 512 * kPacks) {
      return with_fitted_packs<512, kPacks, kFit, kHalfTeams>(packs, f), true;
    }
    if constexpr (kSplitRows) {
      if (packs <= 2 * kBlock * kPacks) return f(StagedConfig<kBlock, 1, 2 * kPacks, 2>{}), true;
    }
    if (!clusters) return false;
    constexpr int kTeam = kClusterTeam;
    static_assert(kTeam >= kWarpTeam && kTeam <= kBlock && kBlock % kTeam == 0);
    if constexpr (kClusterPacks != kPacks) {
      // Fewer packs per thread over 8 blocks, so more stages, where the row fills more than 3/4
      // of them (staged_rows.cuh's kClusterPacks). Rows that fill less keep kPacks: their
      // stages would carry too few bytes. So do full rows where kFullRowsKeepPacks.
      constexpr int kCP = kClusterPacks;
      constexpr int64_t kTeamSlots = int64_t{8} * kTeam * kPacks;
      const bool keeps = kFullRowsKeepPacks && fills_seven_eighths(packs, kTeamSlots);
      const auto fills = [packs](int64_t slots) { return packs <= slots && 4 * packs > 3 * slots; };
      if (!keeps && fills(8 * 256 * kCP)) return f(StagedConfig<256, 8, kCP>{}), true;
      if (!keeps && fills(8 * kBlock * kCP)) return f(StagedConfig<kBlock, 8, kCP>{}), true;
      if (!keeps && with_ten_or_twelve_blocks<kCP, kTenOrTwelveBlocks>(packs, f)) return true;
    }
    if (packs <= 2 * kTeam * kPacks) return with_cluster_packs<kTeam, 2, kPacks, kFitClusters>(packs, f), true;
    if (packs <= 4 * kTeam * kPacks) return with_cluster_packs<kTeam, 4, kPacks, kFitClusters>(packs, f), true;
    constexpr bool kFitsFiveEighths = kFitClusters && kPacks * 5 / 8 > kPacks / 2;
    if constexpr (!kFitsFiveEighths) {
      if (with_five_blocks<kTeam, kPacks, kFiveBlocks>(packs, f)) return true;
    }
    if (packs <= 8 * kTeam * kPacks) return with_cluster_packs<kTeam, 8, kPacks, kFitClusters>(packs, f), true;
    if constexpr (kWidePastEight && kTeam == kWideTeam) {  // groups of 10 or 12 blocks
      if (with_wide_rows<kPacks, 10, KBENCH_WIDE_PAST_EIGHT_MOST>(packs, f)) return true;
    }
    if constexpr (kTeam < 256) {
      if constexpr (!kFitsFiveEighths) {
        if (with_five_blocks<256, kPacks, kFiveBlocks>(packs, f)) return true;
      }
      if (packs <= 8 * 256 * kPacks) return with_cluster_packs<256, 8, kPacks, kFitClusters>(packs, f), true;
    }
    if (packs <= 8 * kBlock * kPacks) return with_cluster_packs<kBlock, 8, kPacks, kFitClusters>(packs, f), true;
    return false;
  }
}

}  // namespace kbench::staged_rows
