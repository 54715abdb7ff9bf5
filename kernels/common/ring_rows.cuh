// Rows too wide for two stages (64K bf16: 128 KB) staged through a ring of small chunks
// (bulk copies, kernels/common/bulk_copy.h, sm_90): one block per SM, one row at a time, on all
// the SMs. The staged and bulk skeletons need two stages of a whole row, so past 32K bf16 they
// spread a row over a cluster of 8 blocks, and clusters of 8 fit on 120 of the H200's 132 SMs.
//
// The block's shared memory is a ring of `slots` chunks of kThreads * 16 bytes (one pack per
// thread); a row is kPacks consecutive chunks, so the ring holds the row being read and the first
// slots - kPacks chunks of the next rows (28 slots of 8 KB: a 64K bf16 row and 12 chunks more).
// Each chunk is one bulk copy counted on its own barrier, so a thread reads its pack of chunk k
// as soon as that chunk lands, not when the whole row has. A thread keeps its kPacks packs in
// registers (Op::take) until the outputs; one barrier per row publishes the warps' sums and ends
// the row's reads, and thread 0 then starts the copies that refill the row's chunks with the rows
// kPacks * (slots / kPacks) chunks ahead. Rows go to blocks by index (block b: b, b + grid, ...).
//
// An Op is bulk_rows.cuh's (Type, Params, Sums, Stats, Kept, Held, staged, take, stats, store),
// with one staged tensor, nothing held (Held empty: a 64K row leaves no registers for w) and no
// second round of sums; the launcher takes full rows of kThreads * kPacks packs only. An Op may
// add reload(kept, p), called on each kept pack before its store: kPacks packs a thread is twice
// what bulk_rows.cuh keeps, and ptxas spilled the first conversion to floats it kept alive
// across the barrier (polynorm: 228 bytes a thread) until polynorm_math.h's reload_pack hid it.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "harness/registry.h"
#include "kernels/common/bulk_copy.h"
#include "kernels/common/compat.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"
#include "kernels/common/staged_rows.cuh"
#include "kernels/common/vec.h"

namespace kbench::ring_rows {

// One block of 512 threads per SM: 16 packs a thread at 64K bf16. 1024 threads (8 packs, at most
// 64 registers) spilled 264 bytes a thread.
constexpr int kThreads = 512;
#ifndef KBENCH_RING_LAG
#define KBENCH_RING_LAG 0  // lab: row i's first stores before row i + 1's first take
#endif
constexpr int kMaxSlots = 32;

__device__ __forceinline__ float shfl_xor_sums(float v, int mask) { return shfl_xor(v, mask); }
__device__ __forceinline__ float2 shfl_xor_sums(float2 v, int mask) {
  return make_float2(shfl_xor(v.x, mask), shfl_xor(v.y, mask));
}
__device__ __forceinline__ float4 shfl_xor_sums(float4 v, int mask) {
  return make_float4(shfl_xor(v.x, mask), shfl_xor(v.y, mask), shfl_xor(v.z, mask),
                     shfl_xor(v.w, mask));
}

// The block's sums from its warps' (after the barrier that published them): lane i reads warp
// (i mod kWarps)'s and a butterfly over kWarps lanes adds them. Every thread reading all 16
// warps' float4s instead had ptxas issue the 16 loads at once, which spilled the row's 64 live
// registers. A butterfly gives every lane bitwise the same total.
template <int kWarps, class Sums>
__device__ __forceinline__ Sums add_warps_sums(const Sums* warp_sums) {
  static_assert(is_power_of_two(kWarps) && kWarps <= kWarpSize);
  Sums total = warp_sums[threadIdx.x % kWarps];
#pragma unroll
  for (int mask = 1; mask < kWarps; mask <<= 1) add_to(total, shfl_xor_sums(total, mask));
  return total;
}

template <class Op, int kPacks>
__global__ void __launch_bounds__(kThreads, 1) ring_rows_kernel(typename Op::Params p, int slots) {
#if KBENCH_BULK_COPY
  using T = typename Op::Type;
  using Sums = typename Op::Sums;
  using Kept = typename Op::Kept;
  constexpr int V = Vec16<T>::kSize;
  constexpr int kWarps = kThreads / kWarpSize;
  constexpr int kLag = KBENCH_RING_LAG < kPacks ? KBENCH_RING_LAG : kPacks;
  constexpr uint32_t kChunkBytes = kThreads * sizeof(Vec16<T>);
  constexpr int64_t kChunkElements = int64_t{kThreads} * V;
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ uint64_t full[kMaxSlots];
  __shared__ Sums warp_sums[2][kWarps];

  const int64_t my_rows =
      p.rows > blockIdx.x ? (p.rows - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const int64_t my_chunks = my_rows * kPacks;
  // Thread 0: chunk `seq` of this block (row seq / kPacks, part seq % kPacks) into its slot.
  const auto fill = [&](int64_t seq, int slot) {
    const int64_t row = blockIdx.x + (seq / kPacks) * gridDim.x;
    barrier_expect_bytes(&full[slot], kChunkBytes);
    bulk_copy(ring + static_cast<size_t>(slot) * kChunkBytes,
              Op::staged(p, 0) + row * p.cols + (seq % kPacks) * kChunkElements, kChunkBytes,
              &full[slot]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < slots; ++s) barrier_init(&full[s], 1);
    barrier_init_fence();
    for (int s = 0; s < slots && s < my_chunks; ++s) fill(s, s);
  }
  __syncthreads();  // the barriers' init

  int slot = 0;        // the slot of the next chunk to read
  uint32_t phase = 0;  // how many times that slot has completed, & 1
  // This thread's pack k of the next chunk, once it has landed (its terms added to sums).
  const auto take_next = [&](int k, int64_t row, Sums& sums) -> Kept {
    barrier_wait(&full[slot], phase);
    const Vec16<T> in[1] = {load_vec(
        reinterpret_cast<const T*>(ring + static_cast<size_t>(slot) * kChunkBytes) + threadIdx.x * V)};
    if (++slot == slots) {
      slot = 0;
      phase ^= 1;
    }
    return Op::take(p, in, row, static_cast<int>(k * kChunkElements + threadIdx.x * V), sums);
  };
  Kept kept[kPacks];
  Sums sums{};
  if (my_rows > 0) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) kept[k] = take_next(k, blockIdx.x, sums);
  }
  int parity = 0;  // which warp_sums buffer
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  for (int64_t i = 0; i < my_rows; ++i) {
    const int64_t row = blockIdx.x + i * gridDim.x;
    sums = warp_reduce_sum(sums);
    if (threadIdx.x % kWarpSize == 0) warp_sums[parity][warp] = sums;
    __syncthreads();  // row i's chunks are read (and the warps' sums are out)
    if (threadIdx.x == 0) {
      // Row i's chunks take the chunks `slots` later in this block's order.
      int t = static_cast<int>(i * kPacks % slots);
      for (int k = 0; k < kPacks; ++k) {
        const int64_t next = i * kPacks + k + slots;
        if (next < my_chunks) fill(next, t);
        if (++t == slots) t = 0;
      }
    }
    const typename Op::Stats stats = Op::stats(p, add_warps_sums<kWarps>(warp_sums[parity]));
    parity ^= 1;
    // Row i's outputs, pack by pack, each pack's registers then taking row i + 1's pack: the
    // stores and the next row's sums interleave, as the SM has no other block to overlap them.
    const bool more = i + 1 < my_rows;  // the same in every thread
    Sums next_sums{};
    const typename Op::Held held{};
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      if constexpr (requires { Op::reload(kept[k], p); }) Op::reload(kept[k], p);
      Op::store(p, row, static_cast<int>(k * kChunkElements + threadIdx.x * V), kept[k], held, stats);
      if (k >= kLag && more) kept[k - kLag] = take_next(k - kLag, row + gridDim.x, next_sums);
      // Keeps ptxas from computing several packs' outputs before their stores: without it the
      // 16-pack kernel spilled 24 bytes a thread (a warp-converged point: free here).
      __syncwarp();
    }
#pragma unroll
    for (int k = kPacks - kLag; k < kPacks; ++k) {
      if (more) kept[k] = take_next(k, row + gridDim.x, next_sums);
    }
    sums = next_sums;
  }
