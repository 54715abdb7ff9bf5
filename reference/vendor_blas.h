// The vendor BLAS (cuBLAS on CUDA; hipBLAS is not packaged on Debian, so HIP builds report
// it unavailable): used by `kbench calibrate` for the matrix-rate ceiling.
#pragma once
#include <string>

#include "harness/device.h"

namespace kbench {

struct GemmRate {
  double tflops = 0;     // 0 when unavailable
  std::string note;      // why unavailable, or what was measured
};

// bf16 inputs, fp32 accumulate, m = n = k = size, random data, median of several runs.
GemmRate measure_bf16_gemm_rate(const DeviceInfo& device, int size = 8192);

}  // namespace kbench
