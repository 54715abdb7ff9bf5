// Where a kernel's claimed groups start (kernels/common/row_claims.h): the groups by block index
// are whole steps of the grid, the claims are the asked percent (or the cap) and less than a
// step more, and a percent of 0 claims nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "kernels/common/row_claims.h"

namespace kbench {
namespace {

TEST(RowClaims, NoPercentClaimsNothing) {
  EXPECT_EQ(first_claimed_group(8192, 528, 0, 5280), 8192);
  EXPECT_EQ(first_claimed_group(7, 7, 0, 5280), 7);
}

TEST(RowClaims, GroupsByIndexAreWholeStepsOfTheGrid) {
  for (const int64_t groups : {1, 7, 131, 132, 1000, 2048, 2730, 8192, 65537}) {
    for (const int grid : {1, 3, 132, 264, 528}) {
      if (grid > groups) continue;  // the launchers' grid is at most the groups
      for (const int percent : {1, 40, 60, 100}) {
        const int64_t first = first_claimed_group(groups, grid, percent, 5280);
        EXPECT_EQ(first % grid, 0) << groups << " " << grid << " " << percent;
        EXPECT_GE(first, 0);
        EXPECT_LE(first, groups);
        // The percent asked (or the cap) is claimed, and less than a step of the grid more.
        const int64_t asked = std::min<int64_t>(groups * percent / 100, 5280);
        EXPECT_GE(groups - first, asked) << groups << " " << grid << " " << percent;
        EXPECT_LE(groups - first, asked + 1 + grid - 1) << groups << " " << grid << " " << percent;
      }
    }
  }
}

TEST(RowClaims, TheCapBoundsTheClaims) {
  // 32768 rows of 1K bf16 on 2112 blocks of the H200 (132 SMs, 40 claims each): 60% would be
  // 19660 claims; the cap leaves 5280 and a step of the grid at most.
  const int64_t first = first_claimed_group(32768, 2112, 60, 40 * 132);
  EXPECT_EQ(first, 27456);  // 13 steps of 2112 by index
  EXPECT_LE(32768 - first, 5280 + 2112);
  // 8192 rows of 4K on 528 blocks: 60% (4915) is under the cap.
  EXPECT_EQ(first_claimed_group(8192, 528, 60, 40 * 132), 3168);  // 6 steps by index
}

}  // namespace
}  // namespace kbench
