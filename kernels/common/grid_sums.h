// Sums over a group of blocks through global memory: the same two halves as cluster.h's
// cluster_send_sum / cluster_wait_sum, for rows over several blocks that are not a hardware
// cluster ("grid rows", staged_rows.cuh).
//
// Why: on an H100 only 15 clusters of 8 and 30 clusters of 4 of the staged kernels' one-block-
// per-SM blocks are resident, so rows over 4 or 8 blocks ran on 120 of the 132 SMs; as groups
// of plain blocks they run on 132 (33 groups of 4) or 128 (16 of 8), and at M·N = 32M the rows
// of a step then divide the rows evenly more often (512 rows of 65536 over 32 teams: 16 full
// steps, against 17 full and one of 2 rows over 30). A group's blocks must all be resident at
// once (each waits for the others' sums): the launcher takes at most one block per SM, and a
// wait that never ends traps (a launch failure, exit 3) rather than hanging.
//
// How: every float of a sum travels with a 32-bit tag in one 64-bit word, which is written and
// read whole (single-copy atomic), so a reader knows the value is this call's without a fence
// or a flag: the tag is the launch's epoch (a host counter, different for every launch) and the
// parity of the call's use of its buffer. kGridBuffers buffers rotate over a team's calls, as in
// cluster.h (8: two calls in flight, pipelined rows). A buffer is written again only after
// every block of the group has read its previous use (the same argument as cluster.h's), so a
// reader sees either the value it waits for or the buffer's previous use, whose parity differs;
// words of earlier launches carry another epoch. Every block adds the ranks in the same order
// (grid_wait_sum), so all get bitwise the same sum.
#pragma once
#include <atomic>
#include <cstdint>

#include "kernels/common/compat.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"

namespace kbench {

constexpr int kGridBuffers = 8;
// The slots' extent: blocks of one launch, teams per block, floats per sum (RowSums<8>).
constexpr int64_t kGridMaxBlocks = 1024;
constexpr int64_t kGridMaxTeams = 4;  // teams of 128 threads or more
constexpr int64_t kGridMaxFloats = 8;
constexpr int64_t kGridSlotWords = kGridMaxBlocks * kGridMaxTeams * kGridBuffers * kGridMaxFloats;
// After the slots, one word per block for grid_arrive / grid_wait_all.
constexpr size_t kGridSlotBytes = size_t{kGridSlotWords + kGridMaxBlocks} * sizeof(uint64_t);

// What a grid-rows kernel needs: the slots (one allocation per device, shared by every kernel
// of the process: kbench runs one kernel at a time on a device) and this launch's epoch.
struct GridSums {
  uint64_t* slots = nullptr;
  uint32_t epoch = 0;
};

// Host: the device's slots (allocated on first use, outside any timed launch: the first launch
// of a point is its correctness check) and a fresh epoch, 1 to 2^31 - 1.
inline GridSums grid_sums_for_launch() {
  static std::atomic<int64_t> cache[64];
  void* slots = zeroed_once_per_device(cache, kGridSlotBytes);  // tag 0: no epoch's
  static std::atomic<uint32_t> launches{0};
  const uint32_t epoch = launches.fetch_add(1) % 0x7fffffffu + 1;
  return GridSums{static_cast<uint64_t*>(slots), epoch};
}

template <class V>
inline constexpr int kFloatsOf = static_cast<int>(sizeof(V) / sizeof(float));

// A 64-bit word written and read whole at GPU scope: relaxed, or (kOrdered) a release store /
// an acquire load, which also order the thread's (and, after a block barrier, its block's)
// other accesses around it (grid_arrive / grid_wait_all).
template <bool kOrdered = false>
__device__ __forceinline__ void store_word(uint64_t* p, uint64_t word) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  __atomic_store_n(p, word, kOrdered ? __ATOMIC_RELEASE : __ATOMIC_RELAXED);
#else
  if constexpr (kOrdered) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(word) : "memory");
  } else {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(word) : "memory");
  }
#endif
}
template <bool kOrdered = false>
__device__ __forceinline__ uint64_t load_word(const uint64_t* p) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  return __atomic_load_n(p, kOrdered ? __ATOMIC_ACQUIRE : __ATOMIC_RELAXED);
#else
  uint64_t word;
  if constexpr (kOrdered) {
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(word) : "l"(p) : "memory");
  } else {
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(word) : "l"(p) : "memory");
  }
  return word;
#endif
}

// A wait for another block gives up after kMaxPolls polls (an L2 round trip each: seconds): that
// block never ran (not every block was resident). The kernel traps: a launch failure (exit 3),
// not a hang. KBENCH_MAX_POLLS raises the limit for builds run under compute-sanitizer's
// racecheck (scripts/sanitize.sh), which slows shared-memory accesses so much that the blocks
// being waited for take longer than 2^22 polls to arrive.
#ifndef KBENCH_MAX_POLLS
#define KBENCH_MAX_POLLS (1u << 22)
#endif
constexpr uint32_t kMaxPolls = KBENCH_MAX_POLLS;
__device__ __forceinline__ void trap_kernel() {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  __builtin_trap();
#else
  __trap();
#endif
}

