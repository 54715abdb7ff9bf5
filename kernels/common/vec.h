// One 16-byte vector type for any element type (llm.c's Packed128 idea): 8 bf16/fp16 or 4
// fp32 per load, so every memory instruction moves the widest unit the hardware has.
#pragma once
#include <cstdint>

#include "kernels/common/dtypes.h"

namespace kbench {

template <class T>
struct alignas(16) Vec16 {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

// Caller guarantees 16-byte alignment of p + i.
template <class T>
__device__ __forceinline__ Vec16<T> load_vec(const T* p) {
  Vec16<T> r;
  *reinterpret_cast<int4*>(&r) = *reinterpret_cast<const int4*>(p);
  return r;
}

// How a register-row kernel loads the row it reads once (load_vec_stream; CUDA):
//   1  under the L2 evict_last policy (compat.h's kL2EvictLastPolicy), as the async and bulk
//      copies load (default);
//   0  ld.global.cs (evict first), the loads until the sixty-first session;
//   2  plain ld.global;
//   3  (lab) as 1 and not allocated in L1 (ld.global.L1::no_allocate): the rows' x no longer
//      evicts from L1 what the kernel re-reads there per row (w where a kernel does not hold
//      it: rmsnorm's rows of two warps or more at 4 packs, every register row at 8 packs).
//      One H200, bf16, means of two passes against 1: rmsnorm's v4 -0.5 to +0.3 at 1K-32K,
//      v3 -2.3 / -1.4 at 8K / 1K; layernorm's v2 / v3 -1.2 to +1.0: not taken.
// One H200, one call, bf16 default sweep, two runs each, points of the copy ceiling, the hint
// against .cs / plain, means over N: rmsnorm's v3 +5.2 / +1.7, v4 +4.2 / +1.0; polynorm's v2
// +5.0 / +2.3, v3 +2.4 / +1.1; fused_mul_polynorm's v2 +5.0 / +0.4, v3 +4.6 / +0.5 (98.9-99.5 at
// 1K-8K); layernorm's v2 +3.5 / +0.3, v3 +0.7 / -1.3; fused_add_rmsnorm's v2 +2.9 / +1.5
// (kernels/rmsnorm/NOTES.md, sixty-first session). Staged and bulk impls: within noise.
#ifndef KBENCH_ROW_LOAD_HINT
#define KBENCH_ROW_LOAD_HINT 1
#endif
#if KBENCH_ROW_LOAD_HINT == 3
#define KBENCH_ROW_LOAD_L1 ".L1::no_allocate"
#else
#define KBENCH_ROW_LOAD_L1 ""
#endif

// A load of data the kernel reads once (x of a row held in registers). The hinted form is a
// plain asm statement (no volatile, no memory clobber), free to move as a load does: what it
// reads no thread writes while the kernel runs. Before sm_80 (no L2 cache hints) it is .cs.
template <class T>
__device__ __forceinline__ Vec16<T> load_vec_stream(const T* p) {
  Vec16<T> r;
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  // The builtin takes clang vector types only, not HIP's int4 struct.
  typedef int native_int4 __attribute__((ext_vector_type(4)));
  *reinterpret_cast<native_int4*>(&r) =
      __builtin_nontemporal_load(reinterpret_cast<const native_int4*>(p));
#elif (KBENCH_ROW_LOAD_HINT == 1 || KBENCH_ROW_LOAD_HINT == 3) && defined(__CUDA_ARCH__) && \
    __CUDA_ARCH__ >= 800
  uint4 words;
  asm("ld.global" KBENCH_ROW_LOAD_L1 ".L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(words.x), "=r"(words.y), "=r"(words.z), "=r"(words.w)
      : "l"(p), "l"(kL2EvictLastPolicy));
  *reinterpret_cast<uint4*>(&r) = words;
#elif KBENCH_ROW_LOAD_HINT == 2
  r = load_vec(p);
#else
  *reinterpret_cast<int4*>(&r) = __ldcs(reinterpret_cast<const int4*>(p));
#endif
  return r;
}

template <class T>
__device__ __forceinline__ void store_vec(T* p, const Vec16<T>& v) {
  *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(&v);
}

// Streaming store: data not read again soon, evict it first (st.global.cs on CUDA).
template <class T>
__device__ __forceinline__ void store_vec_stream(T* p, const Vec16<T>& v) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  typedef int native_int4 __attribute__((ext_vector_type(4)));
  __builtin_nontemporal_store(*reinterpret_cast<const native_int4*>(&v),
                              reinterpret_cast<native_int4*>(p));
#else
  __stcs(reinterpret_cast<int4*>(p), *reinterpret_cast<const int4*>(&v));
#endif
}

// All-zero bits: 0.0 in fp32, fp16 and bf16 alike.
template <class T>
__device__ __forceinline__ Vec16<T> zero_vec() {
  Vec16<T> r;
  *reinterpret_cast<int4*>(&r) = make_int4(0, 0, 0, 0);
  return r;
}

// ----- pairs --------------------------------------------------------------------------------
// Elements 2j and 2j+1 of a pack as a float2, and back (rounded to nearest even). Kernels that
// keep packs in registers should touch them through these: accessed one 16-bit element at a
// time, the compiler gives every element its own 32-bit register (ptxas showed twice the
// registers and spills); accessed by pairs, two elements share a register.
__device__ __forceinline__ float2 get_pair(const Vec16<float>& v, int j) {
  return make_float2(v.v[2 * j], v.v[2 * j + 1]);
}
__device__ __forceinline__ void set_pair(Vec16<float>& v, int j, float2 f) {
  v.v[2 * j] = f.x;
  v.v[2 * j + 1] = f.y;
}
__device__ __forceinline__ float2 get_pair(const Vec16<half_t>& v, int j) {
  return __half22float2(reinterpret_cast<const __half2*>(v.v)[j]);
}
__device__ __forceinline__ void set_pair(Vec16<half_t>& v, int j, float2 f) {
  reinterpret_cast<__half2*>(v.v)[j] = __floats2half2_rn(f.x, f.y);
}
// bf16 -> float is a 16-bit shift: done on the 32-bit word it stays two integer ops per pair
// (sm_90's cvt.f32.bf16 splits the word into 16-bit registers first, which cost ptxas spills).
__device__ __forceinline__ float2 get_pair(const Vec16<bf16_t>& v, int j) {
  const uint32_t word = reinterpret_cast<const uint32_t*>(v.v)[j];
  return make_float2(__uint_as_float(word << 16), __uint_as_float(word & 0xffff0000u));
}
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
__device__ __forceinline__ void set_pair(Vec16<bf16_t>& v, int j, float2 f) {
  reinterpret_cast<uint32_t*>(v.v)[j] = static_cast<uint32_t>(from_float<bf16_t>(f.x).bits) |
                                        static_cast<uint32_t>(from_float<bf16_t>(f.y).bits) << 16;
}
#else
__device__ __forceinline__ void set_pair(Vec16<bf16_t>& v, int j, float2 f) {
  reinterpret_cast<__nv_bfloat162*>(v.v)[j] = __floats2bfloat162_rn(f.x, f.y);
}
#endif

// A pack's elements already converted to float (values held across rows, converted once).
template <int N>
struct alignas(16) FloatPack {
  float v[N];
};
template <int N>
__device__ __forceinline__ float2 get_pair(const FloatPack<N>& v, int j) {
  return make_float2(v.v[2 * j], v.v[2 * j + 1]);
}
template <class T>
__device__ __forceinline__ FloatPack<Vec16<T>::kSize> to_float_pack(const Vec16<T>& v) {
  FloatPack<Vec16<T>::kSize> f;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 pair = get_pair(v, j);
    f.v[2 * j] = pair.x;
    f.v[2 * j + 1] = pair.y;
  }
  return f;
}