#endif
}

// Launches Op's rows and returns true, or returns false (launching nothing) where the ring does
// not apply: devices without bulk copies, unaligned rows, and rows that are not kThreads * 8 or
// kThreads * 16 packs (32K or 64K bf16 / fp16, 16K or 32K fp32 at 512 threads).
template <class Op>
bool launch_ring_rows(const typename Op::Params& p, const LaunchArgs& a) {
  using T = typename Op::Type;
  static_assert(Op::kStaged == 1 && !Op::kSecondRound && std::is_empty_v<typename Op::Held>,
                "the ring takes one staged tensor, no second round and nothing held");
  const staged_rows::DeviceLimits limits = staged_rows::device_limits();
  if (!limits.clusters || !Op::aligned(p) || p.rows < 1) return false;
  const int64_t packs = p.cols / Vec16<T>::kSize;
  const auto run = [&](auto packs_per_thread) -> bool {
    constexpr int kPacks = decltype(packs_per_thread)::value;
    constexpr size_t kChunkBytes = size_t{kThreads} * sizeof(Vec16<T>);
    const auto kernel = ring_rows_kernel<Op, kPacks>;
    // The shared memory the block may have past the kernel's own (barriers, warp sums: 1 KB).
    const size_t spare = limits.shared_bytes > 1024 ? limits.shared_bytes - 1024 : 0;
    const int slots = static_cast<int>(std::min<size_t>(kMaxSlots, spare / kChunkBytes));
    if (slots < kPacks + kPacks / 2) return false;  // not half a row ahead
    static std::atomic<uint64_t> done{0};
    allow_shared_bytes(reinterpret_cast<const void*>(kernel), slots * kChunkBytes, done);
    const int grid = static_cast<int>(std::min<int64_t>(p.rows, std::max(a.sm_count, 1)));
    kernel<<<grid, kThreads, slots * kChunkBytes, stream_of(a)>>>(p, slots);
    KB_GPU_CHECK_LAUNCH();
    return true;
  };
  if (packs == int64_t{kThreads} * 16) return run(std::integral_constant<int, 16>{});
  if (packs == int64_t{kThreads} * 8) return run(std::integral_constant<int, 8>{});
  return false;
}

}  // namespace kbench::ring_rows
