#include "harness/calibrate.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "harness/buffer.h"
#include "harness/gpu_kernels.h"
#include "harness/metrics.h"
#include "harness/stats.h"
#include "harness/timing.h"
#include "harness/version.h"

namespace kbench {
namespace {

struct CopyMethod {
  std::string name;
  bool is_memcpy;
  std::function<void(void* dst, const void* src, size_t bytes)> copy;
};

// Median GB/s of `runs` copies moving 2 * bytes each (read + write), L2 flushed before each.
double median_copy_gbps(const std::function<void()>& copy, const std::function<void()>& flush,
                        size_t bytes, int runs, gpuStream_t stream) {
  EventPair events(stream);
  std::vector<double> gbps;
  for (int i = 0; i < runs + 2; ++i) {  // two warm-up runs
    flush();  // still running when the copy is enqueued: launch latency stays out
    const double ms = events.time_ms(copy);
    if (i >= 2) gbps.push_back(2.0 * bytes / (ms * 1e-3) / 1e9);
  }
  return summarize(gbps).median;
}

}  // namespace

TimingFloor measure_timing_floor(const DeviceInfo& device, gpuStream_t stream, int runs) {
  DeviceBuffer flush_buffer(flush_buffer_bytes(device.l2_bytes));
  KB_GPU_CHECK(gpuMemsetAsync(flush_buffer.get(), 1, flush_buffer.bytes(), stream));
  EventPair events(stream);
  auto median_us = [&](const std::function<void()>& body) {
    std::vector<double> us;
    for (int i = 0; i < runs + 2; ++i) {  // two warm-up runs
      launch_flush_l2(flush_buffer.get(), flush_buffer.bytes(), device.sm_count, stream);
      const double t = events.time_ms(body) * 1e3;
      if (i >= 2) us.push_back(t);
    }
    return summarize(us).median;
  };
  TimingFloor floor;
  floor.events_us = median_us([] {});
  floor.empty_kernel_us = median_us([&] { launch_spin(0, stream); });
  return floor;
}

Ceiling measure_copy_ceiling(const DeviceInfo& device, gpuStream_t stream,
                             const CopyCeilingOptions& options) {
  size_t max_bytes = std::min(options.max_buffer_bytes, device_free_bytes() / 4);
  max_bytes -= max_bytes % 16;
  DeviceBuffer src(max_bytes), dst(max_bytes);
  DeviceBuffer flush_buffer(flush_buffer_bytes(device.l2_bytes));
  KB_GPU_CHECK(gpuMemsetAsync(src.get(), 0x3c, max_bytes, stream));
  KB_GPU_CHECK(gpuMemsetAsync(flush_buffer.get(), 1, flush_buffer.bytes(), stream));
  auto flush = [&] {
    launch_flush_l2(flush_buffer.get(), flush_buffer.bytes(), device.sm_count, stream);
  };
  auto staged_copy = [&](const char* name, size_t row_bytes) {
    return CopyMethod{name, false, [&, row_bytes](void* d, const void* s, size_t n) {
                        if (!launch_copy_staged(d, s, n, row_bytes, device.sm_count, stream)) {
                          launch_copy(d, s, n, device.sm_count, stream);
                        }
                      }};
  };

  const std::vector<CopyMethod> methods = {
      {"device-to-device memcpy", true,
       [&](void* d, const void* s, size_t n) {
         KB_GPU_CHECK(gpuMemcpyAsync(d, s, n, gpuMemcpyDeviceToDevice, stream));
       }},
      {"grid-stride copy kernel", false,
       [&](void* d, const void* s, size_t n) { launch_copy(d, s, n, device.sm_count, stream); }},
      // One 16-byte pack a thread, a block of 4 KB: blocks start in order as others finish, so
      // the memory in use at once stays a few MB wide. On an H200 it copies as fast as
      // cudaMemcpy (two calibrations: 4301-4304 against 4299-4301 GB/s), where the other copy
      // kernels' best read 4165 against 4278 (kernels/rmsnorm/NOTES.md, fiftieth session).
      {"tiled copy kernel x1", false,
       [&](void* d, const void* s, size_t n) { launch_copy_tiled(d, s, n, 1, stream); }},
      {"tiled copy kernel x4", false,
       [&](void* d, const void* s, size_t n) { launch_copy_tiled(d, s, n, 4, stream); }},
      {"tiled copy kernel x8", false,
       [&](void* d, const void* s, size_t n) { launch_copy_tiled(d, s, n, 8, stream); }},
      {"tiled streaming copy kernel x4", false,
       [&](void* d, const void* s, size_t n) { launch_copy_tiled(d, s, n, -1, stream); }},
      {"tiled evict-last copy kernel x1", false,
       [&](void* d, const void* s, size_t n) { launch_copy_tiled_evict_last(d, s, n, stream); }},
      // Rows of 4 KB (16 per block) and 32 KB (1-2 per block), as short and long forward rows
      // run. The calibration sizes are multiples of 32 KB; elsewhere it falls back to the grid
      // stride copy rather than time nothing.
      staged_copy("staged copy kernel (cp.async), 4 KB rows", 4096),
      staged_copy("staged copy kernel (cp.async), 32 KB rows", 32768),
  };

  // The first copies after a quiet spell measured a few percent slow (NOTES.md: 3093 GB/s,
  // then 3192 within minutes): copy for a while first.
  {
    const size_t bytes = size_t{64} << 20;
    EventPair events(stream);
    const double ms = std::max(1e-3, events.time_ms([&] { methods[0].copy(dst.get(), src.get(), bytes); }));
    const int copies = static_cast<int>(std::min(1e5, options.warm_up_ms / ms));
    for (int i = 0; i < copies; ++i) methods[i % methods.size()].copy(dst.get(), src.get(), bytes);
    KB_GPU_CHECK(gpuStreamSynchronize(stream));
  }

  Ceiling c;
  c.device_slug = device.slug;
  c.device = device.name;
  c.timestamp = utc_timestamp();
  c.kbench_version = kVersion;
  for (int pass = 0; pass < options.passes; ++pass) {
    for (size_t bytes = size_t{64} << 20; bytes <= max_bytes; bytes *= 4) {
      for (const CopyMethod& m : methods) {
        const double gbps = median_copy_gbps([&] { m.copy(dst.get(), src.get(), bytes); }, flush,
                                             bytes, options.runs, stream);
        double& best = m.is_memcpy ? c.memcpy_gbps : c.kernel_copy_gbps;
        best = std::max(best, gbps);
        if (gbps > c.copy_gbps) {
          c.copy_gbps = gbps;
          c.method = m.name + ", " + std::to_string(bytes >> 20) + " MiB, cold L2, median of " +
                     std::to_string(options.runs);
        }
      }
    }
  }
  return c;
}

}  // namespace kbench
