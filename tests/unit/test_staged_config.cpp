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
};

template <int kWarpSize>
Choice choose(int64_t packs, bool clusters) {
  Choice c;
  c.taken = with_staged_config<kWarpSize>(packs, clusters, [&](auto config) {
    c.team = decltype(config)::kTeam;
    c.cluster = decltype(config)::kCluster;
  });
  return c;
}

TEST(StagedConfig, EveryRowWidthGetsTheSmallestTeamOrClusterThatHoldsIt) {
  for (int64_t packs = 1; packs <= 8 * 2048; ++packs) {
    const Choice c = choose<32>(packs, true);
    ASSERT_TRUE(c.taken) << packs;
    ASSERT_TRUE(c.cluster == 1 || c.team == kBlock) << packs;
    // Each block's slice of the row fits its threads' packs.
    const int64_t slice = (packs + c.cluster - 1) / c.cluster;
    ASSERT_LE(slice, int64_t{c.team} * kPacks) << packs;
    // And nothing smaller would have held it.
    if (c.cluster == 1 && c.team > 32) ASSERT_GT(packs, int64_t{c.team / 2} * kPacks) << packs;
    if (c.cluster > 2) ASSERT_GT(packs, int64_t{c.cluster / 2} * KBENCH_CLUSTER_SLICE) << packs;
    if (c.cluster == 2) ASSERT_GT(packs, int64_t{kBlock} * kPacks) << packs;
  }
  EXPECT_FALSE(choose<32>(8 * 2048 + 1, true).taken);  // wider than 8 blocks: the caller's kernels
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
  EXPECT_EQ(stages_of(1), kMaxStages);
  for (int staged = 1; staged <= 3; ++staged) {
    EXPECT_GE(stages_of(staged), 2) << staged;
    EXPECT_LE(stages_of(staged) * stage_bytes(staged), size_t{227} * 1024) << staged;
  }
  EXPECT_EQ(stage_bytes(2), size_t{64} * 1024);  // 2 tensors x 4 packs x 512 threads x 16 B
}

}  // namespace
}  // namespace kbench::staged_rows
