// The staged-row kernels' shape choices (kernels/common/staged_config.h): every row width gets
// a team or cluster that holds it, the smallest one, and every choice fits shared memory.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/common/staged_config.h"

namespace kbench::staged_rows {
namespace {

struct Choice {
  bool taken = false;
  int team = 0;
  int cluster = 0;
  int packs = 0;  // per thread
};

template <int kWarpSize, int kThreadPacks = kPacks, int kClusterTeam = KBENCH_CLUSTER_TEAM>
Choice choose(int64_t packs, bool clusters) {
  Choice c;
  c.taken = with_staged_config<kWarpSize, kThreadPacks, kClusterTeam>(packs, clusters, [&](auto config) {
    c.team = decltype(config)::kTeam;
    c.cluster = decltype(config)::kCluster;
    c.packs = decltype(config)::kPacks;
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
    // The op's packs per thread, or half of them for rows a warp holds at half.
    if (c.packs != kThreadPacks) {
      ASSERT_EQ(c.packs, kThreadPacks / 2) << packs;
      ASSERT_TRUE(kThreadPacks > 4 && c.team == 32) << packs;
    }
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

TEST(StagedConfig, WithoutClustersOnlyRowsOneBlockHolds) {
  EXPECT_TRUE(choose<32>(kBlock * kPacks, false).taken);
  EXPECT_EQ(choose<32>(kBlock * kPacks, false).cluster, 1);
  EXPECT_FALSE(choose<32>(kBlock * kPacks + 1, false).taken);
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
  // Forwards of one staged tensor at their packs per thread.
  EXPECT_GE(stages_of(1, kForwardPacks), 2);
  EXPECT_LE(stages_of(1, kForwardPacks) * stage_bytes(1, kForwardPacks), size_t{227} * 1024);
  EXPECT_EQ(stage_bytes(2, 4), size_t{64} * 1024);  // 2 tensors x 4 packs x 512 threads x 16 B
}

}  // namespace
}  // namespace kbench::staged_rows
