// Device helpers the harness itself launches: L2 flush, a busy-wait that hides launch
// latency, a vectorized copy (for calibration) and a pattern fill (for NaN poisoning).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/compat.h"

namespace kbench {

// Reads every byte of `buffer` (bytes a multiple of 16) so the L2 holds only clean lines of
// it afterwards: a cold start for the next kernel without dirty lines left to write back.
void launch_flush_l2(const void* buffer, size_t bytes, int sm_count, gpuStream_t stream);

// The flush buffer's size for an L2 of `l2_bytes`: twice the L2, at least 64 MiB, so none of
// the previous data survives.
inline size_t flush_buffer_bytes(size_t l2_bytes) {
  return 2 * l2_bytes > (size_t{64} << 20) ? 2 * l2_bytes : size_t{64} << 20;
}

// Keeps the GPU busy for about `cycles` SM clock cycles so the work queued behind it starts
// back to back, with the host's launch latency out of the measured interval.
void launch_spin(int64_t cycles, gpuStream_t stream);

// dst = src over `bytes` (a multiple of 16) with 16-byte accesses, two ways: a persistent
// grid-stride loop (four loads in flight per thread), and one tile of `unroll` vectors (1, 4
// or 8) per thread with a grid as large as the data (the shape of framework elementwise
// kernels); unroll < 0 selects the tiled copy with streaming (evict-first) loads and stores.
void launch_copy(void* dst, const void* src, size_t bytes, int sm_count, gpuStream_t stream);
void launch_copy_tiled(void* dst, const void* src, size_t bytes, int unroll, gpuStream_t stream);
// The tiled copy at one pack a thread with its loads under an L2 evict_last policy (the policy's
// lines stay in L2 longest; NVIDIA only, plain loads on HIP).
void launch_copy_tiled_evict_last(void* dst, const void* src, size_t bytes, gpuStream_t stream);
// What `createpolicy.fractional.L2::evict_last.b64 p, 1.0` returns on the current GPU (0 where
// there is no such policy: HIP, before sm_80). The copies take the constant kL2EvictLastPolicy
// instead; a GPU test checks the two agree.
uint64_t created_l2_evict_last_policy();
// The same copy through shared memory with the staged-row kernels' pipeline (async copies,
// several rows of `row_bytes` in flight per team; kernels/common/staged_rows.cuh): rows of
// 4 KB run 16 to a block, 32 KB one or two, as the forwards' rows do. Returns false, copying
// nothing, where it does not apply: bytes not a multiple of row_bytes, row_bytes not a
// multiple of 16 or wider than a block holds, unaligned pointers, or a GPU without the shared
// memory it needs (HIP).
bool launch_copy_staged(void* dst, const void* src, size_t bytes, size_t row_bytes, int sm_count,
                        gpuStream_t stream);

// How many clusters of `cluster` blocks, each of `threads` threads and `shared_bytes` of dynamic
// shared memory, fit on the current GPU at once: 0 where clusters do not exist (before sm_90,
// HIP) or the blocks do not fit. The staged kernels' rows over 4 or 8 blocks run in such
// clusters, on that many times `cluster` SMs, and GPUs of one kind may differ in it (an H200
// and an H100 each held 15 clusters of 8 blocks of 200 KB: 120 of 132 SMs). `kbench devices`
// prints it.
int resident_clusters(int cluster, int threads, size_t shared_bytes);

// Fills `count` elements of `element_bytes` (2 or 4) with `pattern` (its low bytes).
void launch_fill(void* dst, size_t count, int element_bytes, uint32_t pattern,
                 gpuStream_t stream);

}  // namespace kbench
