// Measures a device's copy-bandwidth ceiling: the best of the runtime's device-to-device copy
// and kbench's 16-byte copy kernel, each the median of several runs over large buffers,
// counting bytes read + bytes written.
#pragma once
#include "harness/ceilings.h"
#include "harness/device.h"
#include "kernels/common/compat.h"

namespace kbench {

struct CopyCeilingOptions {
  size_t buffer_bytes = size_t{1} << 30;  // per buffer; shrunk to fit free memory
  int runs = 20;
};

// Fills copy_gbps, memcpy_gbps, kernel_copy_gbps and the identity fields of a Ceiling.
Ceiling measure_copy_ceiling(const DeviceInfo& device, gpuStream_t stream,
                             const CopyCeilingOptions& options = {});

}  // namespace kbench
