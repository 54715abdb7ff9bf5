// One measured point: exactly the CSV schema of DESIGN.md, in column order. Every reporter
// (console table, CSV, JSON) is fed these records.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kbench {

struct ResultRow {
  // identity
  std::string kbench_version, timestamp, device, device_slug, arch;
  int sm_count = 0;
  std::string driver, runtime, op, impl, dtype, shape;
  int64_t m = 0, n = 0, k = 0;
  std::string l2;  // cold | hot
  // timing (microseconds); NaN where not measured
  int64_t samples = 0;
  double median_us = 0, mean_us = 0, min_us = 0, p10_us = 0, p90_us = 0, stddev_us = 0;
  double noise_pct = 0, sm_clock_mhz = 0;
  // work
  double bytes = 0, flops = 0, gbps = 0, tflops = 0, intensity = 0;
  double peak_gbps = 0, peak_pct = 0, ceiling_gbps = 0, ceiling_pct = 0;
  // correctness
  double max_abs_err = 0, max_rel_err = 0, rel_l2_err = 0, atol = 0, rtol = 0;
  std::string status;  // pass | fail | skip | error
  std::string note;
};

// Column names in schema order.
const std::vector<std::string>& csv_columns();
// Whether a column holds a number (int or double) rather than text; false for unknown names.
// JSON output writes these as numbers.
bool is_numeric_column(const std::string& name);
// The row's fields as text, in csv_columns() order. Doubles that are NaN become "".
std::vector<std::string> row_fields(const ResultRow& r);
// Inverse of row_fields given a header: unknown columns are ignored, missing ones keep
// their defaults. Throws UsageError on a number that does not parse (naming column).
ResultRow row_from_fields(const std::vector<std::string>& header,
                          const std::vector<std::string>& fields);

}  // namespace kbench
