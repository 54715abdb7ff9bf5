// Measures a device's copy-bandwidth ceiling, counting bytes read + bytes written: the best,
// over buffer sizes from 64 MiB to 1 GiB and two passes, of the runtime's device-to-device
// copy and six 16-byte copy kernels (the last two through shared memory, as the staged-row
// kernels move data), each the median of several runs with the L2 flushed before each (as
// kbench times kernels), after half a second of copies to wake the GPU up. The best of many
// honest copies, so no kernel can beat it by picking a friendlier size or method.
#pragma once
#include "harness/ceilings.h"
#include "harness/device.h"
#include "kernels/common/compat.h"

namespace kbench {

struct CopyCeilingOptions {
  size_t max_buffer_bytes = size_t{1} << 30;  // per buffer; shrunk to fit free memory
  int runs = 20;   // timed copies per method, size and pass
  int passes = 2;  // over all methods and sizes; a method's best median counts
  double warm_up_ms = 500;
};

// Fills copy_gbps, memcpy_gbps, kernel_copy_gbps, method and the identity fields.
Ceiling measure_copy_ceiling(const DeviceInfo& device, gpuStream_t stream,
                             const CopyCeilingOptions& options = {});

// What kbench's timing adds to every point, whatever the kernel: the device time between the
// two events of a sample with nothing between them, and with one empty kernel, each after an
// L2 flush as kbench times (medians). A point's time includes about the second; the ceiling's
// copy pays it too, spread over more bytes where its best copy is larger.
struct TimingFloor {
  double events_us = 0;
  double empty_kernel_us = 0;
};
TimingFloor measure_timing_floor(const DeviceInfo& device, gpuStream_t stream, int runs = 200);

}  // namespace kbench