// An empty asm that "may change" the pack's 32-bit words: the compiler can no longer reuse
// float conversions made before this point, nor hoist conversions made after it. Held packs
// (a row in registers, w across rows) then stay packed, V/2 registers per 16-bit pack, instead
// of living on as V floats (ptxas: 64 registers and spills without it). Costs no instruction.
template <class T>
__device__ __forceinline__ void keep_packed(Vec16<T>& v) {
  uint32_t* words = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
    asm volatile("" : "+v"(words[i]));
#else
    asm volatile("" : "+r"(words[i]));
#endif
  }
}

// Scalar-access variants for rows that are not 16-byte aligned or whose length is not a
// multiple of kSize: touch only the first `valid` elements at p (valid <= 0: none, >= kSize:
// all). Missing elements load as 0, so padded slots add nothing to sums. They go through
// pairs (exact for every dtype) so the pack stays two elements per register.
template <class T>
__device__ __forceinline__ Vec16<T> load_vec_partial(const T* p, int64_t valid) {
  Vec16<T> r;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float lo = 2 * j < valid ? to_float(p[2 * j]) : 0.f;
    const float hi = 2 * j + 1 < valid ? to_float(p[2 * j + 1]) : 0.f;
    set_pair(r, j, make_float2(lo, hi));
  }
  return r;
}

