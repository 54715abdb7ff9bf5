// Summary statistics of timing samples.
#pragma once
#include <cstdint>
#include <vector>

namespace kbench {

struct SampleStats {
  int64_t count = 0;
  double median = 0, mean = 0, min = 0, max = 0, p10 = 0, p90 = 0, stddev = 0;
  // 100 * stddev / mean: the coefficient of variation in percent.
  double noise_pct = 0;
};

// Percentiles use linear interpolation between closest ranks (numpy's default).
// An empty input gives count == 0 and NaN everywhere else.
SampleStats summarize(std::vector<double> samples);
double percentile(std::vector<double> sorted, double q);  // q in [0, 100]; input sorted

}  // namespace kbench
