// The staged-row kernels' shape choices (kernels/common/staged_config.h): every row width gets
// a team or cluster that holds it, the smallest one, and every choice fits shared memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/common/staged_config.h"

namespace kbench::staged_rows {
namespace {

struct Choice {
  bool taken = false;
  int team = 0;
  int cluster = 0;
  int packs = 0;  // per thread
  int split = 0;  // stages per row
  bool per_warp = false;  // whole packs decided per warp (kWarpWholePacks)
};

template <int kWarpSize, int kThreadPacks = kPacks, int kClusterTeam = KBENCH_CLUSTER_TEAM,
          bool kFit = KBENCH_FIT_PACKS, int kClusterPacks = kThreadPacks, bool kHalfTeams = false,
          bool kWide = false, bool kFullRowsKeepPacks = false, bool kSplitRows = false,
          int kWidePacks = kThreadPacks, bool kFitClusters = kFit, bool kWidePastEight = false,
          bool kFiveBlocks = false, bool kTenOrTwelveBlocks = false,
          bool kWholeBlockFullRows = false>
Choice choose(int64_t packs, bool clusters) {
  Choice c;
  c.taken = with_staged_config<kWarpSize, kThreadPacks, kClusterTeam, kFit, kClusterPacks,
                               kHalfTeams, kWide, kFullRowsKeepPacks, kSplitRows, kWidePacks,
                               kFitClusters, kWidePastEight, kFiveBlocks, kTenOrTwelveBlocks,
                               kWholeBlockFullRows>(
      packs, clusters, [&](auto config) {
    c.team = decltype(config)::kTeam;
    c.cluster = decltype(config)::kCluster;
    c.packs = decltype(config)::kPacks;
    c.split = decltype(config)::kSplit;
    c.per_warp = decltype(config)::kWarpWholePacks;
  });
  return c;
}

template <int kThreadPacks>
void expect_smallest_team_or_cluster() {
  constexpr int64_t kWidest = int64_t{8} * kBlock * kThreadPacks;
  for (int64_t packs = 1; packs <= kWidest; ++packs) {
    const Choice c = choose<32, kThreadPacks>(packs, true);
    ASSERT_TRUE(c.taken) << packs;
    ASSERT_TRUE(c.cluster == 1 || c.team == KBENCH_CLUSTER_TEAM || c.team == kBlock) << packs;
    // Each block's slice of the row fits its team's packs.
    const int64_t slice = (packs + c.cluster - 1) / c.cluster;
    ASSERT_LE(slice, int64_t{c.team} * c.packs) << packs;
    // The op's packs per thread; half of them for rows a warp holds at half; or, one block
    // per row, 5/8 or 3/4 of them (with_fitted_packs), the fewest that hold the row.
    constexpr int kFive = kThreadPacks * 5 / 8, kSix = kThreadPacks * 3 / 4;
    const bool half = kThreadPacks > 4 && c.packs == kThreadPacks / 2 && c.team == 32;
    if (c.packs != kThreadPacks && !half) {
      // Rows over a cluster only at 3/4 or 5/8 (with_cluster_packs; 3/4 alone with 1), filling
      // 7/8 or more of those slots.
      if (c.cluster > 1) {
        ASSERT_TRUE(KBENCH_FIT_CLUSTER_PACKS && (c.packs == kSix || KBENCH_FIT_CLUSTER_PACKS >= 2))
            << packs;
        ASSERT_GE(8 * packs, 7 * int64_t{c.cluster} * c.team * c.packs) << packs;
      }
      ASSERT_TRUE((c.packs == kFive && kFive > kThreadPacks / 2) || c.packs == kSix) << packs;
      if (c.packs == kSix && kFive > kThreadPacks / 2) ASSERT_GT(packs, int64_t{c.team} * kFive) << packs;
    }
    if (c.cluster == 1 && c.packs == kThreadPacks) ASSERT_GT(packs, int64_t{c.team} * kSix) << packs;
    if (kThreadPacks > 4 && packs <= 32 * kThreadPacks / 2) ASSERT_EQ(c.packs, kThreadPacks / 2);
    // And nothing smaller would have held it: a smaller team, one block, fewer blocks.
    const int64_t cluster_team_packs = int64_t{KBENCH_CLUSTER_TEAM} * kThreadPacks;
    if (c.cluster == 1 && c.team > 32) ASSERT_GT(packs, int64_t{c.team / 2} * kThreadPacks) << packs;
    if (c.cluster > 1) ASSERT_GT(packs, int64_t{kBlock} * kThreadPacks) << packs;
    if (c.cluster > 2) ASSERT_GT(packs, c.cluster / 2 * cluster_team_packs) << packs;
    if (c.cluster == 8 && c.team == kBlock && KBENCH_CLUSTER_TEAM < kBlock) {
      ASSERT_GT(packs, 8 * cluster_team_packs) << packs;
    }
  }
  // Wider than 8 blocks: the caller's kernels.
  EXPECT_FALSE((choose<32, kThreadPacks>(kWidest + 1, true).taken));
}

TEST(StagedConfig, EveryRowWidthGetsTheSmallestTeamOrClusterThatHoldsIt) {
  expect_smallest_team_or_cluster<kPacks>();
  expect_smallest_team_or_cluster<kForwardPacks>();
}

// 5120 bf16 (640 packs) on a team of 128 at 5 packs per thread where the op has 8 (1024 slots,
// 62.5% used, otherwise), on a team of 256 at 3 where it has 4; as many stages or more
// (smaller ones); and unfitted where the op opts out.
TEST(StagedConfig, RowsThatFillFewPacksGetFewerPacksPerThread) {
  const Choice eight = choose<32, 8, KBENCH_CLUSTER_TEAM, true>(640, true);
  EXPECT_EQ(eight.team, 128);
  EXPECT_EQ(eight.packs, 5);
  EXPECT_GT(stages_of(1, 5), stages_of(1, 8));
  const Choice four = choose<32, 4, KBENCH_CLUSTER_TEAM, true>(640, true);
  EXPECT_EQ(four.team, 256);
  EXPECT_EQ(four.packs, 3);
  EXPECT_GT(stages_of(2, 3), stages_of(2, 4));
  EXPECT_EQ((choose<32, 8, KBENCH_CLUSTER_TEAM, true>(768, true).packs), 6);  // 6144 bf16
  EXPECT_EQ((choose<32, 8, KBENCH_CLUSTER_TEAM, true>(1024, true).packs), 8);
  EXPECT_EQ((choose<32, 8, KBENCH_CLUSTER_TEAM, false>(640, true).packs), 8);
  EXPECT_EQ((choose<32, 4, KBENCH_CLUSTER_TEAM, false>(640, true).packs), 4);
}

// One staged tensor at 4 packs (kHalfTeams): 5120 bf16 on 128 threads at 5 packs, every slot
// used; just past a team of 128 at 4 (4104 bf16) too; past 640 packs 3 on 256 as before. Not
// on half of a team of 64 (narrower than an AMD warp). Without kFit (polynorm_bwd) the same
// half teams, and 4 packs past them.
TEST(StagedConfig, OneTensorRowsTakeFivePacksOnHalfTheTeam) {
  const auto half = [](int64_t packs) { return choose<32, 4, KBENCH_CLUSTER_TEAM, true, 4, true>(packs, true); };
  EXPECT_EQ(half(640).team, 128);
  EXPECT_EQ(half(640).packs, 5);
  EXPECT_EQ(half(513).team, 128);
  EXPECT_EQ(half(513).packs, 5);
  EXPECT_EQ(half(641).team, 256);
  EXPECT_EQ(half(641).packs, 3);
  EXPECT_EQ(half(512).team, 128);  // a team of 128 at 4 holds it
  EXPECT_EQ(half(512).packs, 4);
  EXPECT_EQ(half(300).team, 64);  // 2400 bf16: 320 slots rather than 512
  EXPECT_EQ(half(300).packs, 5);
  EXPECT_EQ(half(150).team, 64);  // no half team of 32: 3 packs on 64
  EXPECT_EQ(half(150).packs, 3);
  const auto unfitted = [](int64_t packs) {
    return choose<32, 4, KBENCH_CLUSTER_TEAM, false, 4, true>(packs, true);
  };
  EXPECT_EQ(unfitted(640).team, 128);
  EXPECT_EQ(unfitted(640).packs, 5);
  EXPECT_EQ(unfitted(641).team, 256);
  EXPECT_EQ(unfitted(641).packs, 4);
  EXPECT_EQ(unfitted(150).packs, 4);
  EXPECT_GE(stages_of(1, 5), 4);
}

// An op's own cluster team (polynorm's backwards: 128) up to the rows 8 blocks of it hold, then
// teams of 256 and whole blocks in clusters of 8: no row that the default takes is refused.
TEST(StagedConfig, SmallerClusterTeamsStepUpToLargerOnesInClustersOfEight) {
  constexpr int64_t kOneBlock = int64_t{kBlock} * kPacks;
  const auto choose_128 = [](int64_t packs) { return choose<32, kPacks, 128>(packs, true); };
  const Choice first = choose_128(kOneBlock + 1);
  EXPECT_EQ(first.team, 128);
  EXPECT_EQ(first.cluster, 8);
  const Choice widest_128 = choose_128(8 * 128 * kPacks);
  EXPECT_EQ(widest_128.team, 128);
  const Choice next = choose_128(8 * 128 * kPacks + 1);
  EXPECT_EQ(next.team, 256);
  EXPECT_EQ(next.cluster, 8);
  EXPECT_EQ(choose_128(8 * 256 * kPacks + 1).team, kBlock);
  EXPECT_TRUE(choose_128(8 * kOneBlock).taken);
  EXPECT_FALSE(choose_128(8 * kOneBlock + 1).taken);
}

// Wide rows (layernorm_bwd): rows past 3/4 of a whole-block team (1537 packs at 4: 12296 bf16)
// over the fewest of 2-16 blocks of four 128-thread teams that hold them, at 4 packs: 16384
// bf16 over 4, 32768 over 8, 65536 over 16, but 16 only for rows past 3/4 of their slots;
// wider rows and those as without kWide; none without rows over several blocks. Every slice
// fits its team's packs. Groups of 5 and of more than 8 blocks decide their whole-pack path
// per warp (KBENCH_WIDE_WARP_PACKS 1; every group with 2, none with 0).
TEST(StagedConfig, WideRowsOverTheFewestBlocksOfFourTeams) {
  const auto wide = [](int64_t packs, bool clusters = true) {
    return choose<32, kPacks, KBENCH_CLUSTER_TEAM, true, kPacks, false, true>(packs, clusters);
  };
  EXPECT_EQ(wide(1536).cluster, 1);  // 12288 bf16: one block, as without kWide
  EXPECT_EQ(wide(1536).team, kBlock);
  constexpr int64_t kGroupSlots = int64_t{kWideTeam} * kPacks;  // a block's slots for one row
  if (KBENCH_WIDE_MIDDLE_GROUPS) {
    // Groups of 4, 5 (with 2), 8, 10, 12, 16 blocks: the fewest that hold the row.
    std::vector<int> groups = {4, 8, 10, 12, 16};
    if (KBENCH_WIDE_MIDDLE_GROUPS >= 2) groups.insert(groups.begin() + 1, 5);
    for (int64_t packs = 1537; packs <= 16 * kGroupSlots; ++packs) {
      const Choice c = wide(packs);
      ASSERT_TRUE(c.taken) << packs;
      ASSERT_EQ(c.team, kWideTeam) << packs;
      ASSERT_EQ(c.packs, kPacks) << packs;
      ASSERT_LE(packs, c.cluster * kGroupSlots) << packs;
      const auto group = std::find(groups.begin(), groups.end(), c.cluster);
      ASSERT_NE(group, groups.end()) << packs;
      if (group != groups.begin()) ASSERT_GT(packs, group[-1] * kGroupSlots) << packs;
      const bool per_warp = KBENCH_WIDE_WARP_PACKS >= 2 ||
                            (KBENCH_WIDE_WARP_PACKS == 1 && (c.cluster == 5 || c.cluster > 8));
      ASSERT_EQ(c.per_warp, per_warp) << packs;
    }
    EXPECT_EQ(wide(5000).per_warp, KBENCH_WIDE_WARP_PACKS >= 1);  // 40000 bf16 on 10 blocks
    const int five = KBENCH_WIDE_MIDDLE_GROUPS >= 2 ? 5 : 8;
    for (const auto& [packs, blocks] :
         {std::pair<int64_t, int>{2304, five}, {2560, five}, {2561, 8}, {4096, 8}, {4097, 10},
          {5000, 10}, {5121, 12}, {6144, 12}, {6145, 16}, {8192, 16}}) {
      EXPECT_EQ(wide(packs).cluster, blocks) << packs;  // 18432, 20480, 32768 .. 65536 bf16
    }
  } else {
    for (const auto& [packs, blocks] : {std::pair<int64_t, int>{1537, 4}, {2048, 4}, {2049, 8},
                                        {4096, 8}, {6145, 16}, {8192, 16}}) {
      const Choice c = wide(packs);
      EXPECT_EQ(c.team, kWideTeam) << packs;
      EXPECT_EQ(c.cluster, blocks) << packs;
      EXPECT_EQ(c.packs, kPacks) << packs;
      EXPECT_LE((packs + c.cluster - 1) / c.cluster, int64_t{c.team} * c.packs) << packs;
    }
    for (const int64_t packs : {int64_t{4097}, int64_t{6144}, int64_t{8193}}) {  // as without kWide
      const Choice c = wide(packs);
      EXPECT_EQ(c.cluster, 8) << packs;
      EXPECT_EQ(c.team, (choose<32, kPacks>(packs, true).team)) << packs;
    }
  }
  EXPECT_NE(wide(16 * kGroupSlots + 1).team, kWideTeam);  // past 16 blocks: as without kWide
  EXPECT_EQ(wide(2048, false).team, kBlock);  // no rows over several blocks: one block
  EXPECT_FALSE(wide(2049, false).taken);
}

// The three-tensor backwards (4 packs, 2 over several blocks, cluster team 128): 32768 and
// 65536 bf16 (4096 and 8192 packs) fill all of 8 blocks of 256 and 512 threads at 2 packs, with
// 4 stages of three tensors where 4 packs fit 2; 40000 (5000 packs, 61% of 8192) and rows one
// block holds keep 4 packs; every row still fits its slots.
TEST(StagedConfig, ClusterPacksWhereTheRowFillsThem) {
  const auto choose_3 = [](int64_t packs) { return choose<32, kPacks, 128, false, 2>(packs, true); };
  const Choice k32 = choose_3(4096);
  EXPECT_EQ(k32.team, 256);
  EXPECT_EQ(k32.cluster, 8);
  EXPECT_EQ(k32.packs, 2);
  const Choice k64 = choose_3(8192);
  EXPECT_EQ(k64.team, kBlock);
  EXPECT_EQ(k64.packs, 2);
  EXPECT_EQ(stages_of(3, 2), 4);
  EXPECT_EQ(stages_of(3, 4), 2);
  EXPECT_EQ(choose_3(5000).packs, KBENCH_WIDE_CLUSTER_PACKS == 2 ? 2 : 4);  // 10 blocks where opted in
  EXPECT_EQ(choose_3(3072).packs, 4);  // 3/4 of 4096 exactly
  EXPECT_EQ(choose_3(3073).packs, 2);
  EXPECT_EQ(choose_3(kBlock * kPacks).packs, 4);
  EXPECT_EQ(choose_3(kBlock * kPacks).cluster, 1);
  for (int64_t packs = kBlock * kPacks + 1; packs <= 8 * kBlock * kPacks; ++packs) {
    const Choice c = choose_3(packs);
    ASSERT_TRUE(c.taken) << packs;
    ASSERT_LE((packs + c.cluster - 1) / c.cluster, int64_t{c.team} * c.packs) << packs;
    if (c.packs == 2) ASSERT_GT(4 * packs, 3 * int64_t{c.team} * c.cluster * 2) << packs;
  }
}

// fused_mul_polynorm_bwd (kFullRowsKeepPacks): rows that fill 7/8 or more of 8 blocks of
// 128-thread teams at 4 packs (3584-4096 packs: 28672-32768 bf16) keep 4 packs there; narrower
// and wider rows take 2 as above.
TEST(StagedConfig, FullRowsKeepTheirPacks) {
  const auto choose_3 = [](int64_t packs) {
    return choose<32, kPacks, 128, false, 2, false, false, true>(packs, true);
  };
  for (const int64_t packs : {int64_t{3584}, int64_t{4000}, int64_t{4096}}) {
    const Choice c = choose_3(packs);
    EXPECT_EQ(c.team, 128) << packs;
    EXPECT_EQ(c.cluster, 8) << packs;
    EXPECT_EQ(c.packs, 4) << packs;
  }
  EXPECT_EQ(choose_3(3583).packs, 2);
  EXPECT_EQ(choose_3(3200).packs, 2);
  EXPECT_EQ(choose_3(4097).packs, 4);  // half of 8 blocks of 512 at 2: kPacks, as above
  EXPECT_EQ(choose_3(8192).packs, 2);
  EXPECT_EQ(choose_3(8192).team, kBlock);
}

// Split rows: past a whole-block team's packs and up to twice them, one block at twice the
// packs, the row's halves in two stages; clusters neither needed nor taken. Wider rows, and
// every row of an op without kSplitRows, as before.
TEST(StagedConfig, SplitRowsTakeOneBlockAtTwiceThePacks) {
  const auto choose_split = [](int64_t packs, bool clusters) {
    return choose<32, kForwardPacks, KBENCH_CLUSTER_TEAM, true, kForwardPacks, false, false, false,
                  true>(packs, clusters);
  };
  constexpr int64_t kWhole = int64_t{kBlock} * kForwardPacks;  // 4096 packs: 32768 bf16
  for (const int64_t packs : {kWhole + 1, kWhole + 1000, 2 * kWhole}) {
    for (const bool clusters : {true, false}) {
      const Choice c = choose_split(packs, clusters);
      EXPECT_TRUE(c.taken) << packs;
      EXPECT_EQ(c.team, kBlock) << packs;
      EXPECT_EQ(c.cluster, 1) << packs;
      EXPECT_EQ(c.packs, 2 * kForwardPacks) << packs;
      EXPECT_EQ(c.split, 2) << packs;
    }
  }
  EXPECT_EQ(choose_split(kWhole, true).split, 1);  // a whole-block team holds it
  EXPECT_EQ(choose_split(kWhole, true).packs, kForwardPacks);
  EXPECT_GT(choose_split(2 * kWhole + 1, true).cluster, 1);
  EXPECT_EQ(choose_split(2 * kWhole + 1, true).split, 1);
  EXPECT_FALSE(choose_split(2 * kWhole + 1, false).taken);
  const Choice unsplit = choose<32, kForwardPacks>(kWhole + 1, true);  // not opted in
  EXPECT_EQ(unsplit.split, 1);
  EXPECT_GT(unsplit.cluster, 1);
  // Three stages of half a row, so a row and the next one's first half: one tensor at 8 packs
  // per stage, two at 4 (polynorm_bwd's dy and x).
  EXPECT_EQ(stages_of(1, kForwardPacks, kOneBlockMaxStages), 3);
  EXPECT_EQ(stages_of(2, kPacks, kOneBlockMaxStages), 3);
  EXPECT_EQ(stages_of(1, kForwardPacks, kMaxStages), 3);  // polynorm's forward (4 at most)
}

// kWidePacks (layernorm's forward: 8 packs, 4 beyond): rows a team of up to 256 threads holds
// at the op's packs take them; so do rows a whole-block team holds at 5/8 of them (one block,
// no cluster); wider rows take what an op of kWidePacks packs would.
TEST(StagedConfig, RowsPastA256ThreadTeamTakeTheWidePacks) {
  const auto choose_wide = [](int64_t packs) {
    return choose<32, 8, KBENCH_CLUSTER_TEAM, true, 8, false, false, false, false, 4>(packs, true);
  };
  for (int64_t packs = 1; packs <= 8 * kBlock * 4; packs += 7) {
    const Choice c = choose_wide(packs);
    ASSERT_TRUE(c.taken) << packs;
    if (packs > 256 * 8 && packs <= kBlock * 5 && KBENCH_WHOLE_BLOCK_FIVE) {
      EXPECT_EQ(c.team, kBlock) << packs;
      EXPECT_EQ(c.cluster, 1) << packs;
      EXPECT_EQ(c.packs, 5) << packs;
      continue;
    }
    // Rows that fill 7/8 of 4 or 8 blocks of 256 threads at 5 packs (KBENCH_WIDE_CLUSTER_FIVE).
    bool five_over_blocks = false;
    for (const int64_t slots : {4 * 256 * 5, 8 * 256 * 5}) {
      five_over_blocks |= KBENCH_WIDE_CLUSTER_FIVE && packs <= slots && 8 * packs >= 7 * slots;
    }
    if (five_over_blocks) {
      EXPECT_EQ(c.team, 256) << packs;
      EXPECT_EQ(c.cluster, packs <= 4 * 256 * 5 ? 4 : 8) << packs;
      EXPECT_EQ(c.packs, 5) << packs;
      EXPECT_TRUE(c.per_warp) << packs;  // 40000 bf16 ends inside warp 7
      continue;
    }
    const Choice eight = choose<32, 8>(packs, true);
    const Choice four = choose<32, 4>(packs, true);
    const Choice& expected = packs <= 256 * 8 ? eight : four;
    ASSERT_EQ(c.team, expected.team) << packs;
    ASSERT_EQ(c.cluster, expected.cluster) << packs;
    ASSERT_EQ(c.packs, expected.packs) << packs;
  }
  EXPECT_EQ(choose_wide(2048).packs, 8);  // 16384 bf16: team 256 at 8
  EXPECT_EQ(choose_wide(2049).team, KBENCH_WHOLE_BLOCK_FIVE ? kBlock : KBENCH_CLUSTER_TEAM);
  EXPECT_EQ(choose_wide(2560).cluster, KBENCH_WHOLE_BLOCK_FIVE ? 1 : 4);  // 20480 bf16
  EXPECT_EQ(choose_wide(2561).packs, 4);  // past 20480: over blocks (83% of 3 packs' slots)
  EXPECT_EQ(choose_wide(3072).packs, KBENCH_FIT_CLUSTER_PACKS ? 3 : 4);  // 24576 fills 3 exactly
  EXPECT_GT(choose_wide(2561).cluster, 1);
  EXPECT_EQ(choose_wide(4096).packs, 4);  // 32768 bf16: over blocks at 4, not team 512 at 8
  EXPECT_GT(choose_wide(4096).cluster, 1);
  EXPECT_EQ(choose_wide(5000).packs, KBENCH_WIDE_CLUSTER_FIVE ? 5 : 4);  // 40000 bf16: 4 blocks
  EXPECT_EQ(choose_wide(10000).packs, KBENCH_WIDE_CLUSTER_FIVE ? 5 : 4);  // 80000: 8 blocks
}

// kWholeBlockFullRows (layernorm's forward on fast memory): of the rows kWidePacks would send
// over blocks, those that fill 7/8 or more of a whole-block team at the op's packs (3584-4096
// packs: 28672-32768 bf16) take one block at them; every other row as without it.
TEST(StagedConfig, RowsThatFillAWholeBlockKeepTheirPacks) {
  const auto choose_full = [](int64_t packs) {
    return choose<32, 8, KBENCH_CLUSTER_TEAM, true, 8, false, false, false, false, 4, true, false,
                  false, false, true>(packs, true);
  };
  const auto choose_wide = [](int64_t packs) {
    return choose<32, 8, KBENCH_CLUSTER_TEAM, true, 8, false, false, false, false, 4>(packs, true);
  };
  for (int64_t packs = 1; packs <= 8 * kBlock * 4; packs += 5) {
    const Choice c = choose_full(packs);
    ASSERT_TRUE(c.taken) << packs;
    if (KBENCH_WHOLE_BLOCK_FULL_ROWS && packs > 256 * 8 && 8 * packs >= 7 * kBlock * 8 &&
        packs <= kBlock * 8) {
      EXPECT_EQ(c.team, kBlock) << packs;
      EXPECT_EQ(c.cluster, 1) << packs;
      EXPECT_EQ(c.packs, 8) << packs;
      continue;
    }
    const Choice wide = choose_wide(packs);
    ASSERT_EQ(c.team, wide.team) << packs;
    ASSERT_EQ(c.cluster, wide.cluster) << packs;
    ASSERT_EQ(c.packs, wide.packs) << packs;
  }
  if (!KBENCH_WHOLE_BLOCK_FULL_ROWS) return;
  EXPECT_EQ(choose_full(4096).cluster, 1);  // 32768 bf16: one block at 8
  EXPECT_EQ(choose_full(3584).cluster, 1);  // 28672 bf16: 7/8 of its slots
  EXPECT_GT(choose_full(3583).cluster, 1);  // less: over blocks, as before
  EXPECT_GT(choose_full(4097).cluster, 1);  // wider than a block holds
}

// kWidePastEight (polynorm_bwd: a cluster team of 128, split rows): rows past 8 blocks of
// 128-thread teams (4096 packs at 4) over 10 or 12 blocks of them, the whole-pack path decided
// per warp (KBENCH_WIDE_WARP_PACKS); wider rows, and every narrower one, as without it.
TEST(StagedConfig, RowsPastEightBlocksOfTeamsOf128GoOverTenOrTwelve) {
  if (!KBENCH_WIDE_MIDDLE_GROUPS || KBENCH_WIDE_PAST_EIGHT_MOST != 12 ||
      KBENCH_CLUSTER_FIVE_BLOCKS == 2) {
    GTEST_SKIP() << "the defaults' groups (KBENCH_WIDE_MIDDLE_GROUPS, KBENCH_WIDE_PAST_EIGHT_MOST, "
                    "KBENCH_CLUSTER_FIVE_BLOCKS)";
  }
  const auto pick = [](int64_t packs, auto past_eight) {
    return choose<32, kPacks, 128, false, kPacks, true, false, false, true, kPacks, false,
                  decltype(past_eight)::value>(packs, true);
  };
  constexpr std::true_type kPastEight{};
  constexpr std::false_type kNot{};
  for (int64_t packs = 1; packs <= 8 * 256 * kPacks; packs += 3) {
    const Choice c = pick(packs, kPastEight);
    const Choice without = pick(packs, kNot);
    ASSERT_TRUE(c.taken && without.taken) << packs;
    const int64_t eight = 8 * int64_t{kWideTeam} * kPacks;
    if (packs <= eight || packs > 12 * int64_t{kWideTeam} * kPacks) {
      ASSERT_EQ(c.cluster, without.cluster) << packs;
      ASSERT_EQ(c.team, without.team) << packs;
      ASSERT_EQ(c.packs, without.packs) << packs;
      continue;
    }
    ASSERT_EQ(c.team, kWideTeam) << packs;
    ASSERT_EQ(c.cluster, packs <= 10 * int64_t{kWideTeam} * kPacks ? 10 : 12) << packs;
    ASSERT_EQ(c.packs, kPacks) << packs;
    ASSERT_EQ(c.per_warp, KBENCH_WIDE_WARP_PACKS >= 1) << packs;  // as with_wide_rows decides
    ASSERT_EQ(without.cluster, 8) << packs;  // two 256-thread teams
    ASSERT_EQ(without.team, 256) << packs;
  }
  EXPECT_EQ(pick(5000, kPastEight).cluster, 10);  // 40000 bf16
  EXPECT_EQ(pick(6144, kPastEight).cluster, 12);  // 49152
  EXPECT_EQ(pick(8192, kPastEight).cluster, 8);   // 65536: as without
}

// Rows that fill 7/8 of 5 blocks of 256-thread teams at 4 packs take those 5, the whole-pack
// path per warp, where the op opts in (kFiveBlocks) and KBENCH_CLUSTER_FIVE_BLOCKS is 1 (the
// default), or for every op at 2; else 8 blocks. Ops that fit 5/8 of their 8 packs over several
// blocks keep that (4 blocks at 5).
TEST(StagedConfig, RowsThatFillFiveBlocksTakeThemWhereTheOpOptsIn) {
  if (KBENCH_WIDE_CLUSTER_PACKS == 2) {
    GTEST_SKIP() << "every op's 10 blocks (KBENCH_WIDE_CLUSTER_PACKS=2)";
  }
  // fused_mul_polynorm's forward and backward opt in; fused_add_rmsnorm and rmsnorm_bwd do not.
  const auto forward = [](int64_t packs, auto opts_in) {
    return choose<32, 4, KBENCH_CLUSTER_TEAM, true, 4, false, false, false, true, 4, true, false,
                  decltype(opts_in)::value>(packs, true);
  };
  const auto backward = [](int64_t packs, auto opts_in) {
    return choose<32, 4, 128, false, 2, false, false, true, false, 4, false, false,
                  decltype(opts_in)::value>(packs, true);
  };
  const auto takes_five = [](bool opts_in) {
    return KBENCH_CLUSTER_FIVE_BLOCKS == 2 || (KBENCH_CLUSTER_FIVE_BLOCKS == 1 && opts_in);
  };
  const auto expect_blocks = [&](auto pick, auto opts_in) {
    const bool takes = takes_five(decltype(opts_in)::value);
    const Choice c = pick(5000, opts_in);  // 40000 bf16: 98% of 5 blocks' slots
    EXPECT_EQ(c.cluster, takes ? 5 : 8);
    EXPECT_EQ(c.team, 256);
    EXPECT_EQ(c.packs, 4);
    EXPECT_EQ(c.per_warp, takes);
    EXPECT_EQ(pick(4480, opts_in).cluster, takes ? 5 : 8);  // 7/8 of them: 35840 bf16
    EXPECT_EQ(pick(4479, opts_in).cluster, 8);             // less
    EXPECT_EQ(pick(5121, opts_in).cluster, 8);             // past them
  };
  // The backward's 128-thread teams: 18432 bf16, 90% of 5 blocks of them (56% of 8).
  EXPECT_EQ(backward(2304, std::true_type{}).cluster, takes_five(true) ? 5 : 8);
  EXPECT_EQ(backward(2304, std::false_type{}).cluster, takes_five(false) ? 5 : 8);
  EXPECT_EQ(backward(2304, std::true_type{}).team, 128);
  expect_blocks(forward, std::true_type{});
  expect_blocks(backward, std::true_type{});
  expect_blocks(forward, std::false_type{});
  expect_blocks(backward, std::false_type{});
  EXPECT_EQ((choose<32, 8>(5000, true).cluster), 4);  // rmsnorm: 5 of 8 packs on 4 blocks
}

// The three-tensor backwards' rows that fill 7/8 of 10 or 12 blocks of 256-thread teams at 2
// packs take those, the whole-pack path per warp, where the op opts in (kTenOrTwelveBlocks:
// fused_mul_polynorm_bwd, not fused_add_rmsnorm_bwd) and KBENCH_WIDE_CLUSTER_PACKS is 1 (the
// default), or for both at 2; else 5 or 8 blocks at 4 packs.
TEST(StagedConfig, RowsThatFillTenOrTwelveBlocksAtTwoPacksTakeThemWhereTheOpOptsIn) {
  const auto fused_mul_bwd = [](int64_t packs) {
    return choose<32, 4, 128, false, 2, false, false, true, false, 4, false, false, true, true>(
        packs, true);
  };
  const auto fused_add_bwd = [](int64_t packs) {
    return choose<32, 4, 256, false, 2>(packs, true);
  };
  for (const bool opts_in : {true, false}) {
    const auto pick = opts_in ? +fused_mul_bwd : +fused_add_bwd;
    const bool takes =
        KBENCH_WIDE_CLUSTER_PACKS == 2 || (KBENCH_WIDE_CLUSTER_PACKS == 1 && opts_in);
    for (const auto& [packs, blocks] : {std::pair{int64_t{5000}, 10}, {int64_t{4480}, 10},
                                        {int64_t{6144}, 12}, {int64_t{5376}, 12}}) {
      const Choice c = pick(packs);
      EXPECT_EQ(c.cluster == blocks, takes) << packs;
      if (takes) {
        EXPECT_EQ(c.team, 256) << packs;
        EXPECT_EQ(c.packs, 2) << packs;
        EXPECT_TRUE(c.per_warp) << packs;
      } else {
        EXPECT_EQ(c.packs, 4) << packs;
      }
    }
    EXPECT_NE(pick(5200).cluster, 10);  // past 10 blocks' slots, 85% of 12's
    EXPECT_NE(pick(5200).cluster, 12);
    EXPECT_EQ(pick(4096).cluster, 8);  // 32768 and 65536 bf16: 8 blocks, as before
    EXPECT_EQ(pick(8192).cluster, 8);
  }
}

// The steps of rows (team_row_of, as staged_rows.cuh's loops take them): every row goes to
// exactly one team, within its step; a step the rows fill keeps a group's teams on consecutive
// rows; a last, partial step gives every group as many of its rows as any other to within one.
TEST(StagedConfig, EveryRowGoesToOneTeamAndTheLastStepToEveryGroup) {
  for (const auto& [groups, teams] : {std::pair{132, 4}, {132, 16}, {66, 2}, {16, 4}, {3, 1}}) {
    const int64_t stride = int64_t{groups} * teams;
    for (const int64_t rows : {int64_t{1}, int64_t{7}, stride - 1, stride, stride + 1,
                               int64_t{4096}, int64_t{4100}, 8 * stride - 5}) {
      std::vector<int> taken(rows, 0);
      for (int64_t step = 0; step < rows; step += stride) {
        const bool partial = step + stride > rows;
        std::vector<int> per_group(groups, 0);
        for (int g = 0; g < groups; ++g) {
          for (int t = 0; t < teams; ++t) {
            const int64_t row = team_row_of(step, rows, stride, g * teams + t, t * groups + g);
            ASSERT_GE(row, step);
            ASSERT_LT(row, step + stride);
            if (!partial) {
              EXPECT_EQ(row, step + g * teams + t);
            }
            if (row < rows) {
              ++taken[row];
              ++per_group[g];
            }
          }
        }
        const auto [least, most] = std::minmax_element(per_group.begin(), per_group.end());
        if (partial) {
          EXPECT_LE(*most - *least, 1) << groups << "x" << teams << ", " << rows << " rows";
        }
      }
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(taken[r], 1) << "row " << r << " of " << rows;
    }
  }
}

TEST(StagedConfig, WithoutClustersOnlyRowsOneBlockHolds) {
  EXPECT_TRUE(choose<32>(kBlock * kPacks, false).taken);
  EXPECT_EQ(choose<32>(kBlock * kPacks, false).cluster, 1);
  EXPECT_FALSE(choose<32>(kBlock * kPacks + 1, false).taken);
}

// An H100: 132 SMs, 66 resident clusters of 2, 30 of 4, 15 of 8 of these blocks.
TEST(StagedConfig, GridRowsWhereTheyPutMoreBlocksToWorkThanClusters) {
  const RowGroups two = row_groups_of(1000, 66, 132, 2, 1);
  EXPECT_FALSE(two.grid_rows);  // clusters of 2 fill every SM already
  EXPECT_EQ(two.groups, 66);
  const RowGroups four = row_groups_of(1000, 30, 132, 4, 1);
  EXPECT_TRUE(four.grid_rows);
  EXPECT_EQ(four.groups, 33);  // 132 blocks, not 120
  const RowGroups eight = row_groups_of(1000, 15, 132, 8, 1);
  EXPECT_TRUE(eight.grid_rows);
  EXPECT_EQ(eight.groups, 16);  // 128 blocks, not 120
}

TEST(StagedConfig, RowGroupsNeverExceedTheRowsOrTheSms) {
  EXPECT_EQ(row_groups_of(3, 30, 132, 4, 1).groups, 3);  // a group per row group, no more
  EXPECT_EQ(row_groups_of(1, 15, 132, 8, 2).groups, 1);
  for (int mode = 0; mode <= 2; ++mode) {
    for (int cluster : {2, 4, 8}) {
      for (int sms : {1, 7, 108, 132, 5000}) {
        const RowGroups g = row_groups_of(1 << 20, 1000, sms, cluster, mode);
        EXPECT_LE(g.groups * cluster, sms) << mode << " " << cluster << " " << sms;
        EXPECT_LE(g.groups * cluster, g.grid_rows ? kGridRowsMaxBlocks : sms);
      }
    }
  }
}

TEST(StagedConfig, GridRowsKnobForcesEitherWay) {
  EXPECT_FALSE(row_groups_of(1000, 15, 132, 8, 0).grid_rows);  // 0: clusters only
  EXPECT_EQ(row_groups_of(1000, 15, 132, 8, 0).groups, 15);
  EXPECT_TRUE(row_groups_of(1000, 66, 132, 2, 2).grid_rows);  // 2: grid rows always
  EXPECT_EQ(row_groups_of(1000, 66, 132, 2, 2).groups, 66);
  // No clusters on the device (sm_80): grid rows, or nothing with the knob at 0.
  EXPECT_TRUE(row_groups_of(1000, 0, 108, 4, 1).grid_rows);
  EXPECT_EQ(row_groups_of(1000, 0, 108, 4, 1).groups, 27);
  EXPECT_EQ(row_groups_of(1000, 0, 108, 4, 0).groups, 0);
}

TEST(StagedConfig, WarpTeamsFollowTheWarpWidth) {
  EXPECT_EQ(choose<32>(1, true).team, 32);
  EXPECT_EQ(choose<64>(1, true).team, 64);  // AMD: a team is a whole wavefront
  EXPECT_EQ(choose<64>(64 * kPacks, true).team, 64);
}

TEST(StagedConfig, StagesFitSharedMemory) {
  // x (forwards), dy + x (backwards), dy + x + dh (fused add backward).
  EXPECT_EQ(stages_of(1, kPacks), kMaxStages);
  for (int staged = 1; staged <= 3; ++staged) {
    EXPECT_GE(stages_of(staged, kPacks), 2) << staged;
    EXPECT_LE(stages_of(staged, kPacks) * stage_bytes(staged, kPacks), size_t{227} * 1024) << staged;
  }
  // Every packs per thread a configuration may take, fitted ones included: up to
  // kForwardPacks for one staged tensor, kPacks for two or three; with either cap.
  for (const int most : {kMaxStages, kOneBlockMaxStages}) {
    for (int staged = 1; staged <= 3; ++staged) {
      for (int packs = 1; packs <= (staged == 1 ? kForwardPacks : kPacks); ++packs) {
        const int stages = stages_of(staged, packs, most);
        EXPECT_GE(stages, 2) << staged << " " << packs;
        EXPECT_LE(stages, most) << staged << " " << packs;
        EXPECT_LE(stages * stage_bytes(staged, packs), size_t{227} * 1024)
            << staged << " " << packs;
      }
    }
  }
  // Rows one block holds: one tensor at 4 packs (32 KB a stage) 6 deep, at 5 packs 5.
  EXPECT_EQ(stages_of(1, kPacks, kOneBlockMaxStages), 6);
  EXPECT_EQ(stages_of(1, 5, kOneBlockMaxStages), 5);
  EXPECT_EQ(stages_of(2, kPacks, kOneBlockMaxStages), stages_of(2, kPacks));
  EXPECT_EQ(stage_bytes(2, 4), size_t{64} * 1024);  // 2 tensors x 4 packs x 512 threads x 16 B
}

TEST(StagedConfig, TwoBlocksPerSmOnlyWhereEachKeepsTwoStages) {
  // Each of two blocks takes half the budget: one tensor at 4 packs (32 KB a stage) 3 deep, at
  // 5 or 6 packs 2 deep, and both blocks fit an SM; at 8 packs (64 KB) even 2 stages do not.
  const size_t half = kSharedBudget / 2;
  EXPECT_EQ(stages_of(1, 4, kOneBlockMaxStages, half), 3);
  EXPECT_TRUE(fits_blocks_per_sm(3 * stage_bytes(1, 4), 2));
  for (const int packs : {5, 6}) {
    EXPECT_EQ(stages_of(1, packs, kOneBlockMaxStages, half), 2) << packs;
    EXPECT_TRUE(fits_blocks_per_sm(2 * stage_bytes(1, packs), 2)) << packs;
  }
  EXPECT_FALSE(fits_blocks_per_sm(2 * stage_bytes(1, 8), 2));
  EXPECT_TRUE(fits_blocks_per_sm(3 * stage_bytes(1, 8), 1));  // one block, as before
  // Two staged tensors at 3 packs (48 KB a stage) fit too; at 4 (64 KB) they do not.
  EXPECT_TRUE(fits_blocks_per_sm(2 * stage_bytes(2, 3), 2));
  EXPECT_FALSE(fits_blocks_per_sm(2 * stage_bytes(2, 4), 2));
}

// A row over several blocks: every block's slice starts on a 128-byte line (a multiple of 8
// packs), the slices cover the row, and no slice passes the slots of the configuration that
// took the row (4 or 8 packs per thread of a team of 32 to 512).
TEST(StagedConfig, SlicesStartOnALineCoverTheRowAndFitTheirBlock) {
  EXPECT_EQ(slice_packs(5000, 4), KBENCH_SLICE_ALIGN == 8 ? 1256 : 1250);  // 40000 bf16
  EXPECT_EQ(slice_packs(5000, 1), 5000);                                     // one block: all
  for (const int cluster : {2, 4, 5, 8, 10, 12, 16}) {
    for (const int slots : {32 * 4, 128 * 4, 256 * 4, 256 * 8, 512 * 4, 512 * 8}) {
      for (int packs = (cluster - 1) * slots + 1; packs <= cluster * slots; ++packs) {
        const int slice = slice_packs(packs, cluster);
        if (KBENCH_SLICE_ALIGN == 8) ASSERT_EQ(slice % 8, 0) << packs << " over " << cluster;
        ASSERT_GE(int64_t{slice} * cluster, packs) << packs << " over " << cluster;
        ASSERT_LE(slice, slots) << packs << " over " << cluster;
      }
    }
  }
}

// An op at 8 packs that does not fit its rows over several blocks (kFitClusters false).
Choice choose_opting_out_of_cluster_fits(int64_t packs) {
  return choose<32, 8, KBENCH_CLUSTER_TEAM, KBENCH_FIT_PACKS, 8, false, false, false, false, 8, false>(
      packs, true);
}

// KBENCH_FIT_CLUSTER_PACKS: rows over a cluster at 3/4 of the op's packs where they fill 7/8 or
// more of those slots (49152 bf16 at 8 packs: 6 on 4 blocks of two 256-thread teams), the
// cluster the same as at the op's packs; elsewhere, without the knob or where the op opts out
// (the backwards: kFitClusters), the op's packs.
TEST(StagedConfig, ClusterRowsFitThreeQuartersOfTheirPacksWhereTheyFillThem) {
  constexpr bool kFit = KBENCH_FIT_PACKS;
  const Choice c49 = choose<32, 8>(6144, true);
  EXPECT_EQ(c49.cluster, 4);
  EXPECT_EQ(c49.packs, KBENCH_FIT_CLUSTER_PACKS && kFit ? 6 : 8);
  // 40000 bf16: 81% of 6 packs' slots, 98% of 5 packs' (those only with 2, the default)
  EXPECT_EQ((choose<32, 8>(5000, true).packs), KBENCH_FIT_CLUSTER_PACKS >= 2 && kFit ? 5 : 8);
  EXPECT_EQ((choose<32, 8>(8192, true).packs), 8);  // 65536 bf16 fills 8
  EXPECT_EQ(choose_opting_out_of_cluster_fits(6144).packs, 8);  // the op opts out
  for (int64_t packs = 4097; packs <= 8 * kBlock * 8; packs += 13) {
    const Choice c = choose<32, 8>(packs, true);
    const Choice unfitted = choose_opting_out_of_cluster_fits(packs);
    if (KBENCH_CLUSTER_FIVE_BLOCKS == 2 && unfitted.cluster == 5) continue;  // the lab knob's
    ASSERT_EQ(c.cluster, unfitted.cluster) << packs;
    ASSERT_EQ(c.team, unfitted.team) << packs;
    ASSERT_EQ(unfitted.packs, 8) << packs;
    ASSERT_LE(packs, int64_t{c.cluster} * c.team * c.packs) << packs;
    if (c.packs != 8) ASSERT_GE(8 * packs, 7 * int64_t{c.cluster} * c.team * c.packs) << packs;
  }
}

// KBENCH_FIT_CLUSTER_PACKS=2 (the default): rows over a cluster also at 5/8 of the packs where
// they fill 7/8 or more of those slots; such rows end inside a warp, so those configurations,
// and no other of with_cluster_packs', decide per warp whether a thread's packs need a branch
// each (kWarpWholePacks).
TEST(StagedConfig, ClusterRowsAtFiveEighthsOfTheirPacksDecideTheirPathPerWarp) {
  struct Pick {
    int packs = 0;
    bool per_warp = false;
  };
  const auto pick = [](int64_t packs, auto level) {
    Pick p;
    with_cluster_packs<256, 4, 8, true, decltype(level)::value>(packs, [&](auto config) {
      p.packs = decltype(config)::kPacks;
      p.per_warp = decltype(config)::kWarpWholePacks;
    });
    return p;
  };
  constexpr std::integral_constant<int, 1> kSixOnly{};
  constexpr std::integral_constant<int, 2> kFiveToo{};
  EXPECT_EQ(pick(5000, kFiveToo).packs, 5);  // 40000 bf16 on 4 blocks: 98% of 5120 slots
  EXPECT_TRUE(pick(5000, kFiveToo).per_warp);
  EXPECT_EQ(pick(5000, kSixOnly).packs, 8);
  EXPECT_FALSE(pick(5000, kSixOnly).per_warp);
  EXPECT_EQ(pick(6144, kFiveToo).packs, 6);  // 49152 bf16 fills 6 exactly
  EXPECT_EQ(pick(4400, kFiveToo).packs, 8);  // 86% of 5 packs' slots: too few bytes a stage
  for (int64_t packs = 1; packs <= 4 * 256 * 8; ++packs) {
    const Pick p = pick(packs, kFiveToo);
    ASSERT_EQ(p.per_warp, p.packs == 5) << packs;
    ASSERT_LE(packs, 4 * 256 * int64_t{p.packs}) << packs;
    if (p.packs != 8) ASSERT_GE(8 * packs, 7 * 4 * 256 * int64_t{p.packs}) << packs;
  }
}

}  // namespace
}  // namespace kbench::staged_rows
