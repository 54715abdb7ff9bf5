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

}  // namespace kbench
