// Warp and block reductions that take the warp width from the target: 32 on NVIDIA, 64 on
// AMD CDNA. Nothing here assumes 32.
#pragma once
#include "kernels/common/compat.h"

namespace kbench {

#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
#if defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#else
inline constexpr int kWarpSize = 64;  // host pass; CDNA default
#endif
template <class T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  return __shfl_xor(v, mask, kWarpSize);
}
template <class T>
__device__ __forceinline__ T shfl(T v, int src_lane) {
  return __shfl(v, src_lane, kWarpSize);
}
#else
inline constexpr int kWarpSize = 32;
template <class T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask, kWarpSize);
}
template <class T>
__device__ __forceinline__ T shfl(T v, int src_lane) {
  return __shfl_sync(0xffffffffu, v, src_lane, kWarpSize);
}
#endif

// Every lane ends with the sum over the warp.
__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) v += shfl_xor(v, mask);
  return v;
}

// Two sums at once (a norm backward needs sum(x^2) and sum(g*x) of the same row): the two
// shuffle chains interleave, so they cost about as much latency as one.
__device__ __forceinline__ float2 warp_reduce_sum(float2 v) {
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) {
    v.x += shfl_xor(v.x, mask);
    v.y += shfl_xor(v.y, mask);
  }
  return v;
}

// Four sums at once (polynorm's sum(x^2), sum(x^4), sum(x^6)), interleaved like float2's.
__device__ __forceinline__ float4 warp_reduce_sum(float4 v) {
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) {
    v.x += shfl_xor(v.x, mask);
    v.y += shfl_xor(v.y, mask);
    v.z += shfl_xor(v.z, mask);
    v.w += shfl_xor(v.w, mask);
  }
  return v;
}

// K sums at once, K interleaved butterfly chains (polynorm: three in its forward, seven in its
// backward). Whole float4s of them are 16-byte aligned: the staged kernels send them to the
// other blocks of a cluster 16 bytes at a time (cluster.h).
template <int K>
struct alignas(K % 4 == 0 ? 16 : 4) RowSums {
  float v[K];
};

template <int K>
__device__ __forceinline__ RowSums<K> warp_reduce_sum(RowSums<K> s, int width = kWarpSize) {
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) {
    if (mask >= width) continue;
#pragma unroll
    for (int k = 0; k < K; ++k) s.v[k] += shfl_xor(s.v[k], mask);
  }
  return s;
}

// Every thread of the block ends with the block's sum. `scratch` holds kMaxWarps floats of
// shared memory; blockDim.x must be a multiple of kWarpSize. Safe to call repeatedly with
// the same scratch (it synchronizes before reuse).
inline constexpr int kMaxWarps = 1024 / kWarpSize;

__device__ __forceinline__ float block_reduce_sum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  v = warp_reduce_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = lane < warps ? scratch[lane] : 0.f;
  return warp_reduce_sum(total);
}

// ----- teams -------------------------------------------------------------------------------
// A "team" is kTeam consecutive threads of a block (one warp, several warps, or the whole
// block) that share one row. team_reduce_sum gives every thread of a team the team's sum.
// One warp needs shuffles only; a larger team adds one barrier, so EVERY thread of the block
// must call it (block-uniform control flow), or with kBlock (below) every thread of the team. `scratch` holds blockDim.x / kWarpSize values of
// shared memory. Callers alternate between two scratch buffers from one call to the next, so
// one barrier per call suffices: a buffer is rewritten only after the following call's
// barrier, which every reader of it has passed. The summation order is fixed, so all threads
// of a team get bitwise the same result.
__device__ __forceinline__ void add_to(float& acc, float v) { acc += v; }
__device__ __forceinline__ void add_to(float2& acc, float2 v) {
  acc.x += v.x;
  acc.y += v.y;
}
__device__ __forceinline__ void add_to(float4& acc, float4 v) {
  acc.x += v.x;
  acc.y += v.y;
  acc.z += v.z;
  acc.w += v.w;
}

template <int K>
__device__ __forceinline__ void add_to(RowSums<K>& acc, const RowSums<K>& v) {
#pragma unroll
  for (int k = 0; k < K; ++k) acc.v[k] += v.v[k];
}

// A barrier over this thread's team only, so that the other teams of the block run on: named
// barrier 1 + team on NVIDIA (0 is __syncthreads'), the whole block where there are none (HIP)
// or the team is the block. kBlock is the block size; at most 15 teams of two or more warps.
template <int kTeam, int kBlock>
__device__ __forceinline__ void team_barrier() {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  __syncthreads();
#else
  if constexpr (kTeam == kBlock) {
    __syncthreads();
  } else {
    static_assert(kBlock / kTeam <= 15, "named barriers 1..15");
    const int team = static_cast<int>(threadIdx.x) / kTeam;
    asm volatile("bar.sync %0, %1;\n" ::"r"(team + 1), "n"(kTeam) : "memory");
  }
#endif
}

// kBlock = 0: the barrier is __syncthreads (any block size). kBlock = the block size: each team
// waits at its own barrier (team_barrier), so the teams of a block need not call together and
// one team's sums wait while another team computes; only the teams' loops must agree on the
// number of calls (HIP's fallback is a block barrier).
template <int kTeam, int kBlock = 0, class V>
__device__ __forceinline__ V team_reduce_sum(V v, V* scratch) {
  static_assert(kTeam % kWarpSize == 0, "a team is a whole number of warps");
  v = warp_reduce_sum(v);
  if constexpr (kTeam == kWarpSize) {
    return v;
  } else {
    constexpr int kTeamWarps = kTeam / kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    if (threadIdx.x % kWarpSize == 0) scratch[warp] = v;
    if constexpr (kBlock == 0) {
      __syncthreads();
    } else {
      team_barrier<kTeam, kBlock>();
    }
    const int first = warp / kTeamWarps * kTeamWarps;
    V total = scratch[first];
#pragma unroll
    for (int i = 1; i < kTeamWarps; ++i) add_to(total, scratch[first + i]);
    return total;
  }
}

}  // namespace kbench
