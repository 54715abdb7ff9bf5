#include "harness/calibrate.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "harness/buffer.h"
#include "harness/gpu_kernels.h"
#include "harness/metrics.h"
#include "harness/stats.h"
#include "harness/version.h"

namespace kbench {
namespace {

// Median GB/s of `runs` timed calls of `copy`, moving 2 * bytes each (read + write).
double median_copy_gbps(const std::function<void()>& copy, size_t bytes, int runs,
                        gpuStream_t stream) {
  gpuEvent_t start, stop;
  KB_GPU_CHECK(gpuEventCreate(&start));
  KB_GPU_CHECK(gpuEventCreate(&stop));
  std::vector<double> gbps;
  for (int i = 0; i < runs + 2; ++i) {  // two warm-up runs
    KB_GPU_CHECK(gpuEventRecord(start, stream));
    copy();
    KB_GPU_CHECK(gpuEventRecord(stop, stream));
    KB_GPU_CHECK(gpuEventSynchronize(stop));
    float ms = 0;
    KB_GPU_CHECK(gpuEventElapsedTime(&ms, start, stop));
    if (i >= 2) gbps.push_back(2.0 * bytes / (ms * 1e-3) / 1e9);
  }
  (void)gpuEventDestroy(start);
  (void)gpuEventDestroy(stop);
  return summarize(gbps).median;
}

}  // namespace

Ceiling measure_copy_ceiling(const DeviceInfo& device, gpuStream_t stream,
                             const CopyCeilingOptions& options) {
  // Two buffers, each at most a quarter of free memory, a multiple of 16 bytes.
  size_t bytes = std::min(options.buffer_bytes, device_free_bytes() / 4);
  bytes -= bytes % 16;
  DeviceBuffer src(bytes), dst(bytes);
  KB_GPU_CHECK(gpuMemsetAsync(src.get(), 0x3c, bytes, stream));

  Ceiling c;
  c.device_slug = device.slug;
  c.device = device.name;
  c.timestamp = utc_timestamp();
  c.kbench_version = kVersion;
  c.method = "median of " + std::to_string(options.runs) + " copies of " +
             std::to_string(bytes >> 20) + " MiB";
  c.memcpy_gbps = median_copy_gbps(
      [&] { KB_GPU_CHECK(gpuMemcpyAsync(dst.get(), src.get(), bytes, gpuMemcpyDeviceToDevice, stream)); },
      bytes, options.runs, stream);
  c.kernel_copy_gbps = median_copy_gbps(
      [&] { launch_copy(dst.get(), src.get(), bytes, device.sm_count, stream); }, bytes,
      options.runs, stream);
  c.copy_gbps = std::max(c.memcpy_gbps, c.kernel_copy_gbps);
  return c;
}

}  // namespace kbench
