// 16-byte copies from global to shared memory that do not pass through registers and complete
// asynchronously (cp.async, sm_80+): a thread issues a batch, closes it with async_commit(),
// and async_wait<n>() returns once at most n of its batches are still in flight. A thread sees
// its own copies after the wait; other threads need a barrier as well. Kernels use them to
// load the next row while they compute on this one, without holding it in registers.
// Elsewhere (HIP, host passes) they are ordinary copies, complete at once: correct, not
// overlapped.
#pragma once
#include <cstdint>

#include "kernels/common/compat.h"

namespace kbench {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KBENCH_ASYNC_COPY 1
#else
#define KBENCH_ASYNC_COPY 0
#endif

// A copy's destination: the 32-bit shared-window address cp.async takes (a plain pointer
// where the copies are ordinary ones). Convert a thread's first slot once (shared_slot) and add
// byte offsets to it: converting at every copy costs ~4 instructions (the conversion reads the
// block's id again each time).
#if KBENCH_ASYNC_COPY
using SharedSlot = uint32_t;
__device__ __forceinline__ SharedSlot shared_slot(void* shared) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(shared));
}
#else
using SharedSlot = char*;
__device__ __forceinline__ SharedSlot shared_slot(void* shared) {
  return static_cast<char*>(shared);
}
#endif

// The async copies load under the L2 evict_last policy, as the bulk copies do (compat.h): on one
// H200, A/B in one call, the staged kernels gained up to 3.8 points of the ceiling (layernorm's,
// polynorm's and the fused forwards' staged rows 1-3 points at most N; rmsnorm's within noise
// but at 32K / 64K; kernels/rmsnorm/NOTES.md, sixtieth session). With that hint ptxas 13.0
// folded a loop stage's uniform offset into some copies (LDGSTS [R+UR], the form
// scripts/ldgsts_forms.py counts) and dropped their policy descriptor: illegal instructions.
// staged_rows.cuh passes such offsets through per_thread_slot; then no copy of the tree takes
// that form (ctests async_copy_forms and async_copy_forms_ops; scripts/sass_desc_check.py on
// every GPU build).
// KBENCH_ASYNC_EVICT_LAST=0 builds them without the hint or the shuffle (for A/B).
#ifndef KBENCH_ASYNC_EVICT_LAST
#define KBENCH_ASYNC_EVICT_LAST 1
#endif
// The copy's PTX for both callers below: %0 shared, %1 global, %2 the caller's own third operand
// (async_copy16_if's predicate; async_copy16 passes an unused 0), %3 the policy.
#if KBENCH_ASYNC_EVICT_LAST
#define KBENCH_CP_ASYNC_CG "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %3;"
#define KBENCH_CP_ASYNC_POLICY , "l"(kL2EvictLastPolicy)
#else
#define KBENCH_CP_ASYNC_CG "cp.async.cg.shared.global [%0], [%1], 16;"
#define KBENCH_CP_ASYNC_POLICY
#endif

// `slot` in a per-thread register: an identity shuffle, whose result the compiler cannot prove
// equal across the warp, so ptxas does not fold it into a copy as a uniform offset.
__device__ __forceinline__ SharedSlot per_thread_slot(SharedSlot slot) {
#if KBENCH_ASYNC_COPY
  return __shfl_sync(__activemask(), slot, threadIdx.x & 31);
#else
  return slot;
#endif
}

// 16 bytes, both addresses 16-byte aligned. `.cg`: cached in L2 only (data read once).
__device__ __forceinline__ void async_copy16(SharedSlot shared, const void* global) {
#if KBENCH_ASYNC_COPY
  asm volatile(KBENCH_CP_ASYNC_CG "\n" ::"r"(shared), "l"(global), "n"(0) KBENCH_CP_ASYNC_POLICY
               : "memory");
#else
  *reinterpret_cast<int4*>(shared) = *static_cast<const int4*>(global);
#endif
}

// async_copy16 where `valid`, nothing otherwise, without a branch: the predicate is set and
// used inside one asm statement. Where a C++ `if` guarded each copy, the compiler sank each
// copy's address arithmetic into its branch and redid the shared-window conversion there
// (polynorm's forward at 4096 bf16, 8 copies per row: 128 instructions staging a row, 64 so).
__device__ __forceinline__ void async_copy16_if(bool valid, SharedSlot shared, const void* global) {
#if KBENCH_ASYNC_COPY
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %2, 0;\n"
      "  @p " KBENCH_CP_ASYNC_CG "\n"
      "}\n" ::"r"(shared),
      "l"(global), "r"(static_cast<int>(valid)) KBENCH_CP_ASYNC_POLICY
      : "memory");
#else
  if (valid) *reinterpret_cast<int4*>(shared) = *static_cast<const int4*>(global);
#endif
}

__device__ __forceinline__ void async_commit() {
#if KBENCH_ASYNC_COPY
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int kPending>
__device__ __forceinline__ void async_wait() {
#if KBENCH_ASYNC_COPY
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace kbench
