// Host-side helpers every kernel file's launchers use.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/errors.h"
#include "harness/registry.h"
#include "kernels/common/compat.h"

namespace kbench {

inline gpuStream_t stream_of(const LaunchArgs& a) { return static_cast<gpuStream_t>(a.stream); }

// Host and device (kernels size their loops with it too).
__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Block-per-row kernels loop over rows with a grid stride, so the grid never needs more than
// this many blocks (gridDim.x allows 2^31 - 1; this just keeps launches modest).
constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;

inline int row_blocks(int64_t rows) { return static_cast<int>(std::min(rows, kMaxRowBlocks)); }

// The most blocks a persistent grid of at most max_blocks_per_sm blocks per SM launches for
// `rows` rows: never more blocks than rows, at least one. Backward kernels write one partial
// per block and size their workspace with it.
inline int64_t max_persistent_blocks(int64_t rows, int sm_count, int max_blocks_per_sm) {
  return std::max<int64_t>(
      1, std::min<int64_t>(rows, int64_t{std::max(sm_count, 1)} * max_blocks_per_sm));
}

// The harness sizes the workspace from the impl's own workspace() function; this catches the
// two drifting apart before a kernel writes past the end.
inline void require_workspace(const LaunchArgs& a, size_t bytes, const std::string& who) {
  if (a.workspace_bytes < bytes || (bytes > 0 && a.workspace == nullptr)) {
    throw RuntimeFailure(who + ": workspace of " + std::to_string(a.workspace_bytes) +
                         " bytes, launcher needs " + std::to_string(bytes));
  }
}

// For .rejects() and .workspace() of impls that take every shape and need no scratch.
inline std::optional<std::string> accepts_any_shape(const Shape&, DType) { return std::nullopt; }
inline size_t no_workspace(const Shape&, DType, int) { return 0; }

// f() (an int64_t, never 0) computed once per device and kept in the caller's `cache` (a static,
// one per kernel or question): launchers ask the runtime outside the timed launch path.
template <class F>
int64_t once_per_device(std::atomic<int64_t> (&cache)[64], F&& f) {
  int device = 0;
  KB_GPU_CHECK(gpuGetDevice(&device));
  std::atomic<int64_t>& entry = cache[device & 63];
  int64_t value = entry.load();
  if (value == 0) {
    value = f(device);
    entry.store(value);
  }
  return value;
}

// A device buffer of `bytes`, allocated and zeroed once per device (`cache`: the caller's
// static), and zeroed before a kernel on any stream first uses it.
inline void* zeroed_once_per_device(std::atomic<int64_t> (&cache)[64], size_t bytes) {
  return reinterpret_cast<void*>(once_per_device(cache, [bytes](int) {
    void* p = nullptr;
    KB_GPU_CHECK(gpuMalloc(&p, bytes));
    KB_GPU_CHECK(gpuMemset(p, 0, bytes));
    KB_GPU_CHECK(gpuDeviceSynchronize());
    return reinterpret_cast<int64_t>(p);
  }));
}

// Sets one of a kernel's attributes, once per device: `done` is the caller's flag for this
// kernel and attribute, one bit per device.
inline void set_attribute_once(const void* kernel, gpuFuncAttribute attribute, int value,
                               std::atomic<uint64_t>& done) {
  int device = 0;
  KB_GPU_CHECK(gpuGetDevice(&device));
  const uint64_t bit = uint64_t{1} << (device & 63);
  if (done.load() & bit) return;
  KB_GPU_CHECK(gpuFuncSetAttribute(kernel, attribute, value));
  done.fetch_or(bit);
}

// Opts a kernel into `bytes` of dynamic shared memory. Needed past 48 KB of static and dynamic
// together, so any kernel with dynamic shared memory opts in (48 KB dynamic plus a few static
// bytes failed to launch without it).
inline void allow_shared_bytes(const void* kernel, size_t bytes, std::atomic<uint64_t>& done) {
  if (bytes == 0) return;
  set_attribute_once(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes), done);
}

// Asks that an SM give all it can to shared memory for `kernel` (the carveout; a hint): the
// kernels of several blocks per SM need that many blocks' shared memory.
inline void prefer_shared_carveout(const void* kernel, std::atomic<uint64_t>& done) {
  set_attribute_once(kernel, gpuFuncAttributePreferredSharedMemoryCarveout, 100, done);
}

}  // namespace kbench