template <class T>
__device__ __forceinline__ void store_vec_partial(T* p, const Vec16<T>& v, int64_t valid) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 f = get_pair(v, j);
    if (2 * j < valid) p[2 * j] = from_float<T>(f.x);
    if (2 * j + 1 < valid) p[2 * j + 1] = from_float<T>(f.y);
  }
}

// One thread's pack of a row: columns [col, col + kSize). kVector: 16-byte accesses (rows
// aligned, cols a multiple of kSize); otherwise element by element. Columns at or past `cols`
// read as 0 and are not written, so cols = 0 turns a whole row off. Index is int where a row
// fits in registers (fewer registers), int64_t otherwise.
//
// The vector form chooses between the load and zero on the pack's four 32-bit words
// (KBENCH_PACK_WORD_SELECT=1, the default). Chosen as a Vec16 of 16-bit elements, the compiler
// merged the two element by element: 8-12 PRMTs per 16-bit pack, 11-16% of every 16-bit
// register-row kernel's instructions (SASS sm_90: 152 of the 1016 of layernorm's 4K kernel,
// 114 of 592 of rmsnorm's); on words, none. One H200, means of two passes, points of the copy
// ceiling, against 0: rmsnorm's v4 bf16 +2.0 / 0.0 / +0.9 / +8.3 / +1.0 / +0.6 at 1K / 2K /
// 4K / 5120 / 8K / 16K (96.1 / 94.9 / 96.4 / 95.7 / 96.3 / 94.8), layernorm's v3 +2.8 to +11.3
// (with its two FMAs, layernorm.cu), the backwards' register rows (v2) +2 to +12 at 1K-8K,
// fused_add_rmsnorm's v2 -0.6 to +1.8 (kernels/rmsnorm/NOTES.md, sixty-third session). 0: the
// Vec16 choice (a knob for scripts/ab-flags.sh).
#ifndef KBENCH_PACK_WORD_SELECT
#define KBENCH_PACK_WORD_SELECT 1
#endif
template <class T, bool kVector, bool kStream, class Index>
__device__ __forceinline__ Vec16<T> load_pack(const T* row, Index col, Index cols) {
  if constexpr (kVector && KBENCH_PACK_WORD_SELECT) {
    int4 words = make_int4(0, 0, 0, 0);
    if (col < cols) {
      const Vec16<T> v = kStream ? load_vec_stream(row + col) : load_vec(row + col);
      words = *reinterpret_cast<const int4*>(&v);
    }
    Vec16<T> r;
    *reinterpret_cast<int4*>(&r) = words;
    return r;
  } else if constexpr (kVector) {
    if (col >= cols) return zero_vec<T>();
    return kStream ? load_vec_stream(row + col) : load_vec(row + col);
  } else {
    return load_vec_partial(row + col, cols - col);
  }
}

template <class T, bool kVector, class Index>
__device__ __forceinline__ void store_pack(T* row, Index col, Index cols, const Vec16<T>& v) {
  if constexpr (kVector) {
    if (col < cols) store_vec(row + col, v);
  } else {
    store_vec_partial(row + col, v, cols - col);
  }
}

// True when rows of n elements of T starting at base keep 16-byte alignment.
template <class T>
inline bool rows_are_vec16_aligned(const void* base, int64_t n) {
  return reinterpret_cast<uintptr_t>(base) % 16 == 0 && (n * sizeof(T)) % 16 == 0;
}

}  // namespace kbench
