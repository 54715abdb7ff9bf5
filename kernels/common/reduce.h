// Warp and block reductions that take the warp width from the target: 32 on NVIDIA, 64 on
// AMD CDNA. Nothing here assumes 32.
#pragma once
#include <type_traits>

#include "kernels/common/compat.h"

namespace kbench {

// Teams, sums per warp and butterflies come in powers of two; a team that is not one (3, 5 or 6
// warps) is a fitted team, reduced without a butterfly over its warps.
__host__ __device__ constexpr bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

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
  static constexpr int kCount = K;
  float v[K];
};
template <class V>
inline constexpr bool is_row_sums_v = false;
template <int K>
inline constexpr bool is_row_sums_v<RowSums<K>> = true;

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
// must call it (block-uniform control flow), or with kBlock (below) every thread of the team.
// `scratch` holds blockDim.x / kWarpSize values of shared memory. Callers alternate between two
// scratch buffers from one call to the next, so one barrier per call suffices: a buffer is
// rewritten only after the following call's barrier, which every reader of it has passed. The
// summation order is fixed, so all threads of a team get bitwise the same result.
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

// K sums over a warp, each lane ending with one of them: lane L with sum L / (kWarpSize / K)
// (K a power of two, at most kWarpSize). log2(K) halving steps, in each of which a lane keeps
// one half of its sums and adds its partner's share of them, while the partner does the same
// with the other half; then the usual butterfly over the lanes that hold the same sum. For
// K = 8: 7 shuffles and adds before the butterfly's 2, against 40 for 8 butterflies. Every
// lane holding sum k gets bitwise the same value (the butterfly adds a + b on one side and
// b + a on the other).
template <int K>
__device__ __forceinline__ float warp_reduce_scatter(const float (&in)[K]) {
  static_assert(is_power_of_two(K) && K <= kWarpSize, "K a power of two, at most the warp");
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  float v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = in[k];
#pragma unroll
  for (int n = K, mask = kWarpSize / 2; n > 1; n /= 2, mask /= 2) {
    const bool upper = (lane & mask) != 0;
#pragma unroll
    for (int i = 0; i < n / 2; ++i) {
      const float keep = upper ? v[i + n / 2] : v[i];
      const float send = upper ? v[i] : v[i + n / 2];
      v[i] = keep + shfl_xor(send, mask);
    }
  }
  float sum = v[0];
#pragma unroll
  for (int mask = kWarpSize / (2 * K); mask > 0; mask /= 2) sum += shfl_xor(sum, mask);
  return sum;
}

// The power of two of sums a scattered reduction works on: K, or K padded with zero sums.
__host__ __device__ constexpr int padded_sums(int k) {
  int p = 1;
  while (p < k) p *= 2;
  return p;
}

// team_reduce_sum (below) for several sums at once, with far fewer instructions per thread: the
// warp's sums scattered over its lanes (warp_reduce_scatter; K padded with zeros to a power of
// two P), then, past the barrier, lane L adds sum L % P over the team's warps (nothing where
// that is a padded sum) and every lane gathers the K totals from lanes 0..K-1 by shuffles.
// Per thread, for 8 sums over 8 warps, ~60 instructions against ~160 (5 K shuffles and adds,
// then all 8 x 8 entries read and added). Same contract and summation order in every thread of
// a team, so all get bitwise the same sums. It pays where the arithmetic bounds a kernel: same
// run, H200, bf16, polynorm_bwd 75.9 / 78.8% of the copy ceiling at 5120 / 16384 against 68.4 /
// 72.2, layernorm_bwd 79.7 against 75.7 at 5120; the H100 within ±1.5 (kernels/rmsnorm/NOTES.md,
// eleventh session).
// With one or two sums (P <= KBENCH_SCATTER_CROSS) a lane would add a whole team's entries in
// one chain (16 at 512 threads), so there the lanes holding sum k share them, one entry each
// (kReads where the team has more warps than a warp has such lanes), and a butterfly over those
// lanes adds the shares. H200, bf16, two calls: layernorm +1.3 to +1.9 at 8K, +0.4 to +1.1 at
// 16K, -0.7 to +0.8 elsewhere; float2 with every lane adding all its entries instead lost 0.8-2.1
// at 8K / 16K (means of three). With 4 or 8 sums the chains are short and the butterfly lost:
// fused_mul_polynorm_bwd -1.1 at 32K, fused_mul_polynorm's register rows -1.5 at 4K (eighty-first
// session, NOTES).
// team_reduce_sum takes it for float2, float4 and RowSums of 2 or more sums, the plain reduction
// for a single float (so does staged_rows.cuh for a float2 holding one sum: kOneSum); polynorm's
// register rows call it for their three. Lab knobs for scripts/ab-flags.sh:
// KBENCH_SCATTER_SUMS=0 keeps the plain reduction everywhere, =1 scatters only 4, 8, ... sums
// (float2 plain), =3 single floats too (with the butterfly: rmsnorm's register rows -4 to -5 at
// 4K / 16K); KBENCH_SCATTER_CROSS=0 never takes the butterfly, =8 takes it for 4 and 8 sums too.
#ifndef KBENCH_SCATTER_SUMS
#define KBENCH_SCATTER_SUMS 2
#endif
#ifndef KBENCH_SCATTER_CROSS
#define KBENCH_SCATTER_CROSS 2
#endif
template <int kTeam, int kBlock, int K>
__device__ __forceinline__ RowSums<K> team_reduce_scatter_sum(const RowSums<K>& v,
                                                              RowSums<K>* scratch) {
  constexpr int P = padded_sums(K);
  static_assert(P <= kWarpSize, "at most a sum per lane");
  constexpr int kSpan = kWarpSize / P;  // lanes holding each sum after the scatter
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  float in[P];
#pragma unroll
  for (int k = 0; k < P; ++k) in[k] = k < K ? v.v[k] : 0.f;
  const float mine = warp_reduce_scatter<P>(in);  // sum lane / kSpan of the warp
  float total = mine;
  int source_stride = kSpan;  // lane j * source_stride holds total j
  if constexpr (kTeam > kWarpSize) {
    constexpr int kTeamWarps = kTeam / kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (lane % kSpan == 0 && (K == P || lane / kSpan < K)) scratch[warp].v[lane / kSpan] = mine;
    if constexpr (kBlock == 0) {
      __syncthreads();
    } else {
      team_barrier<kTeam, kBlock>();
    }
    const int first = warp / kTeamWarps * kTeamWarps;
    const int k = lane % P;
    if constexpr (P <= KBENCH_SCATTER_CROSS && is_power_of_two(kTeamWarps)) {
      constexpr int kSharers = kTeamWarps < kSpan ? kTeamWarps : kSpan;  // lanes per sum
      constexpr int kReads = kTeamWarps / kSharers;
      const int share = lane / P % kSharers;  // warps share, share + kSharers, ...
      total = 0.f;  // a padded sum's lanes read nothing (and are never gathered)
      if (K == P || k < K) {
        total = scratch[first + share].v[k];
#pragma unroll
        for (int i = 1; i < kReads; ++i) total += scratch[first + share + i * kSharers].v[k];
      }
#pragma unroll
      for (int mask = P; mask < P * kSharers; mask *= 2) total += shfl_xor(total, mask);
    } else if (K == P || k < K) {  // every entry in turn: 4 or more sums, or a fitted team
      total = scratch[first].v[k];
#pragma unroll
      for (int i = 1; i < kTeamWarps; ++i) total += scratch[first + i].v[k];
    }
    source_stride = 1;
  }
  RowSums<K> out;
#pragma unroll
  for (int j = 0; j < K; ++j) out.v[j] = shfl(total, j * source_stride);
  return out;
}

