#include "harness/buffer.h"

#include <string>

namespace kbench {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const gpuError_t err = gpuMalloc(&ptr_, bytes);
  if (err == gpuErrorMemoryAllocation) {
    (void)gpuGetLastError();  // allocation failure is not sticky; clear it
    ptr_ = nullptr;
    throw OutOfDeviceMemory("out of device memory allocating " +
                            std::to_string(bytes / 1e9) + " GB");
  }
  if (err != gpuSuccess) throw_gpu_error(err, "gpuMalloc", __FILE__, __LINE__);
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) (void)gpuFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) (void)gpuFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = o.bytes_;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  KB_GPU_CHECK(gpuMemcpy(ptr_, host, bytes, gpuMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  KB_GPU_CHECK(gpuMemcpy(host, ptr_, bytes, gpuMemcpyDeviceToHost));
}

size_t device_free_bytes() {
  size_t free_bytes = 0, total = 0;
  KB_GPU_CHECK(gpuMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

}  // namespace kbench
