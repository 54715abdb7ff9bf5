// The copy kernels `kbench calibrate` times must copy every byte: the copy ceiling is the best
// of them, so one that skipped part of its buffer would raise every row's ceiling and lower
// every % of it. Fresh buffers, a byte pattern with no period the kernels' strides share, and
// the destination poisoned first.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/buffer.h"
#include "harness/device.h"
#include "harness/gpu_kernels.h"
#include "kernels/common/compat.h"

namespace kbench {
namespace {

std::vector<unsigned char> pattern(size_t bytes) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  return v;
}

// Copies `bytes` with `copy` into a poisoned buffer and returns the first differing offset, or
// -1 when the copy is exact (and the bytes past `bytes` are untouched).
int64_t first_wrong_byte(size_t bytes, const std::function<void(void*, const void*)>& copy) {
  const size_t slack = 4096;
  const std::vector<unsigned char> src_host = pattern(bytes);
  DeviceBuffer src(bytes), dst(bytes + slack);
  src.upload(src_host.data(), bytes);
  KB_GPU_CHECK(gpuMemset(dst.get(), 0xa5, bytes + slack));
  copy(dst.get(), src.get());
  KB_GPU_CHECK(gpuDeviceSynchronize());
  std::vector<unsigned char> out(bytes + slack);
  dst.download(out.data(), bytes + slack);
  for (size_t i = 0; i < bytes; ++i) {
    if (out[i] != src_host[i]) return static_cast<int64_t>(i);
  }
  for (size_t i = bytes; i < bytes + slack; ++i) {
    if (out[i] != 0xa5) return static_cast<int64_t>(i);
  }
  return -1;
}

TEST(CalibrationCopies, EveryMethodCopiesEveryByte) {
  const int sm_count = query_device(0).sm_count;
  KB_GPU_CHECK(gpuSetDevice(0));
  // 200 rows of 16 KB, more than one per block; and a size that is not a
  // multiple of any kernel's tile (16 bytes is the unit they all require).
  for (size_t bytes : {size_t{200} * 16384, size_t{3} * 1000 * 1000 + 16}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    EXPECT_EQ(first_wrong_byte(bytes, [&](void* d, const void* s) {
                launch_copy(d, s, bytes, sm_count, nullptr);
              }), -1) << "grid-stride copy";
    for (int unroll : {1, 4, 8, -1}) {
      EXPECT_EQ(first_wrong_byte(bytes, [&](void* d, const void* s) {
                  launch_copy_tiled(d, s, bytes, unroll, nullptr);
                }), -1) << "tiled copy, unroll " << unroll;
    }
    EXPECT_EQ(first_wrong_byte(bytes, [&](void* d, const void* s) {
                launch_copy_tiled_evict_last(d, s, bytes, nullptr);
              }), -1) << "tiled evict-last copy";
  }
}

// The bulk copies and the evict-last copy pass kL2EvictLastPolicy as their L2 cache hint, a
// constant, where createpolicy would make it at each copy: a constant that is not the policy
// would be a silently different hint, or an invalid one.
TEST(CalibrationCopies, EvictLastPolicyConstantIsCreatepolicys) {
  KB_GPU_CHECK(gpuSetDevice(0));
  const uint64_t created = created_l2_evict_last_policy();
  if (created == 0) GTEST_SKIP() << "no L2 cache policies on this GPU";
  EXPECT_EQ(created, kL2EvictLastPolicy) << std::hex << "createpolicy returned 0x" << created;
}

TEST(CalibrationCopies, StagedCopyCopiesWholeRowsOrNothing) {
  const int sm_count = query_device(0).sm_count;
  KB_GPU_CHECK(gpuSetDevice(0));
  // Rows a warp, a few warps and the whole block take; 1 row, and more rows than blocks.
  for (size_t row_bytes : {size_t{16}, size_t{4096}, size_t{16400}, size_t{32768}}) {
    for (size_t rows : {size_t{1}, size_t{1001}}) {
      const size_t bytes = rows * row_bytes;
      EXPECT_EQ(first_wrong_byte(bytes, [&](void* d, const void* s) {
                  if (!launch_copy_staged(d, s, bytes, row_bytes, sm_count, nullptr)) {
                    launch_copy(d, s, bytes, sm_count, nullptr);  // e.g. HIP
                  }
                }), -1) << rows << " rows of " << row_bytes << " B";
    }
  }
  // Not a whole number of rows, or rows not of whole 16-byte packs: it declines.
  const size_t odd = size_t{200} * 4096 + 16;
  DeviceBuffer src(odd), dst(odd);
  EXPECT_FALSE(launch_copy_staged(dst.get(), src.get(), odd, 4096, sm_count, nullptr));
  EXPECT_FALSE(launch_copy_staged(dst.get(), src.get(), 4104 * 2, 4104, sm_count, nullptr));
}

}  // namespace
}  // namespace kbench
