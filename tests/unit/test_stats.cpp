// Timing statistics; expected values are what numpy gives (np.percentile default method,
// np.std(ddof=1)).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/stats.h"

namespace kbench {
namespace {

TEST(Stats, PercentileInterpolatesLikeNumpy) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 1.75);   // np.percentile([1,2,3,4], 25)
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile({5}, 37), 5);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
}

TEST(Stats, SummarizeOneToTen) {
  // Shuffled: summarize sorts.
  const SampleStats s = summarize({7, 3, 10, 1, 9, 2, 8, 4, 6, 5});
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_NEAR(s.stddev, 3.0276503540974917, 1e-12);  // sqrt(82.5 / 9)
  EXPECT_NEAR(s.noise_pct, 100 * 3.0276503540974917 / 5.5, 1e-10);
}

TEST(Stats, SummarizeOddCountMedianIsMiddle) {
  const SampleStats s = summarize({10, 30, 20});
  EXPECT_DOUBLE_EQ(s.median, 20);
  EXPECT_DOUBLE_EQ(s.mean, 20);
  EXPECT_DOUBLE_EQ(s.stddev, 10);  // ddof=1: sqrt((100 + 0 + 100) / 2)
  EXPECT_DOUBLE_EQ(s.noise_pct, 50);
}

TEST(Stats, SingleSampleHasZeroSpread) {
  const SampleStats s = summarize({12.5});
  EXPECT_EQ(s.count, 1);
  EXPECT_DOUBLE_EQ(s.median, 12.5);
  EXPECT_DOUBLE_EQ(s.p10, 12.5);
  EXPECT_DOUBLE_EQ(s.p90, 12.5);
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(s.noise_pct, 0);
}

TEST(Stats, EmptyIsNan) {
  const SampleStats s = summarize({});
  EXPECT_EQ(s.count, 0);
  for (double v : {s.median, s.mean, s.min, s.max, s.p10, s.p90, s.stddev, s.noise_pct}) {
    EXPECT_TRUE(std::isnan(v));
  }
}

TEST(Stats, StddevStableAroundLargeMean) {
  // A naive sum-of-squares formula loses these digits entirely.
  const SampleStats s = summarize({1e9 + 1, 1e9 + 2, 1e9 + 3});
  EXPECT_NEAR(s.stddev, 1.0, 1e-6);
}

}  // namespace
}  // namespace kbench