// kBlock = 0: the barrier is __syncthreads (any block size). kBlock = the block size: each team
// waits at its own barrier (team_barrier), so the teams of a block need not call together and
// one team's sums wait while another team computes; only the teams' loops must agree on the
// number of calls (HIP's fallback is a block barrier). team_reduce_sum takes the scattered
// reduction above for two or more sums, the plain one below for one.
template <int kTeam, int kBlock, class V>
__device__ __forceinline__ V team_reduce_sum_plain(V v, V* scratch) {
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

// How many sums of V the scattered reduction takes: float2's 2, float4's 4, RowSums' K where K is
// at least 2; 0 (the plain reduction) for a single float. KBENCH_SCATTER_SUMS (above) moves the
// line.
template <class V>
__host__ __device__ constexpr int scattered_sums() {
  if constexpr (!KBENCH_SCATTER_SUMS) {
    return 0;
  } else if constexpr (std::is_same_v<V, float4>) {
    return 4;
  } else if constexpr (KBENCH_SCATTER_SUMS >= 2 && std::is_same_v<V, float2>) {
    return 2;
  } else if constexpr (KBENCH_SCATTER_SUMS >= 3 && std::is_same_v<V, float>) {
    return 1;
  } else if constexpr (is_row_sums_v<V>) {
    if constexpr (KBENCH_SCATTER_SUMS >= 2) return V::kCount >= 2 ? V::kCount : 0;
    return V::kCount >= 4 && is_power_of_two(V::kCount) ? V::kCount : 0;
  } else {
    return 0;
  }
}

template <int kTeam, int kBlock = 0, class V>
__device__ __forceinline__ V team_reduce_sum(V v, V* scratch) {
  if constexpr (scattered_sums<V>() == 0) {
    return team_reduce_sum_plain<kTeam, kBlock>(v, scratch);
  } else if constexpr (std::is_same_v<V, float4>) {
    const RowSums<4> s = team_reduce_scatter_sum<kTeam, kBlock, 4>(
        RowSums<4>{{v.x, v.y, v.z, v.w}}, reinterpret_cast<RowSums<4>*>(scratch));
    return make_float4(s.v[0], s.v[1], s.v[2], s.v[3]);
  } else if constexpr (std::is_same_v<V, float2>) {
    const RowSums<2> s = team_reduce_scatter_sum<kTeam, kBlock, 2>(
        RowSums<2>{{v.x, v.y}}, reinterpret_cast<RowSums<2>*>(scratch));
    return make_float2(s.v[0], s.v[1]);
  } else if constexpr (std::is_same_v<V, float>) {
    return team_reduce_scatter_sum<kTeam, kBlock, 1>(RowSums<1>{{v}},
                                                     reinterpret_cast<RowSums<1>*>(scratch))
        .v[0];
  } else {
    return team_reduce_scatter_sum<kTeam, kBlock, V::kCount>(v, scratch);
  }
}

}  // namespace kbench