__device__ __forceinline__ uint32_t grid_tag(uint32_t epoch, uint32_t call) {
  return epoch << 1 | ((call / kGridBuffers) & 1);
}

// The words of call `call` of team `group_team` (a group's teams numbered group * kTeams + team):
// rank r's float w at [r * W + w].
template <int kCluster, class V>
__device__ __forceinline__ uint64_t* grid_slots(const GridSums& g, int group_team, uint32_t call) {
  constexpr int W = kFloatsOf<V>;
  return g.slots + (group_team * kGridBuffers + static_cast<int>(call % kGridBuffers)) * (kCluster * W);
}

// This block's v (the same in every thread of the team) for the team's call `call`: lane 0
// writes one tagged word per float.
template <int kCluster, class V>
__device__ __forceinline__ void grid_send_sum(const V& v, const GridSums& g, int group_team, int rank,
                                              int lane, uint32_t call) {
  static_assert(kFloatsOf<V> <= kGridMaxFloats);
  constexpr int W = kFloatsOf<V>;
  if (lane != 0) return;
  uint64_t* const mine = grid_slots<kCluster, V>(g, group_team, call) + rank * W;
  const uint64_t tag = uint64_t{grid_tag(g.epoch, call)} << 32;
  const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
  for (int w = 0; w < W; ++w) store_word(mine + w, tag | __float_as_uint(f[w]));
}

// The sum over the group of the team's call `call`, with few registers and instructions: each
// lane of a warp waits for one or two of the kCluster x W words (rank r's float w at r * W + w,
// so lane l holds float l % W), the lanes holding float w add theirs by a butterfly (the same
// order in every block: a + b == b + a bitwise, so every lane and block gets the same sum), and
// lane w shares float w's total with the warp.
template <int kCluster, class V>
__device__ __forceinline__ V grid_wait_sum(const GridSums& g, int group_team, uint32_t call) {
  constexpr int W = kFloatsOf<V>;
  constexpr int kWords = kCluster * W;
  constexpr int kSpan = kWords < kWarpSize ? kWords : kWarpSize;  // lanes that hold words
  constexpr int kPerLane = (kWords + kSpan - 1) / kSpan;
  static_assert(is_power_of_two(W) && kSpan % W == 0, "a butterfly over whole ranks");
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const uint32_t tag = grid_tag(g.epoch, call);
  // Does lane hold word i * kSpan + lane? (Only a last, partial round of a group of 10 or 12
  // blocks' float4s leaves lanes out.)
  const auto holds = [lane](int i) { return kWords % kSpan == 0 || i * kSpan + lane < kWords; };
  float v = 0.f;
  if (lane < kSpan) {
    const uint64_t* const slots = grid_slots<kCluster, V>(g, group_team, call) + lane;
    uint64_t words[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) words[i] = holds(i) ? load_word(slots + i * kSpan) : 0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (!holds(i)) continue;
      for (uint32_t polls = 0; static_cast<uint32_t>(words[i] >> 32) != tag; ++polls) {
        if (polls == kMaxPolls) trap_kernel();
        words[i] = load_word(slots + i * kSpan);
      }
      const float f = __uint_as_float(static_cast<uint32_t>(words[i]));
      v = i == 0 ? f : v + f;
    }
  }
#pragma unroll
  for (int mask = W; mask < kSpan; mask *= 2) v += shfl_xor(v, mask);
  V sum;
  float* f = reinterpret_cast<float*>(&sum);
#pragma unroll
  for (int w = 0; w < W; ++w) f[w] = shfl(v, w);
  return sum;
}

// A grid-wide barrier in two halves (all blocks resident at once, as for the sums above):
// grid_arrive publishes that this block has written what others will read, grid_wait_all waits
// until every block of the launch has (one thread per block polls, all at once) and then sees
// all of it. A block's word holds the epoch of the last launch that arrived there: a word of an
// earlier launch never holds this one's, so nothing is reset. Release and acquire at GPU scope,
// with the block's barriers around them, order every thread's writes before the reads.

__device__ __forceinline__ void grid_arrive(const GridSums& g) {
  __syncthreads();  // every thread's writes before thread 0's release
  if (threadIdx.x == 0) store_word<true>(g.slots + kGridSlotWords + blockIdx.x, g.epoch);
}

__device__ __forceinline__ void grid_wait_all(const GridSums& g) {
  const uint64_t* const arrived = g.slots + kGridSlotWords;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    for (uint32_t polls = 0; load_word<true>(arrived + b) != g.epoch; ++polls) {
      if (polls == kMaxPolls) trap_kernel();
    }
  }
  __syncthreads();
}

}  // namespace kbench
