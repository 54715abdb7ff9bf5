#include "harness/metrics.h"

#include <cmath>
#include <ctime>
#include <limits>

namespace kbench {

void fill_timing_and_work(ResultRow& row, const SampleStats& us, double bytes, double flops,
                          double peak_gbps, double ceiling_gbps) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  row.samples = us.count;
  row.median_us = us.median;
  row.mean_us = us.mean;
  row.min_us = us.min;
  row.p10_us = us.p10;
  row.p90_us = us.p90;
  row.stddev_us = us.stddev;
  row.noise_pct = us.noise_pct;
  row.bytes = bytes;
  row.flops = flops;
  const double seconds = us.median * 1e-6;
  row.gbps = us.count > 0 && seconds > 0 ? bytes / seconds / 1e9 : nan;
  row.tflops = us.count > 0 && seconds > 0 ? flops / seconds / 1e12 : nan;
  row.intensity = bytes > 0 ? flops / bytes : nan;
  row.peak_gbps = peak_gbps > 0 ? peak_gbps : nan;
  row.peak_pct = peak_gbps > 0 ? 100.0 * row.gbps / peak_gbps : nan;
  row.ceiling_gbps = ceiling_gbps > 0 ? ceiling_gbps : nan;
  row.ceiling_pct = ceiling_gbps > 0 ? 100.0 * row.gbps / ceiling_gbps : nan;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace kbench
