// Measured ceilings per device (from `kbench calibrate`), kept in a small CSV keyed by the
// device slug so every result row can carry ceiling_gbps and ceiling_pct.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace kbench {

struct Ceiling {
  std::string device_slug, device, timestamp, kbench_version, method;
  double copy_gbps = 0;         // best of the two below: the speed of light for bandwidth
  double memcpy_gbps = 0;       // runtime device-to-device copy (bytes read + written)
  double kernel_copy_gbps = 0;  // kbench's 16-byte copy kernel (bytes read + written)
  double gemm_bf16_tflops = 0;  // vendor BLAS bf16 GEMM, fp32 accumulate; 0 if not measured
};

// $KBENCH_CEILINGS, else results/ceilings.csv under the working directory.
std::string default_ceilings_path();
std::vector<Ceiling> load_ceilings(const std::string& path);  // missing file: empty
std::optional<Ceiling> find_ceiling(const std::string& path, const std::string& slug);
// Replaces the row of the same slug (or appends), creating the file and its folder.
void store_ceiling(const std::string& path, const Ceiling& c);

}  // namespace kbench
