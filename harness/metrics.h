// Turns a measurement into the row's work columns: declare bytes and flops, get GB/s,
// TFLOP/s, intensity and % of peak / ceiling for free.
#pragma once
#include <string>

#include "harness/result.h"
#include "harness/stats.h"

namespace kbench {

// Fills samples..noise_pct from `us` and gbps..ceiling_pct from bytes/flops and the peaks
// (a peak or ceiling of 0 means unknown: its columns become NaN).
void fill_timing_and_work(ResultRow& row, const SampleStats& us, double bytes, double flops,
                          double peak_gbps, double ceiling_gbps);

// "2026-11-22T02:30:00Z"
std::string utc_timestamp();

}  // namespace kbench
