// Bulk copies from global to shared memory (cp.async.bulk, sm_90+): one thread starts a copy of
// any multiple of 16 bytes, and the copy engine (TMA) moves it without per-thread instructions;
// completion is counted in bytes on a shared-memory barrier (mbarrier) that every reader waits
// on. A row of 16 KB is one instruction instead of one 16-byte cp.async per thread and pack.
//
//   init:     one thread: barrier_init(bar, 1); then barrier_init_fence() and a __syncthreads
//   producer: barrier_expect_bytes(bar, bytes); bulk_copy(dst, src, size, bar) ... (sizes sum
//             to bytes)
//   readers:  barrier_wait(bar, phase), phase = how many times this barrier completed before, & 1
//   reuse:    the readers' reads of a stage must be done (a __syncthreads) before the producer
//             starts the next copy into it.
// Only where KBENCH_BULK_COPY is 1 (sm_90 device code); launchers check the device first.
#pragma once
#include <cstdint>

#include "kernels/common/compat.h"

namespace kbench {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KBENCH_BULK_COPY 1
#else
#define KBENCH_BULK_COPY 0
#endif

#if KBENCH_BULK_COPY
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void barrier_init(uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)),
               "r"(arrivals)
               : "memory");
}

// Makes barrier_init's writes visible to the copy engine (the async proxy).
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// One arrival that also tells the barrier to wait for `bytes` more bytes of copies.
__device__ __forceinline__ void barrier_expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void barrier_wait(uint64_t* bar, uint32_t phase) {
  const uint32_t address = shared_address(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        "  .reg .pred p;\n"
        "  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "  selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(address), "r"(phase)
        : "memory");
  } while (!done);
}

// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory,
// counted on `bar`.
__device__ __forceinline__ void bulk_copy(void* shared, const void* global, uint32_t bytes,
                                          uint64_t* bar) {
#if KBENCH_L2_EVICT_LAST
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1], %2, [%3], %4;\n" ::"r"(shared_address(shared)),
      "l"(global), "r"(bytes), "r"(shared_address(bar)), "l"(kL2EvictLastPolicy)
      : "memory");
#else
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(shared_address(shared)),
      "l"(global), "r"(bytes), "r"(shared_address(bar))
      : "memory");
#endif
}
#endif

}  // namespace kbench
