// Summary statistics of timing samples, matching numpy (percentile's default "linear" method,
// std with ddof=1) so numbers agree with what a Python notebook computes from the same data.
#include "harness/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kbench {

double percentile(std::vector<double> sorted, double q) {
  if (sorted.empty() || std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 100.0);
  // Rank q/100 * (n-1), interpolated between the two closest samples.
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  if (samples.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.median = s.mean = s.min = s.max = s.p10 = s.p90 = s.stddev = s.noise_pct = nan;
    return s;
  }
  std::sort(samples.begin(), samples.end());
  const double n = static_cast<double>(samples.size());
  s.count = static_cast<int64_t>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.median = percentile(samples, 50);
  s.p10 = percentile(samples, 10);
  s.p90 = percentile(samples, 90);

  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / n;

  // Two-pass variance: stable for samples that differ little around a large mean.
  double sq = 0;
  for (double v : samples) sq += (v - s.mean) * (v - s.mean);
  s.stddev = samples.size() > 1 ? std::sqrt(sq / (n - 1)) : 0.0;

  // Timings are positive; a zero mean (all-zero samples) has no meaningful spread ratio.
  s.noise_pct = s.mean != 0 ? 100.0 * s.stddev / s.mean : 0.0;
  return s;
}

}  // namespace kbench
