// RAII device memory. Allocation failure throws OutOfDeviceMemory so a sweep can skip the
// point and go on; every other runtime error throws RuntimeFailure.
#pragma once
#include <cstddef>
#include <utility>

#include "kernels/common/compat.h"

namespace kbench {

struct OutOfDeviceMemory : RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Free device memory in bytes.
size_t device_free_bytes();

}  // namespace kbench
