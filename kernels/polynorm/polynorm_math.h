// Device math and kernels shared by polynorm and fused_mul_polynorm, forward and backward.
//
// fused_mul_polynorm is polynorm with an elementwise factor m (forward: y = polynorm(x) * m;
// backward: polynorm's backward of G = dy * m, plus dm = dy * polynorm(x)), so every kernel
// here is a template on kHasMul. The four .cu files (polynorm.cu, polynorm_bwd.cu,
// fused_mul_polynorm.cu, fused_mul_polynorm_bwd.cu) list their versions and register them;
// this header holds the code once. Everything is in an unnamed namespace: each .cu
// instantiates its own copy.
//
// The math, per row of N elements, with w0, w1, w2 scaling the norms of x^3, x^2, x:
//   forward   r_k = rsqrt(mean(x^(2 p_k)) + eps), c_k = w_k * r_k:
//             y = c3 x^3 + c2 x^2 + c1 x + b = ((c3 x + c2) x + c1) x + b     (Horner: 3 FMAs)
//   backward  G = dy (* m), rho_k = mean(G x^p) / (mean(x^2p) + eps), a_k = p_k w_k r_k:
//             dx = a1 (G - x rho1) + x (a2 (G - x^2 rho2) + x a3 (G - x^3 rho3))
//                = a1 (G - x rho1) + x (G (a2 + a3 x) - x^2 (b2 + b3 x^2)),  b_k = a_k rho_k
//             dw_k = sum over rows of r_k * sum(G x^p)   db = sum of G
//   (du_k = r_k (g_k - n_k mean(g_k n_k)) = w_k r_k (G - x^p rho_k), and dx = sum p x^(p-1) du_k.)
// One pass over a row gives every row sum: the forward needs sum x^2, x^4, x^6; the backward
// those and sum G x, G x^2, G x^3. dw needs no per-element work: a row contributes
// r_k * sum(G x^p), which its team already has.
//
// Numerics (all fp32, never a 16-bit intermediate):
// - x^6 of |x| ~ 5e3 (`--values large`) is 1.6e22 and a row sum of 131072 of them 2e27, far
//   below fp32's 3.4e38: fp32 holds N(x^3) for |x| up to ~3e5 at N = 131072. Below, x^6
//   underflows only where eps dominates mean(x^6) anyway. Zero rows: every r_k = 1/sqrt(eps).
// - Each backward bracket G - x^p rho_k cancels almost fully in rows where one element
//   dominates (N = 1 always), and rho_k uses 1 / (mean + eps) refined by a Newton step rather
//   than rsqrt squared (whose ~4 ulp error the cancellation would magnify). The x rho_1 bracket
//   is one FMA; the other two are expanded (bwd_dx), G (a2 + a3 x) - x^2 (b2 + b3 x^2): they
//   cancel only where x^4 >> eps, and there a2, a3 are small. A host emulation of the fp32
//   arithmetic against fp64 (2M random rows of N = 1-127, |x| from 1e-4 to 1e3, dy normal)
//   put the worst element at 0.89 of dx's tolerance with one FMA per bracket and with this
//   form alike; expanding the x rho_1 bracket too reached 1.03 (N = 1, |x| ~ 0.005, where
//   a1 G ~ 200 G cancels).
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "harness/registry.h"
#include "kernels/common/bulk_rows.cuh"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"
#include "kernels/common/row_layout.h"
#include "kernels/common/staged_rows.cuh"
#include "kernels/common/vec.h"

namespace kbench {
namespace {

// =============================================================================================
// Row sums: K floats reduced together (RowSums and warp_reduce_sum: reduce.h)
// =============================================================================================

template <int K>
__device__ __forceinline__ RowSums<K> zero_sums() {
  RowSums<K> s;
#pragma unroll
  for (int k = 0; k < K; ++k) s.v[k] = 0.f;
  return s;
}

// team_reduce_sum (reduce.h) for K sums at once, with the cross-warp step done by shuffles:
// after the one barrier, lane i of each warp reads warp (i mod kTeamWarps)'s sums and a
// butterfly over kTeamWarps lanes adds them, rather than every thread reading all kTeamWarps
// entries (for a 1024-thread team and six sums, 192 shared loads per thread: ptxas issued
// them at once and spilled the row's live values). Same contract: every thread of the block
// calls it (block-uniform control flow), callers alternate between two scratch buffers of
// blockDim.x / kWarpSize entries, and all threads of a team get bitwise the same sums.
// (A candidate for kernels/common/reduce.h.)
// kScattered: reduce.h's team_reduce_scatter_sum instead (the K sums scattered over the warp's
// lanes, padded to a power of two), for teams of a power of two of warps.
template <int kTeam, bool kScattered = false, int K>
__device__ __forceinline__ RowSums<K> team_sums(RowSums<K> s, RowSums<K>* scratch) {
  static_assert(kTeam % kWarpSize == 0, "a team is a whole number of warps");
  constexpr int kTeamWarps = kTeam / kWarpSize;
  if constexpr (!is_power_of_two(kTeamWarps)) {
    // Fitted teams (3, 5 or 6 warps, below): no butterfly over their warps; reduce.h's plain
    // reduction, every thread adding the few entries in order.
    return team_reduce_sum_plain<kTeam, 0>(s, scratch);
  } else if constexpr (kScattered) {
    return team_reduce_scatter_sum<kTeam, 0, K>(s, scratch);
  } else {
    s = warp_reduce_sum(s);
    if constexpr (kTeam == kWarpSize) {
      return s;
    } else {
      static_assert(kTeamWarps <= kWarpSize);
      const int warp = threadIdx.x / kWarpSize;
      const int lane = threadIdx.x % kWarpSize;
      if (lane == 0) scratch[warp] = s;
      __syncthreads();
      return warp_reduce_sum(scratch[warp / kTeamWarps * kTeamWarps + lane % kTeamWarps],
                             kTeamWarps);
    }
  }
}

// =============================================================================================
// Element math, shared by every version
// =============================================================================================

// w0, w1, w2 and b, read once per thread (b = 0 where the op has none).
struct PolyWeights {
  float w0, w1, w2, b;
};

template <class T>
__device__ __forceinline__ PolyWeights load_weights(const T* w, const T* b) {
  return PolyWeights{to_float(w[0]), to_float(w[1]), to_float(w[2]), b ? to_float(b[0]) : 0.f};
}

// The same through the read-only path (load_invariant, compat.h): loads the compiler may hoist
// out of a row loop that stores elsewhere, so a kernel can ask for the weights per row.
template <class T>
__device__ __forceinline__ PolyWeights load_weights_invariant(const T* w, const T* b) {
  return PolyWeights{to_float(load_invariant(w)), to_float(load_invariant(w + 1)),
                     to_float(load_invariant(w + 2)), b ? to_float(load_invariant(b)) : 0.f};
}

// ----- forward -------------------------------------------------------------------------------

// Row sums of x^2, x^4, x^6: 2 multiplies and 3 adds/FMAs per element.
__device__ __forceinline__ void add_fwd_sums(RowSums<3>& s, float x) {
  const float x2 = x * x;
  const float x3 = x2 * x;
  s.v[0] += x2;
  s.v[1] = fmaf(x2, x2, s.v[1]);
  s.v[2] = fmaf(x3, x3, s.v[2]);
}

// y = c3 x^3 + c2 x^2 + c1 x + b, c_k = w_k * r_k: the row's polynomial.
struct FwdCoefs {
  float c1, c2, c3, b;
};

__device__ __forceinline__ FwdCoefs fwd_coefs(const RowSums<3>& s, float inv_cols, float eps,
                                              const PolyWeights& w) {
  return FwdCoefs{w.w2 * rsqrtf(fmaf(s.v[0], inv_cols, eps)),
                  w.w1 * rsqrtf(fmaf(s.v[1], inv_cols, eps)),
                  w.w0 * rsqrtf(fmaf(s.v[2], inv_cols, eps)), w.b};
}

__device__ __forceinline__ float poly_value(float x, const FwdCoefs& c) {
  return fmaf(fmaf(fmaf(c.c3, x, c.c2), x, c.c1), x, c.b);
}

// ----- backward ------------------------------------------------------------------------------

// Row sums of x^2, x^4, x^6, G x, G x^2, G x^3 (the first six of K): 2 multiplies and 6
// adds/FMAs per element.
template <int K>
__device__ __forceinline__ void add_bwd_sums(RowSums<K>& s, float g, float x) {
  const float x2 = x * x;
  const float x3 = x2 * x;
  s.v[0] += x2;
  s.v[1] = fmaf(x2, x2, s.v[1]);
  s.v[2] = fmaf(x3, x3, s.v[2]);
  s.v[3] = fmaf(g, x, s.v[3]);
  s.v[4] = fmaf(g, x2, s.v[4]);
  s.v[5] = fmaf(g, x3, s.v[5]);
}

// r = rsqrt(d) and inv = 1 / d for d = mean + eps. inv starts as r * r (up to ~4 ulp off) and
// takes one Newton step (2 FMAs) to ~1 ulp: rho_k = mean(G x^p) * inv_k feeds brackets that
// cancel, an IEEE division would cost ~20 instructions per norm per row.
struct Norm {
  float r, inv;
};

__device__ __forceinline__ Norm row_norm(float sum, float inv_cols, float eps) {
  const float d = fmaf(sum, inv_cols, eps);
  const float r = rsqrtf(d);
  const float inv = r * r;
  return Norm{r, fmaf(inv, fmaf(-d, inv, 1.f), inv)};
}

// What a row's backward needs once its sums are known.
struct BwdRow {
  float a1, a2, a3;        // p_k * w_k * r_k
  float rho1, rho2, rho3;  // mean(G x^p) / (mean(x^2p) + eps)
  float b2, b3;            // a2 rho2, a3 rho3
  float dw0, dw1, dw2;     // this row's share of dw: r_k * sum(G x^p)
  FwdCoefs poly;           // polynorm(x) for dm = dy * polynorm(x) (fused op)
};

template <int K>
__device__ __forceinline__ BwdRow bwd_row(const RowSums<K>& s, float inv_cols, float eps,
                                          const PolyWeights& w) {
  const Norm n1 = row_norm(s.v[0], inv_cols, eps);
  const Norm n2 = row_norm(s.v[1], inv_cols, eps);
  const Norm n3 = row_norm(s.v[2], inv_cols, eps);
  BwdRow r;
  r.a1 = w.w2 * n1.r;
  r.a2 = 2.f * w.w1 * n2.r;
  r.a3 = 3.f * w.w0 * n3.r;
  r.rho1 = s.v[3] * inv_cols * n1.inv;
  r.rho2 = s.v[4] * inv_cols * n2.inv;
  r.rho3 = s.v[5] * inv_cols * n3.inv;
  r.b2 = r.a2 * r.rho2;
  r.b3 = r.a3 * r.rho3;
  r.dw0 = n3.r * s.v[5];
  r.dw1 = n2.r * s.v[4];
  r.dw2 = n1.r * s.v[3];
  r.poly = FwdCoefs{w.w2 * n1.r, w.w1 * n2.r, w.w0 * n3.r, w.b};
  return r;
}

// dx of one element in 8 instructions: the x rho_1 bracket as one FMA, the x^2 and x^3 terms
// expanded (see the numerics note above):
//   dx = a1 (G - x rho1) + x (G (a2 + a3 x) - x^2 (b2 + b3 x^2)),  b_k = a_k rho_k.
// With all three brackets as FMAs (KBENCH_EXPANDED_DX=0, a knob for scripts/ab-flags.sh) it
// takes 10. Same run, H200, bf16, % of the copy ceiling, two repetitions: polynorm_bwd 80.0 /
// 80.3 against 75.9 / 76.0 at 5120, 81.1-81.3 against 78.8-80.6 at 8K and 16K, 77.7 against
// 75.7 / 75.9 at 32K, 75.8 / 76.3 against 74.0 / 74.6 at 64K, but 83.3-84.0 against 84.3-86.0
// at 1K and 2K; fused_mul_polynorm_bwd -0.3 to +1.4. H100 (with the half teams below): -1.4 to
// +1.6 but 5120.
#ifndef KBENCH_EXPANDED_DX
#define KBENCH_EXPANDED_DX 1
#endif
__device__ __forceinline__ float bwd_dx(float g, float x, const BwdRow& r) {
  const float x2 = x * x;
#if KBENCH_EXPANDED_DX
  const float t1 = r.a1 * fmaf(-x, r.rho1, g);
  const float inner = fmaf(g, fmaf(r.a3, x, r.a2), -(x2 * fmaf(r.b3, x2, r.b2)));
  return fmaf(x, inner, t1);
#else
  const float x3 = x2 * x;
  const float t3 = r.a3 * fmaf(-x3, r.rho3, g);
  const float t2 = fmaf(x, t3, r.a2 * fmaf(-x2, r.rho2, g));
  return fmaf(x, t2, r.a1 * fmaf(-x, r.rho1, g));
#endif
}

// ----- packs (Vec16), a pair of elements at a time (see get_pair in vec.h) ------------------

template <class T>
__device__ __forceinline__ void add_fwd_pack_sums(RowSums<3>& s, const Vec16<T>& xv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    add_fwd_sums(s, x.x);
    add_fwd_sums(s, x.y);
  }
}

template <class T, bool kHasMul>
__device__ __forceinline__ Vec16<T> fwd_pack_out(const Vec16<T>& xv, const Vec16<T>& mv,
                                                 const FwdCoefs& c) {
  Vec16<T> yv;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    float2 y = make_float2(poly_value(x.x, c), poly_value(x.y, c));
    if constexpr (kHasMul) {
      const float2 m = get_pair(mv, j);
      y = make_float2(y.x * m.x, y.y * m.y);
    }
    set_pair(yv, j, y);
  }
  return yv;
}

// G = dy (* m) of a pair.
template <class T, bool kHasMul>
__device__ __forceinline__ float2 grad_pair(const Vec16<T>& dyv, const Vec16<T>& mv, int j) {
  const float2 dy = get_pair(dyv, j);
  if constexpr (!kHasMul) return dy;
  const float2 m = get_pair(mv, j);
  return make_float2(dy.x * m.x, dy.y * m.y);
}

// Row sums of one pack, and db += G for its elements (a running sum of the thread's, or a
// seventh row sum).
template <class T, bool kHasMul, int K>
__device__ __forceinline__ void add_bwd_pack_sums(RowSums<K>& s, float& db,
                                                  const Vec16<T>& dyv, const Vec16<T>& xv,
                                                  const Vec16<T>& mv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 g = grad_pair<T, kHasMul>(dyv, mv, j);
    const float2 x = get_pair(xv, j);
    add_bwd_sums(s, g.x, x.x);
    add_bwd_sums(s, g.y, x.y);
    db += g.x;
    db += g.y;
  }
}

// dx (and dm = dy * polynorm(x) for the fused op) of one pack.
template <class T, bool kHasMul>
__device__ __forceinline__ void bwd_pack_out(const Vec16<T>& dyv, const Vec16<T>& xv,
                                             const Vec16<T>& mv, const BwdRow& r,
                                             Vec16<T>& dxv, Vec16<T>& dmv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 g = grad_pair<T, kHasMul>(dyv, mv, j);
    const float2 x = get_pair(xv, j);
    set_pair(dxv, j, make_float2(bwd_dx(g.x, x.x, r), bwd_dx(g.y, x.y, r)));
    if constexpr (kHasMul) {
      const float2 dy = get_pair(dyv, j);
      set_pair(dmv, j, make_float2(dy.x * poly_value(x.x, r.poly), dy.y * poly_value(x.y, r.poly)));
    }
  }
}

// A held pack, made to look new before its second use. The kernels that hold a row in
// registers convert it to floats twice: for the row sums and, after the reduction, for the
// outputs. Converting again costs 1-2 instructions per pair; keeping the first conversion
// (and x^2, x^3) alive across the reduction costs 2-4x the registers. vec.h's keep_packed (an
// empty asm) stops the compiler front end from reusing the first conversion, but ptxas sees
// through it: with six row sums it kept the floats anyway and spilled ~1 KB per thread. An
// XOR with a kernel parameter that is always 0 is opaque to ptxas too: 4 LOP3s per pack
// (0.5 per bf16 element), and the spills are gone.
template <class T>
__device__ __forceinline__ void reload_pack(Vec16<T>& v, uint32_t opaque_zero) {
  uint32_t* words = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) words[i] ^= opaque_zero;
}

// load_pack (vec.h) with the zero fill done on 32-bit words: a 16-bit element type made the
// compiler merge the loaded and the zero pack element by element (~3 PRMTs per word).
template <class T, bool kVector, bool kStream, class Index>
__device__ __forceinline__ Vec16<T> load_row_pack(const T* row, Index col, Index cols) {
  if constexpr (kVector) {
    uint4 words = make_uint4(0u, 0u, 0u, 0u);
    if (col < cols) {
      const Vec16<T> v = kStream ? load_vec_stream(row + col) : load_vec(row + col);
      words = *reinterpret_cast<const uint4*>(&v);
    }
    Vec16<T> r;
    *reinterpret_cast<uint4*>(&r) = words;
    return r;
  } else {
    return load_vec_partial(row + col, cols - col);
  }
}

// =============================================================================================
// Parameters
// =============================================================================================

// Row offsets are row * cols in int64: M * N can pass 2^31.
template <class T>
struct FwdParams {
  const T* x;
  const T* m;  // nullptr for polynorm
  const T* w;
  const T* b;
  T* y;
  int64_t rows;
  int64_t cols;
  float eps;
  float inv_cols;            // 1 / cols, rounded on the host (a device division is a call)
  uint32_t opaque_zero = 0;  // see reload_pack
};

// polynorm: x, w, b -> y. fused_mul_polynorm: x, m, w, b -> y.
template <class T, bool kHasMul>
FwdParams<T> fwd_params(const LaunchArgs& a) {
  const auto in = [&a](size_t i) { return static_cast<const T*>(a.inputs[i]); };
  constexpr size_t kW = kHasMul ? 2 : 1;
  return FwdParams<T>{in(0),     kHasMul ? in(1) : nullptr,     in(kW),    in(kW + 1),
                      static_cast<T*>(a.outputs[0]), a.shape.m, a.shape.n, a.eps,
                      1.f / static_cast<float>(a.shape.n)};
}

template <class T>
bool fwd_rows_aligned(const FwdParams<T>& p) {
  return rows_are_vec16_aligned<T>(p.x, p.cols) && rows_are_vec16_aligned<T>(p.y, p.cols) &&
         (p.m == nullptr || rows_are_vec16_aligned<T>(p.m, p.cols));
}

template <class T>
struct BwdParams {
  const T* dy;
  const T* x;
  const T* m;  // nullptr for polynorm_bwd
  const T* w;
  const T* b;  // nullptr for polynorm_bwd
  T* dx;
  T* dm;      // nullptr for polynorm_bwd
  float* dw;  // the scalar gradients are fp32 outputs (reference/polynorm.cpp says why)
  float* db;
  int64_t rows;
  int64_t cols;
  float eps;
  float inv_cols;            // 1 / cols, rounded on the host (a device division is a call)
  uint32_t opaque_zero = 0;  // see reload_pack
};

// polynorm_bwd: dy, x, w -> dx, dw, db. fused_mul_polynorm_bwd: dy, x, m, w, b -> dx, dm, dw, db.
template <class T, bool kHasMul>
BwdParams<T> bwd_params(const LaunchArgs& a) {
  const auto in = [&a](size_t i) { return static_cast<const T*>(a.inputs[i]); };
  const auto out = [&a](size_t i) { return static_cast<T*>(a.outputs[i]); };
  const auto out_f32 = [&a](size_t i) { return static_cast<float*>(a.outputs[i]); };
  const float inv_cols = 1.f / static_cast<float>(a.shape.n);
  if constexpr (kHasMul) {
    return BwdParams<T>{in(0),      in(1),      in(2),     in(3),     in(4), out(0), out(1),
                        out_f32(2), out_f32(3), a.shape.m, a.shape.n, a.eps, inv_cols};
  } else {
    return BwdParams<T>{in(0),      in(1),      nullptr,   in(2),     nullptr, out(0), nullptr,
                        out_f32(1), out_f32(2), a.shape.m, a.shape.n, a.eps,   inv_cols};
  }
}

template <class T>
bool bwd_rows_aligned(const BwdParams<T>& p) {
  return rows_are_vec16_aligned<T>(p.dy, p.cols) && rows_are_vec16_aligned<T>(p.x, p.cols) &&
         rows_are_vec16_aligned<T>(p.dx, p.cols) &&
         (p.m == nullptr || rows_are_vec16_aligned<T>(p.m, p.cols)) &&
         (p.dm == nullptr || rows_are_vec16_aligned<T>(p.dm, p.cols));
}

// =============================================================================================
// Forward v1_naive: one block per row, scalar loads, two passes over x.
// =============================================================================================

constexpr int kNaiveThreads = 256;

template <class T, bool kHasMul>
__global__ void __launch_bounds__(kNaiveThreads) polynorm_fwd_naive(FwdParams<T> p) {
  __shared__ float scratch[kMaxWarps];
  const PolyWeights w = load_weights(p.w, p.b);
  const float inv_cols = p.inv_cols;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x_row = p.x + row * p.cols;
    RowSums<3> s = zero_sums<3>();
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) add_fwd_sums(s, to_float(x_row[j]));
#pragma unroll
    for (int k = 0; k < 3; ++k) s.v[k] = block_reduce_sum(s.v[k], scratch);
    const FwdCoefs c = fwd_coefs(s, inv_cols, p.eps, w);
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      float y = poly_value(to_float(x_row[j]), c);
      if constexpr (kHasMul) y *= to_float(p.m[row * p.cols + j]);
      p.y[row * p.cols + j] = from_float<T>(y);
    }
  }
}

template <class T, bool kHasMul>
void launch_fwd_v1(const FwdParams<T>& p, gpuStream_t stream) {
  polynorm_fwd_naive<T, kHasMul><<<row_blocks(std::max<int64_t>(p.rows, 1)), kNaiveThreads, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// =============================================================================================
// Forward v2_vec16_regs: x (and m) read once into registers.
//
// rmsnorm v3's layout: a team of kTeam threads (one or two warps, or the whole block) owns a
// row at a time; thread `lane` holds kPacks packs of V elements, pack k at column
// (k * kTeam + lane) * V, so each pack load is coalesced across the team. All loads of a row
// are issued before its sums use any (kPacks x 16 B per thread and tensor in flight). The
// grid is persistent (kMinBlocks blocks per SM) and walks rows with a block stride; w and b
// are four scalars loaded once per thread (no per-column weight: unlike rmsnorm, nothing but
// the row itself needs registers). kVector = false is the scalar-access variant (unaligned
// rows or N not a multiple of V): same layout, element loads with a bound check.
//
// Work per element: 5 instructions for the sums, 3 FMAs for y (Horner), +1 for m, plus the
// bf16/fp16 unpacking: ~12 against 4 bytes of traffic (bf16), under half of an H100's issue
// rate at full HBM bandwidth, so it stays memory-bound.
//
// m for the fused op: held beside x up to 4 packs per thread (rows up to 2048 packs, 16384
// bf16). At 8 packs x alone takes 32 registers of the 64 a thread may have, so m is loaded
// after the row's reduction, pack by pack, as x's registers free up (the other block on the
// SM streams meanwhile). A candidate to measure against: 1024-thread teams of 4 packs
// holding both, one block per SM, for 16385..32768 bf16.
// =============================================================================================

// Which register rows add their team's sums in the scattered form (team_sums' kScattered):
// KBENCH_POLYNORM_SCATTER_SUMS 1 (the default) polynorm's 16-bit rows of two-warp teams
// (1025-2048 bf16), 2 every 16-bit team of a power of two of warps, 0 none (knobs for
// scripts/ab-flags.sh). v3, points of the copy ceiling, three passes in one call on each of two
// H200s (NOTES, seventy-ninth session), against none: two-warp teams +1.0 to +1.9 at 16384x2048
// (bf16; fp16 +0.3 / +0.5), +0.8 to +1.1 at 32768x2048, +2.5 to +3.7 at 21845x1536; every team
// adds nothing at 1K (warp teams, -0.5 to +0.8) and reads -1.2 to +0.3 at 4K-16K (4-16 warps),
// so those keep the plain butterflies; fitted teams (3-6 warps) summed the same way read -0.5 to
// +1.0, as much as unchanged kernels moved in the same runs. Not fused_mul_polynorm's rows (-3.6
// at 2K in its one pass), nor fp32's (whose 4-pack kernels spill 8 bytes at 40 registers with it).
// Those numbers are for a cross-warp step by a butterfly over the lanes; the eightieth session
// moved the rows to reduce.h's (each lane adds its sum over the team's warps): level for v3
// (-0.7 to +0.7 at 1536-2048 bf16), v2 -0.4 on average; `=2` in that form level for v3 at 1K-16K
// (-0.6 to +0.8), v2 +0.6 / +1.0 at 4K / 8K, -0.3 at 16K (v3 leads v2 by 2-5 there).
#ifndef KBENCH_POLYNORM_SCATTER_SUMS
#define KBENCH_POLYNORM_SCATTER_SUMS 1
#endif
template <class T, bool kHasMul, int kTeam>
constexpr bool kScattersFwdSums =
    !kHasMul && sizeof(T) == 2 && is_power_of_two(kTeam / kWarpSize) &&
    (KBENCH_POLYNORM_SCATTER_SUMS == 2 ||
     (KBENCH_POLYNORM_SCATTER_SUMS == 1 && kTeam == 2 * kWarpSize));

template <class T, bool kHasMul, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector>
__global__ void __launch_bounds__(kBlock, kMinBlocks) polynorm_fwd_regs(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kTeams = kBlock / kTeam;
  constexpr bool kHoldM = kHasMul && kPacks <= 4;
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  __shared__ RowSums<3> scratch[2][kBlock / kWarpSize];

  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  const auto pack_col = [lane](int k) { return (k * kTeam + lane) * V; };
  const PolyWeights w = load_weights(p.w, p.b);
  const float inv_cols = p.inv_cols;

  int buf = 0;
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kTeams;
  // Block-uniform loop: a team whose row is past the end still joins team_sums' barrier.
  for (int64_t first_row = static_cast<int64_t>(blockIdx.x) * kTeams; first_row < p.rows;
       first_row += row_stride) {
    const int64_t row = first_row + team;
    const int cols = row < p.rows ? static_cast<int>(p.cols) : 0;  // 0: no row this round
    const int64_t offset = row * p.cols;

    Vec16<T> xv[kPacks];
    Vec16<T> mv[kHoldM ? kPacks : 1];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) xv[k] = load_row_pack<T, kVector, true>(p.x + offset, pack_col(k), cols);
    if constexpr (kHoldM) {
#pragma unroll
      for (int k = 0; k < kPacks; ++k) mv[k] = load_row_pack<T, kVector, true>(p.m + offset, pack_col(k), cols);
    }

    RowSums<3> s = zero_sums<3>();
#pragma unroll
    for (int k = 0; k < kPacks; ++k) add_fwd_pack_sums(s, xv[k]);
    s = team_sums<kTeam, kScattersFwdSums<T, kHasMul, kTeam>>(s, scratch[buf]);
    buf ^= 1;
    const FwdCoefs c = fwd_coefs(s, inv_cols, p.eps, w);

#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      reload_pack(xv[k], p.opaque_zero);  // convert x again rather than keep it as floats
      Vec16<T> m_k = xv[k];  // unused unless kHasMul
      if constexpr (kHoldM) {
        reload_pack(mv[k], p.opaque_zero);
        m_k = mv[k];
      } else if constexpr (kHasMul) {
        m_k = load_row_pack<T, kVector, true>(p.m + offset, pack_col(k), cols);
      }
      store_pack<T, kVector>(p.y + offset, pack_col(k), cols, fwd_pack_out<T, kHasMul>(xv[k], m_k, c));
    }
  }
}

// Rows beyond register capacity: block per row, the row walked in chunks of kBlock * kPacks
// packs twice, once for the sums and once for y; the second pass re-reads this row's x
// microseconds after the first, mostly from L2.
template <class T, bool kHasMul, int kBlock, int kPacks, bool kVector>
__global__ void __launch_bounds__(kBlock, 1) polynorm_fwd_chunked(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int64_t kChunk = int64_t{kBlock} * kPacks * V;
  __shared__ RowSums<3> scratch[2][kBlock / kWarpSize];
  const auto pack_col = [](int64_t base, int k) {
    return base + static_cast<int64_t>(k * kBlock + static_cast<int>(threadIdx.x)) * V;
  };
  const PolyWeights w = load_weights(p.w, p.b);
  const float inv_cols = p.inv_cols;

  int buf = 0;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x_row = p.x + row * p.cols;
    RowSums<3> s = zero_sums<3>();
    for (int64_t base = 0; base < p.cols; base += kChunk) {
      Vec16<T> xv[kPacks];
#pragma unroll
      for (int k = 0; k < kPacks; ++k) xv[k] = load_row_pack<T, kVector, false>(x_row, pack_col(base, k), p.cols);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) add_fwd_pack_sums(s, xv[k]);
    }
    s = team_sums<kBlock>(s, scratch[buf]);
    buf ^= 1;
    const FwdCoefs c = fwd_coefs(s, inv_cols, p.eps, w);

    for (int64_t base = 0; base < p.cols; base += kChunk) {
      Vec16<T> xv[kPacks];
      Vec16<T> mv[kPacks];
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        xv[k] = load_row_pack<T, kVector, true>(x_row, pack_col(base, k), p.cols);
        mv[k] = kHasMul ? load_row_pack<T, kVector, true>(p.m + row * p.cols, pack_col(base, k), p.cols) : xv[k];
      }
#pragma unroll
      for (int k = 0; k < kPacks; ++k)
        store_pack<T, kVector>(p.y + row * p.cols, pack_col(base, k), p.cols,
                               fwd_pack_out<T, kHasMul>(xv[k], mv[k], c));
    }
  }
}

// One register configuration: kBlock threads, teams of kTeam, kPacks packs per thread,
// kMinBlocks blocks per SM (the occupancy __launch_bounds__ asks for).
template <int kBlock_, int kTeam_, int kPacks_, int kMinBlocks_, bool kVector_>
struct RegsConfig {
  static constexpr int kBlock = kBlock_;
  static constexpr int kTeam = kTeam_;
  static constexpr int kPacks = kPacks_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr bool kVector = kVector_;
  static constexpr int kTeams = kBlock_ / kTeam_;
};

constexpr int kChunkedBlock = 1024;

// Calls f(RegsConfig<...>{}) with the smallest configuration whose capacity (kTeam x kPacks
// packs) holds the row; returns false when the row is beyond register capacity. The vector
// ladder is rmsnorm v3's, measured on H100 there: warp teams (8 rows per 256-thread block)
// up to 1024 bf16, two-warp teams up to 2048, then a block per row; two 512-thread blocks
// per SM up to 32768 bf16, one 1024-thread block up to 65536. kMinBlocks keeps the register
// cap at 64. The scalar variant holds at most 2 packs per thread: its per-element addresses
// and bounds cost registers (at 4 packs ptxas spilled).
//
// Fitted teams (kFitted, polynorm's): rows of exactly 3, 5 or 6 warps' 4 packs (3072 / 5120 /
// 6144 bf16, 1536 / 2560 / 3072 fp32) take a team of that many warps, every slot used, not the
// next power of two's (75%, 62.5%, 75% of its slots, the rest predicated off), at the ladder's
// occupancy (about 1024 threads per SM, 64 registers). Same H200, v3, 8192 rows, points of the
// copy ceiling, two passes (kernels/rmsnorm/NOTES.md, sixty-second session): bf16 88.8 / 92.8 /
// 93.6 at 3072 / 5120 / 6144 against 86.2 / 84.7 / 91.5, fp16 90.1 / 94.8 / 96.1 against 85.6 /
// 83.9 / 90.8. At 1536 threads per SM (kFwdThreadsPerSm) they spilled 4-12 bytes: bf16 +1.0 / +1.5
// at 5120 / 6144 but fp16 -5.5 / -4.4. Rows of 7 warps lost 1.7-7 points against the 256-thread
// team there (87.5% of its slots). fp32 and fused_mul_polynorm's rows (which hold m too) were
// not timed. KBENCH_POLYNORM_FITTED_TEAMS=0 takes them off (a knob for scripts/ab-flags.sh).
#ifndef KBENCH_POLYNORM_FITTED_TEAMS
#define KBENCH_POLYNORM_FITTED_TEAMS 1
#endif
template <bool kVector, bool kFitted, class F>
bool with_fwd_config_of(int64_t packs, F&& f) {
  constexpr int W = kWarpSize;
  if constexpr (kVector) {
    if (packs <= W * 1) return f(RegsConfig<256, W, 1, 4, true>{}), true;
    if (packs <= W * 2) return f(RegsConfig<256, W, 2, 4, true>{}), true;
    if (packs <= W * 4) return f(RegsConfig<256, W, 4, 4, true>{}), true;
    if (packs <= 2 * W * 4) return f(RegsConfig<256, 2 * W, 4, 4, true>{}), true;
    if constexpr (kFitted) {
      if (packs == 3 * W * 4) return f(RegsConfig<3 * W, 3 * W, 4, 10, true>{}), true;
      if (packs == 5 * W * 4) return f(RegsConfig<5 * W, 5 * W, 4, 6, true>{}), true;
      if (packs == 6 * W * 4) return f(RegsConfig<6 * W, 6 * W, 4, 5, true>{}), true;
    }
    if (packs <= 128 * 4) return f(RegsConfig<128, 128, 4, 8, true>{}), true;
    if (packs <= 256 * 4) return f(RegsConfig<256, 256, 4, 4, true>{}), true;
    if (packs <= 512 * 4) return f(RegsConfig<512, 512, 4, 2, true>{}), true;
    if (packs <= 512 * 8) return f(RegsConfig<512, 512, 8, 2, true>{}), true;
    if (packs <= 1024 * 8) return f(RegsConfig<1024, 1024, 8, 1, true>{}), true;
  } else {
    if (packs <= W * 1) return f(RegsConfig<256, W, 1, 4, false>{}), true;
    if (packs <= W * 2) return f(RegsConfig<256, W, 2, 4, false>{}), true;
    if (packs <= 2 * W * 2) return f(RegsConfig<256, 2 * W, 2, 4, false>{}), true;
    if (packs <= 128 * 2) return f(RegsConfig<128, 128, 2, 8, false>{}), true;
    if (packs <= 256 * 2) return f(RegsConfig<256, 256, 2, 4, false>{}), true;
    if (packs <= 512 * 2) return f(RegsConfig<512, 512, 2, 2, false>{}), true;
    if (packs <= 1024 * 2) return f(RegsConfig<1024, 1024, 2, 1, false>{}), true;
  }
  return false;
}

// Threads per SM for polynorm's 16-byte register rows: 1536 (40 registers, no spills on
// sm_90), not the ladder's 1024. Those rows are issue-bound (about 13 instructions per element)
// and more warps issue more. H200, v3, points of the copy ceiling, two passes each
// (kernels/rmsnorm/NOTES.md, sixty-second session):
// - rows of two warps or more at up to 4 packs (2K-16K bf16), same machine: bf16 92.2 / 93.9
//   / 93.6 / 92.9 at 2K / 4K / 8K / 16K against 90.0 / 92.7 / 89.1 / 83.6; fp16 -0.4 to -0.7
//   at 2K / 4K / 8K, 93.3 against 86.0 at 16K;
// - warp rows (up to 1K bf16), another H200: bf16 92.5 against 89.4 at 1K, fp16 91.9 against
//   92.3.
// At 2048 threads (32 registers) both spill and read 3-8 points under 1536.
// fused_mul_polynorm's rows, which hold m beside x, keep the ladder's (at 1536 they spilled
// 60-76 bytes).
// KBENCH_POLYNORM_WIDE_ROWS_THREADS / KBENCH_POLYNORM_WARP_ROWS_THREADS = 0 build the ladder's
// occupancy (knobs for scripts/ab-flags.sh).
#ifndef KBENCH_POLYNORM_WIDE_ROWS_THREADS
#define KBENCH_POLYNORM_WIDE_ROWS_THREADS 1536
#endif
#ifndef KBENCH_POLYNORM_WARP_ROWS_THREADS
#define KBENCH_POLYNORM_WARP_ROWS_THREADS 1536
#endif
template <class C, bool kHasMul>
constexpr int kFwdThreadsPerSm =
    kHasMul || !C::kVector || !is_power_of_two(C::kTeam) ? 0  // fitted teams: the ladder's
    : kWideFourPackRows<C::kTeam, C::kPacks, C::kVector> ? KBENCH_POLYNORM_WIDE_ROWS_THREADS
    : C::kTeam == kWarpSize ? KBENCH_POLYNORM_WARP_ROWS_THREADS
                            : 0;
template <class C, bool kHasMul>
constexpr int kFwdMinBlocks = kFwdThreadsPerSm<C, kHasMul> > 0
                                  ? std::max(kFwdThreadsPerSm<C, kHasMul> / C::kBlock, 1)
                                  : C::kMinBlocks;

template <class T, bool kHasMul>
void launch_fwd_v2(const FwdParams<T>& p, int sm_count, gpuStream_t stream) {
  constexpr int V = Vec16<T>::kSize;
  const bool vector = fwd_rows_aligned(p);
  const int64_t sms = std::max(sm_count, 1);
  const int64_t rows = std::max<int64_t>(p.rows, 1);
  const auto launch_regs = [&](auto config) {
    using C = decltype(config);
    // sm_count = 0: a non-persistent grid (v3_vec16_rows_grid), one block per group of rows.
    constexpr int kMinBlocks = kFwdMinBlocks<C, kHasMul>;
    const int64_t resident = sm_count > 0 ? sms * kMinBlocks : kMaxRowBlocks;
    const int grid = static_cast<int>(std::min(ceil_div(rows, C::kTeams), resident));
    polynorm_fwd_regs<T, kHasMul, C::kBlock, C::kTeam, C::kPacks, kMinBlocks, C::kVector>
        <<<grid, C::kBlock, 0, stream>>>(p);
  };
  const int64_t packs = ceil_div(p.cols, V);
  constexpr bool kFitted = KBENCH_POLYNORM_FITTED_TEAMS && !kHasMul;
  const bool in_registers = vector ? with_fwd_config_of<true, kFitted>(packs, launch_regs)
                                   : with_fwd_config_of<false, false>(packs, launch_regs);
  if (!in_registers) {
    // Beyond register capacity: one 1024-thread block per SM (per row on the non-persistent
    // grid), two passes over each row.
    const int grid = static_cast<int>(std::min(rows, sm_count > 0 ? sms : kMaxRowBlocks));
    if (vector) {
      polynorm_fwd_chunked<T, kHasMul, kChunkedBlock, 2, true><<<grid, kChunkedBlock, 0, stream>>>(p);
    } else {
      polynorm_fwd_chunked<T, kHasMul, kChunkedBlock, 1, false><<<grid, kChunkedBlock, 0, stream>>>(p);
    }
  }
  KB_GPU_CHECK_LAUNCH();
}

// Registration helpers: the launchers as LaunchArgs functions.
template <bool kHasMul>
void launch_polynorm_fwd_v1(const LaunchArgs& a) {
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_fwd_v1<T, kHasMul>(fwd_params<T, kHasMul>(a), stream_of(a));
  });
}

template <bool kHasMul>
void launch_polynorm_fwd_v2(const LaunchArgs& a) {
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_fwd_v2<T, kHasMul>(fwd_params<T, kHasMul>(a), a.sm_count, stream_of(a));
  });
}

// ----- v4_vec16_staged: the staged-rows policy (kernels/common/staged_rows.cuh) -------------

// fused_mul_polynorm's rows over several blocks in hardware clusters (0, the default) or as grid
// rows (1, a knob for scripts/ab-flags.sh): PolynormFwdStaged's kGridRows.
#ifndef KBENCH_FUSED_MUL_GRID_ROWS
#define KBENCH_FUSED_MUL_GRID_ROWS 0
#endif

// x (and m) staged in shared memory; the three row sums in one float4 (.w unused), the
// weights held in registers, the row's three norms as its stats. kFastMemory: the policy for
// GPUs with fast memory (staged_rows.cuh's fast_memory: the H200), rows left in shared memory.
template <class T, bool kHasMul, bool kFastMemory = false>
struct PolynormFwdStaged {
  using Type = T;
  using Params = FwdParams<T>;
  // Where w and b go. polynorm: into each row's coefficients, once (finish_round; loads the
  // compiler may hoist out of the row loop), so the packs share them. fused_mul_polynorm: held
  // per pack (hold), each pack multiplying its own copy by the row's norms. Same run, H200,
  // bf16, % of the copy ceiling: polynorm +1 to +4 per row at N 1K-32K (92.4 against 88.6 at
  // 2K), -2.5 at 5120; fused_mul_polynorm -4 at 5120 and -1 at 16K-32K, so it holds them.
  static constexpr bool kRowWeights = !kHasMul;
  struct NoHeld {};
  using Held = std::conditional_t<kRowWeights, NoHeld, PolyWeights>;
  using Sums = float4;                           // sum x^2, x^4, x^6
  static constexpr int kStaged = kHasMul ? 2 : 1;  // x, m
  static constexpr int kPacks = kHasMul ? staged_rows::kPacks : staged_rows::kForwardPacks;
  // Fitted packs (with_fitted_packs): polynorm at 5120 bf16 takes 5 of 8 on a team of 128, every
  // slot used, so its packs take the branch-free path (staged_rows.cuh's for_valid_packs). Same
  // run, bf16, % of the copy ceiling, three repetitions: H100 93.8 / 93.9 / 92.7 against 91.7 /
  // 91.2 / 89.8 unfitted, H200 87.7 / 87.3 / 87.7 against 86.2 / 81.8 / 84.4 (it measured -0.5
  // fitted before that path). fused_mul_polynorm: +0.6 on the H100.
  static constexpr bool kFitPacks = true;
  // polynorm's rows over several blocks as grid rows even with two teams per block
  // (staged_rows.cuh's grid_rows_for). Same run, bf16, % of the copy ceiling: H100 92.1 / 93.0
  // against 87.9 / 87.8 in clusters of 4 on 120 SMs at 512x65536; H200 89.4-90.0 against
  // 81.0-82.4 there, 81.0-81.2 / 84.6 / 78.5-78.8 against 72.7-72.9 / 76.0-76.1 / 72.0-72.4 at
  // 839x40000 / 683x49152 / 419x80000. fused_mul_polynorm's (wider than 32768 bf16, as its
  // narrower ones split: kSplitRows) stay in clusters (KBENCH_FUSED_MUL_GRID_ROWS): H200 87.9-88.1
  // / 91.6-91.9 / 83.3-83.8 against 85.6-85.7 / 86.8-87.0 / 77.5-78.2 as grid rows at 40000 /
  // 49152 / 80000, -0.9 at 65536 (over three repetitions in a second call); H100 +0.5 to +3.1 at
  // 36608-49152, even at 80000, -1.0 at 65536.
  static constexpr bool kGridRows = !kHasMul || KBENCH_FUSED_MUL_GRID_ROWS;
  // Rows one block holds at most 4 stages deep, not kOneBlockMaxStages (staged_config.h): H100,
  // polynorm at 65536x512 bf16, 87.4-89.2% of the copy ceiling at 6 against 90.6-91.9 at 4.
  static constexpr int kOneBlockStages = staged_rows::kMaxStages;
  // polynorm's rows one block holds read into registers once, their stage refilled after the
  // row's sums (staged_rows.cuh's KBENCH_ROW_IN_REGS): H100, bf16, +1 to +2.4% of the copy
  // ceiling at 3072, 4K, 6144, 12288, 20480 and 32K, -0.8 at 16K; fp16 +0.3 to +1.3.
  // fused_mul_polynorm measured -0.3 to -1.3. With fast memory not at 8 packs: H200, bf16, two
  // repetitions, KBENCH_FAST_MEMORY 1 against 0, +0.9 to +2.1 at 2K / 4K / 8K / 16K without;
  // but at 6 packs (3072, 6144, 12288) -0.8 to -1.8 without, so those keep it.
  template <class Config>
  static constexpr bool kRowInRegsIn = !kHasMul && !(kFastMemory && Config::kPacks == 8);
  // And polynorm's pipelined rows over several blocks at 8 packs (64K bf16): H100 +2.1 at
  // 512x65536; at 5 of 8 packs -2 at 839x40000, 6 of 8 within 1. fused_mul_polynorm lost 0.7-1.7.
  // Not with fast memory: H200 88.1-88.2 without them against 82.9-84.3 at 512x65536.
  template <class Config>
  static constexpr bool kPipelinedRowInRegsIn = !kHasMul && !kFastMemory && Config::kPacks == kPacks;
  // fused_mul_polynorm's rows of 16385-32768 bf16 on one block, the row over two stages
  // (staged_config.h's kSplitRows), not over several blocks. Same run, % of the copy ceiling,
  // bf16: H100 95.1-95.9 against 92.9-94.4 at 1024x32768, +0.5 at 20480; H200 +4.5 at 20480,
  // and at 32K +0.6 on one machine, -1 on another (90.0-91.6 against 91.3-92.1). polynorm's
  // rows at 16 packs per thread measured 2-3 slower so (H200, 512x65536: 85.2-85.8 against
  // 87.7-88.9), as did rmsnorm's.
  static constexpr bool kSplitRows = kHasMul;
  // polynorm's rows of 4-6 packs per thread (stages of 32-48 KB: 512, 1K, 3072, 5120 bf16) on
  // two blocks per SM, 64 registers per thread (staged_rows.cuh's blocks_per_sm): twice the
  // warps to issue its arithmetic. Same run, % of the copy ceiling, two against one, bf16:
  // H200 91.1 / 90.9 / 89.1 against 88.9 / 88.8 / 84.5 at 32768x1024 / 8192x5120 / 65536x512;
  // H100 +0.1 / +1.1 / +0.3 there, +0.8 / +1.5 / +1.7 at 3072 / 6144 / 12288 (6 packs; fp16
  // +0.7 / +1.9 / +3.0). fused_mul_polynorm (3 packs per tensor at 512 and 5120) +1.6 / +0.2
  // on the H200, within its noise: one block.
  static constexpr int kBlocksPerSm = kHasMul ? 1 : 2;
  // fused_mul_polynorm's rows that fill 7/8 of 5 blocks of 256-thread teams at 4 packs
  // (35840-40960 bf16) over those 5, not 8 (staged_config.h's with_five_blocks): same run, bf16,
  // both as grid rows, H200 85.3-85.9% of the copy ceiling against 79.6-80.2 at 839x40000,
  // +4.8 to +6.5 at 36608 and 40960; H100 -0.1 to +0.9. polynorm's rows there take 5 of its 8
  // packs on 4 blocks (with_cluster_packs).
  static constexpr bool kFiveBlocks = kHasMul;
  static constexpr int kRounds = 1;
  static constexpr int kColGrads = 0;
  // The row's coefficients (kRowWeights), or its norms rsqrt(mean(x^2p) + eps) in c1..c3.
  using Stats = FwdCoefs;

  __device__ static const T* staged_row(const Params& p, int i, int64_t row) {
    return (i == 0 ? p.x : p.m) + row * p.cols;
  }
  __device__ static Held hold(const Params& p, int64_t) {
    if constexpr (kRowWeights) {
      return Held{};
    } else {
      return load_weights(p.w, p.b);
    }
  }
  __device__ static void add_sums(int, float4& sums, const Vec16<T> (&in)[kStaged], const Held&,
                                  const Stats&) {
    RowSums<3> s{{sums.x, sums.y, sums.z}};
    add_fwd_pack_sums(s, in[0]);
    sums = make_float4(s.v[0], s.v[1], s.v[2], 0.f);
  }
  __device__ static void finish_round(int, float4 total, Stats& s, const Params& p) {
    const RowSums<3> sums{{total.x, total.y, total.z}};
    if constexpr (kRowWeights) {
      s = fwd_coefs(sums, p.inv_cols, p.eps, load_weights_invariant(p.w, p.b));
    } else {
      s = fwd_coefs(sums, p.inv_cols, p.eps, PolyWeights{1.f, 1.f, 1.f, 0.f});  // norms only
    }
  }
  template <class Acc>
  __device__ static void store_out(const Params& p, int64_t row, int64_t col,
                                   const Vec16<T> (&in)[kStaged], const Held& held, const Stats& s, Acc&) {
    FwdCoefs c = s;
    if constexpr (!kRowWeights) c = FwdCoefs{held.w2 * s.c1, held.w1 * s.c2, held.w0 * s.c3, held.b};
    store_vec(p.y + row * p.cols + col, fwd_pack_out<T, kHasMul>(in[0], in[kStaged - 1], c));
  }
  static T* col_grad(const Params&, int) { return nullptr; }
};

// Rows the staged kernels leave (unaligned rows) go to
// v3's kernels.
template <bool kHasMul>
void launch_polynorm_fwd_v4(const LaunchArgs& a) {
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const FwdParams<T> p = fwd_params<T, kHasMul>(a);
    using Op = PolynormFwdStaged<T, kHasMul>;
    using FastMemoryOp = PolynormFwdStaged<T, kHasMul, !kHasMul>;  // fused_mul_polynorm: one policy
    if (!staged_rows::launch_staged_for_memory<Op, FastMemoryOp>(p, fwd_rows_aligned(p), a)) {
      launch_fwd_v2<T, kHasMul>(p, 0, stream_of(a));
    }
  });
}

// ----- the bulk-rows skeleton's op (kernels/common/bulk_rows.cuh) --------------------------

// x (and m) staged by bulk copies; x (and m) kept packed in registers from the sums to y (x
// converted again for y), the weights folded into the row's coefficients. The impls' policies
// (which rows, how many packs) derive from it: polynorm.cu, fused_mul_polynorm.cu.
template <class T, bool kHasMul>
struct PolynormFwdBulk {
  using Type = T;
  using Params = FwdParams<T>;
  using Sums = float4;  // sum x^2, x^4, x^6 (.w unused)
  struct Held {};
  struct KeptX {
    Vec16<T> x;
  };
  struct KeptXM {
    Vec16<T> x, m;
  };
  using Kept = std::conditional_t<kHasMul, KeptXM, KeptX>;
  using Stats = FwdCoefs;
  static constexpr int kStaged = kHasMul ? 2 : 1;  // x (, m)
  static constexpr bool kSecondRound = false;

  static bool aligned(const Params& p) { return fwd_rows_aligned(p); }
  __device__ static const T* staged(const Params& p, int i) { return i == 0 ? p.x : p.m; }
  __device__ static Held hold(const Params&, int, bool) { return Held{}; }
  __device__ static void keep_held_packed(Held&) {}
  __device__ static Kept take(const Params&, const Vec16<T> (&in)[kStaged], int64_t, int,
                              float4& sums) {
    RowSums<3> s{{sums.x, sums.y, sums.z}};
    add_fwd_pack_sums(s, in[0]);
    sums = make_float4(s.v[0], s.v[1], s.v[2], 0.f);
    Kept kept;
    kept.x = in[0];
    if constexpr (kHasMul) kept.m = in[kStaged - 1];
    keep_packed(kept.x);  // converted again for y, not kept as floats
    return kept;
  }
  __device__ static Stats stats(const Params& p, float4 total) {
    const RowSums<3> sums{{total.x, total.y, total.z}};
    return fwd_coefs(sums, p.inv_cols, p.eps, load_weights_invariant(p.w, p.b));
  }
  __device__ static void store(const Params& p, int64_t row, int col, const Kept& kept,
                               const Held&, const Stats& c) {
    if constexpr (kHasMul) {
      store_vec(p.y + row * p.cols + col, fwd_pack_out<T, true>(kept.x, kept.m, c));
    } else {
      store_vec(p.y + row * p.cols + col, fwd_pack_out<T, false>(kept.x, kept.x, c));
    }
  }
};

// Both ops' v5_bulk_rows: the rows Policy<T> takes on the bulk kernel, other rows (and GPUs
// before sm_90) on v4's.
template <template <class> class Policy, bool kHasMul>
void launch_polynorm_fwd_bulk(const LaunchArgs& a) {
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const FwdParams<T> p = fwd_params<T, kHasMul>(a);
    if (!bulk_rows::launch_bulk_rows<Policy<T>>(p, a)) launch_polynorm_fwd_v4<kHasMul>(a);
  });
}

// =============================================================================================
// Backward: the scalar gradients
//
// Every version writes one float4 (dw0, dw1, dw2, db) per row (v1), per block (v2) or per
// cluster (v3) into the workspace; polynorm_bwd_finalize sums them in a fixed order
// (deterministic) into the fp32 outputs dw and db. v3 launches it to overlap the end of its
// main kernel (launch_overlapping_previous), so it waits for that kernel first.
// =============================================================================================

constexpr int kFinalizeThreads = 256;

__global__ void __launch_bounds__(kFinalizeThreads)
    polynorm_bwd_finalize(const float4* partials, int64_t count, float* dw, float* db) {
  __shared__ RowSums<4> scratch[kFinalizeThreads / kWarpSize];
  wait_for_previous_grid();
  RowSums<4> s = zero_sums<4>();
  for (int64_t i = threadIdx.x; i < count; i += kFinalizeThreads) {
    const float4 v = partials[i];
    s.v[0] += v.x;
    s.v[1] += v.y;
    s.v[2] += v.z;
    s.v[3] += v.w;
  }
  s = team_sums<kFinalizeThreads>(s, scratch);
  if (threadIdx.x == 0) {
    dw[0] = s.v[0];
    dw[1] = s.v[1];
    dw[2] = s.v[2];
    db[0] = s.v[3];
  }
}

template <class T>
void launch_bwd_finalize(const BwdParams<T>& p, const float4* partials, int64_t count,
                         gpuStream_t stream, bool overlap = false) {
  launch_overlapping_previous(polynorm_bwd_finalize, dim3(1), kFinalizeThreads, stream,
                              overlap && KBENCH_OVERLAP_FINALIZE, partials, count, p.dw, p.db);
}

// =============================================================================================
// Backward v1_naive: block per row, scalar loads, two passes (row sums, then dx); each row's
// (dw, db) share to the workspace; then the finalize kernel.
// =============================================================================================

template <class T, bool kHasMul>
__global__ void __launch_bounds__(kNaiveThreads)
    polynorm_bwd_naive_rows(BwdParams<T> p, float4* partials) {
  __shared__ float scratch[kMaxWarps];
  const PolyWeights w = load_weights(p.w, p.b);
  const float inv_cols = p.inv_cols;
  const auto grad = [&p](int64_t i) {
    const float dy = to_float(p.dy[i]);
    if constexpr (kHasMul) return dy * to_float(p.m[i]);
    return dy;
  };
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t offset = row * p.cols;
    RowSums<6> s = zero_sums<6>();
    float sum_g = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float g = grad(offset + j);
      add_bwd_sums(s, g, to_float(p.x[offset + j]));
      sum_g += g;
    }
#pragma unroll
    for (int k = 0; k < 6; ++k) s.v[k] = block_reduce_sum(s.v[k], scratch);
    sum_g = block_reduce_sum(sum_g, scratch);
    const BwdRow r = bwd_row(s, inv_cols, p.eps, w);
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float x = to_float(p.x[offset + j]);
      p.dx[offset + j] = from_float<T>(bwd_dx(grad(offset + j), x, r));
      if constexpr (kHasMul) {
        p.dm[offset + j] = from_float<T>(to_float(p.dy[offset + j]) * poly_value(x, r.poly));
      }
    }
    if (threadIdx.x == 0) partials[row] = make_float4(r.dw0, r.dw1, r.dw2, sum_g);
  }
}

size_t bwd_v1_workspace(const Shape& s, DType, int) {
  return static_cast<size_t>(std::max<int64_t>(s.m, 1)) * sizeof(float4);
}

template <class T, bool kHasMul>
void launch_bwd_v1_typed(const LaunchArgs& a) {
  const BwdParams<T> p = bwd_params<T, kHasMul>(a);
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, bwd_v1_workspace(a.shape, a.dtype, a.sm_count), "polynorm_bwd v1");
  float4* partials = static_cast<float4*>(a.workspace);
  polynorm_bwd_naive_rows<T, kHasMul><<<row_blocks(std::max<int64_t>(p.rows, 1)), kNaiveThreads, 0, stream>>>(p, partials);
  KB_GPU_CHECK_LAUNCH();
  launch_bwd_finalize(p, partials, p.rows, stream);
}

template <bool kHasMul>
void launch_polynorm_bwd_v1(const LaunchArgs& a) {
  dispatch_dtype(a.dtype, [&](auto tag) { launch_bwd_v1_typed<typename decltype(tag)::type, kHasMul>(a); });
}

// =============================================================================================
// Backward v2_vec16_persistent: one pass, dy, x (and m) in registers.
//
// The forward's team layout: a team holds a row's dy, x (and m) packs, takes the six row sums
// in one pass (team_sums of six: one barrier), then writes dx (and dm) from the
// same registers. dw needs no per-element accumulator: lane 0 of each team adds the row's
// r_k * sum(G x^p); db is a per-thread running sum of G. At the end the block reduces its
// four accumulators into one float4 partial; the finalize kernel adds the grid's partials
// (<= 4 x 132 float4 on an H100: nothing next to the rows' traffic).
//
// Registers: 2 (3 fused) tensors x kPacks packs x 4 registers plus ~30 for addresses, the
// row's coefficients and the accumulators. Work per element: 9 (+1 fused) for the sums,
// 10 for dx (+5 for G and dm fused): ~22-28 against 6 (10) bytes in bf16, about half the
// issue rate at full HBM bandwidth.
// =============================================================================================

template <class T, bool kHasMul, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    polynorm_bwd_regs(BwdParams<T> p, float4* partials) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kTeams = kBlock / kTeam;
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  __shared__ RowSums<6> scratch[2][kBlock / kWarpSize];
  __shared__ RowSums<4> block_scratch[kBlock / kWarpSize];

  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  const int cols = static_cast<int>(p.cols);  // <= kTeam * kPacks * V on this path
  const auto pack_col = [lane](int k) { return (k * kTeam + lane) * V; };
  const PolyWeights w = load_weights(p.w, p.b);
  const float inv_cols = p.inv_cols;
  float dw_acc0 = 0.f, dw_acc1 = 0.f, dw_acc2 = 0.f;  // lane 0 of each team
  float db_acc = 0.f;                                 // every thread

  int buf = 0;
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kTeams;
  for (int64_t first_row = static_cast<int64_t>(blockIdx.x) * kTeams; first_row < p.rows;
       first_row += row_stride) {
    const int64_t row = first_row + team;
    const int valid = row < p.rows ? cols : 0;  // 0: this team has no row this round
    const int64_t offset = row * p.cols;

    Vec16<T> dyv[kPacks];
    Vec16<T> xv[kPacks];
    Vec16<T> mv[kHasMul ? kPacks : 1];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      dyv[k] = load_row_pack<T, kVector, true>(p.dy + offset, pack_col(k), valid);
      xv[k] = load_row_pack<T, kVector, true>(p.x + offset, pack_col(k), valid);
      if constexpr (kHasMul) mv[k] = load_row_pack<T, kVector, true>(p.m + offset, pack_col(k), valid);
    }
    // The fused op's pack k of m; polynorm_bwd passes x's, which is never read as m.
    const auto m_pack = [&](int k) -> const Vec16<T>& {
      if constexpr (kHasMul) {
        return mv[k];
      } else {
        return xv[k];
      }
    };

    RowSums<6> s = zero_sums<6>();
#pragma unroll
    for (int k = 0; k < kPacks; ++k) add_bwd_pack_sums<T, kHasMul>(s, db_acc, dyv[k], xv[k], m_pack(k));
    s = team_sums<kTeam>(s, scratch[buf]);
    buf ^= 1;
    if (valid == 0) continue;  // past the barrier; nothing below synchronizes

    const BwdRow r = bwd_row(s, inv_cols, p.eps, w);
    if (lane == 0) {
      dw_acc0 += r.dw0;
      dw_acc1 += r.dw1;
      dw_acc2 += r.dw2;
    }
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      // Convert again rather than keep the row alive as floats (2x the registers).
      reload_pack(dyv[k], p.opaque_zero);
      reload_pack(xv[k], p.opaque_zero);
      if constexpr (kHasMul) reload_pack(mv[k], p.opaque_zero);
      Vec16<T> dxv, dmv;
      bwd_pack_out<T, kHasMul>(dyv[k], xv[k], m_pack(k), r, dxv, dmv);
      store_pack<T, kVector>(p.dx + offset, pack_col(k), valid, dxv);
      if constexpr (kHasMul) store_pack<T, kVector>(p.dm + offset, pack_col(k), valid, dmv);
    }
  }

  const RowSums<4> acc = team_sums<kBlock>(RowSums<4>{{dw_acc0, dw_acc1, dw_acc2, db_acc}}, block_scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = make_float4(acc.v[0], acc.v[1], acc.v[2], acc.v[3]);
}

// Rows beyond register capacity: block per row, the row walked in chunks twice (sums, then dx
// from a re-read that mostly hits L2), as the forward's chunked kernel.
template <class T, bool kHasMul, int kBlock, int kPacks, bool kVector>
__global__ void __launch_bounds__(kBlock, 1)
    polynorm_bwd_chunked(BwdParams<T> p, float4* partials) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int64_t kChunk = int64_t{kBlock} * kPacks * V;
  __shared__ RowSums<6> scratch[2][kBlock / kWarpSize];
  __shared__ RowSums<4> block_scratch[kBlock / kWarpSize];
  const auto pack_col = [](int64_t base, int k) {
    return base + static_cast<int64_t>(k * kBlock + static_cast<int>(threadIdx.x)) * V;
  };
  const PolyWeights w = load_weights(p.w, p.b);
  const float inv_cols = p.inv_cols;
  float dw_acc0 = 0.f, dw_acc1 = 0.f, dw_acc2 = 0.f;  // thread 0
  float db_acc = 0.f;                                 // every thread

  int buf = 0;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t offset = row * p.cols;
    RowSums<6> s = zero_sums<6>();
    for (int64_t base = 0; base < p.cols; base += kChunk) {
      Vec16<T> dyv[kPacks];
      Vec16<T> xv[kPacks];
      Vec16<T> mv[kPacks];
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t col = pack_col(base, k);
        dyv[k] = load_row_pack<T, kVector, false>(p.dy + offset, col, p.cols);
        xv[k] = load_row_pack<T, kVector, false>(p.x + offset, col, p.cols);
        mv[k] = kHasMul ? load_row_pack<T, kVector, false>(p.m + offset, col, p.cols) : xv[k];
      }
#pragma unroll
      for (int k = 0; k < kPacks; ++k) add_bwd_pack_sums<T, kHasMul>(s, db_acc, dyv[k], xv[k], mv[k]);
    }
    s = team_sums<kBlock>(s, scratch[buf]);
    buf ^= 1;
    const BwdRow r = bwd_row(s, inv_cols, p.eps, w);
    if (threadIdx.x == 0) {
      dw_acc0 += r.dw0;
      dw_acc1 += r.dw1;
      dw_acc2 += r.dw2;
    }

    for (int64_t base = 0; base < p.cols; base += kChunk) {
      Vec16<T> dyv[kPacks];
      Vec16<T> xv[kPacks];
      Vec16<T> mv[kPacks];
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t col = pack_col(base, k);
        dyv[k] = load_row_pack<T, kVector, true>(p.dy + offset, col, p.cols);
        xv[k] = load_row_pack<T, kVector, true>(p.x + offset, col, p.cols);
        mv[k] = kHasMul ? load_row_pack<T, kVector, true>(p.m + offset, col, p.cols) : xv[k];
      }
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t col = pack_col(base, k);
        Vec16<T> dxv, dmv;
        bwd_pack_out<T, kHasMul>(dyv[k], xv[k], mv[k], r, dxv, dmv);
        store_pack<T, kVector>(p.dx + offset, col, p.cols, dxv);
        if constexpr (kHasMul) store_pack<T, kVector>(p.dm + offset, col, p.cols, dmv);
      }
    }
  }

  const RowSums<4> acc = team_sums<kBlock>(RowSums<4>{{dw_acc0, dw_acc1, dw_acc2, db_acc}}, block_scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = make_float4(acc.v[0], acc.v[1], acc.v[2], acc.v[3]);
}

constexpr int kBwdMaxBlocksPerSm = 4;  // the largest kMinBlocks below: bounds the partials

// Calls f(RegsConfig<...>{}) with the smallest team that holds `packs` packs per row in
// registers; returns false (calling nothing) when the row is beyond register capacity.
// Registers: 256-thread blocks run 4 per SM (64 registers) for polynorm_bwd, 3 (85) for the
// fused op's third tensor; 512-thread teams 2 (64) and 1 (128); 1024-thread teams only
// without m. The scalar variant holds half the packs per thread (its per-element addresses
// and bounds cost registers).
template <bool kHasMul, bool kVector, class F>
bool with_bwd_config_of(int64_t packs, F&& f) {
  constexpr int P = kVector ? 4 : 2;
  constexpr int W = kWarpSize;
  constexpr int kMin256 = kHasMul ? 3 : 4;
  constexpr int kMin512 = kHasMul ? 1 : 2;
  static_assert(kMin256 <= kBwdMaxBlocksPerSm && kMin512 <= kBwdMaxBlocksPerSm);
  if (packs <= W * P) return f(RegsConfig<256, W, P, kMin256, kVector>{}), true;
  if (packs <= 2 * W * P) return f(RegsConfig<256, 2 * W, P, kMin256, kVector>{}), true;
  if (packs <= 128 * P) return f(RegsConfig<256, 128, P, kMin256, kVector>{}), true;
  if (packs <= 256 * P) return f(RegsConfig<256, 256, P, kMin256, kVector>{}), true;
  if (packs <= 512 * P) return f(RegsConfig<512, 512, P, kMin512, kVector>{}), true;
  if constexpr (!kHasMul) {
    if (packs <= 1024 * P) return f(RegsConfig<1024, 1024, P, 1, kVector>{}), true;
  }
  return false;
}

// One float4 partial per block: at most kBwdMaxBlocksPerSm blocks per SM, never more blocks
// than rows.
size_t bwd_v2_workspace(const Shape& s, DType, int sm_count) {
  return static_cast<size_t>(max_persistent_blocks(s.m, sm_count, kBwdMaxBlocksPerSm)) *
         sizeof(float4);
}

template <class T, bool kHasMul>
void launch_bwd_v2_typed(const LaunchArgs& a) {
  constexpr int V = Vec16<T>::kSize;
  const BwdParams<T> p = bwd_params<T, kHasMul>(a);
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, bwd_v2_workspace(a.shape, a.dtype, a.sm_count), "polynorm_bwd v2");
  float4* partials = static_cast<float4*>(a.workspace);
  const bool vector = bwd_rows_aligned(p);
  const int64_t sms = std::max(a.sm_count, 1);
  const int64_t rows = std::max<int64_t>(p.rows, 1);
  int grid = 0;

  const auto launch_regs = [&](auto config) {
    using C = decltype(config);
    grid = static_cast<int>(std::min(ceil_div(rows, C::kTeams), sms * C::kMinBlocks));
    polynorm_bwd_regs<T, kHasMul, C::kBlock, C::kTeam, C::kPacks, C::kMinBlocks, C::kVector>
        <<<grid, C::kBlock, 0, stream>>>(p, partials);
  };
  const int64_t packs = ceil_div(p.cols, V);
  const bool in_registers = vector ? with_bwd_config_of<kHasMul, true>(packs, launch_regs)
                                   : with_bwd_config_of<kHasMul, false>(packs, launch_regs);
  if (!in_registers) {
    grid = static_cast<int>(std::min(rows, sms));
    if (vector) {
      polynorm_bwd_chunked<T, kHasMul, kChunkedBlock, 2, true><<<grid, kChunkedBlock, 0, stream>>>(p, partials);
    } else {
      polynorm_bwd_chunked<T, kHasMul, kChunkedBlock, 1, false><<<grid, kChunkedBlock, 0, stream>>>(p, partials);
    }
  }
  KB_GPU_CHECK_LAUNCH();
  launch_bwd_finalize(p, partials, grid, stream);
}

template <bool kHasMul>
void launch_polynorm_bwd_v2(const LaunchArgs& a) {
  dispatch_dtype(a.dtype, [&](auto tag) { launch_bwd_v2_typed<typename decltype(tag)::type, kHasMul>(a); });
}

// =============================================================================================
// Backward v3_vec16_staged: the staged-rows policy (kernels/common/staged_rows.cuh).
//
// dy, x (and m) staged in shared memory, the next rows in flight while this one computes. The
// seven row sums (v2's six and sum G, so that db, like dw, is a per-row value) travel as one
// RowSums<8>; each row adds (dw0, dw1, dw2, db) to its team's totals, which the skeleton writes
// as one float4 per cluster (row_total), and the finalize kernel above adds those. Nothing is
// held per column: the four weights are read (from L1) once per row.
// =============================================================================================

// polynorm_bwd's half teams at 5120 (PolynormBwdStaged::kHalfTeams; 0: a knob for
// scripts/ab-flags.sh).
#ifndef KBENCH_BWD_HALF_TEAMS
#define KBENCH_BWD_HALF_TEAMS 1
#endif
template <class T, bool kHasMul>
struct PolynormBwdStaged {
  using Type = T;
  using Params = BwdParams<T>;
  struct Held {};
  using Sums = RowSums<8>;  // x^2, x^4, x^6, G x, G x^2, G x^3, G; .v[7] unused
  static constexpr int kStaged = kHasMul ? 3 : 2;  // dy, x, m
  static constexpr int kPacks = staged_rows::kPacks;
  // Rows over several blocks at 2 packs per thread where they fill them (staged_config.h's
  // with_staged_config): three staged tensors then fit 4 stages instead of 2, so the rows are
  // pipelined and take grid rows. Same run, H100, bf16, fused_mul_polynorm_bwd at 1024x32768 /
  // 512x65536: 85.8 / 85.7% of the copy ceiling against 86.7 / 82.7 (at 4 packs); 768x40000
  // (61% of the slots filled) 69-71 against 75, so there it keeps 4. Two staged tensors
  // (polynorm_bwd) measured 9-11 points slower at 2 packs.
  static constexpr int kClusterPacks = kHasMul ? 2 : kPacks;
  // But fused_mul_polynorm_bwd's rows of 28672-32768 bf16 (7/8 or more of 8 blocks of 128-thread
  // teams at 4 packs) keep 4 (staged_config.h's kFullRowsKeepPacks). Same run, H200, bf16:
  // 81.5-82.0% of the copy ceiling against 74.0-74.4 at 1170x28672, 81.6-83.8 against 78.4-79.3
  // at 1024x32768.
  static constexpr bool kFullRowsKeepPacks = kHasMul;
  static constexpr int kRounds = 1;
  static constexpr int kColGrads = 0;
  // Rows of 32768 bf16: 8 blocks of four 128-thread teams, not 4 of two 256-thread ones (H100,
  // bf16: polynorm_bwd 69.1 / 71.4 -> 81.2 / 77.7% of the copy ceiling, fused_mul_polynorm_bwd
  // 80.9 / 81.9 -> 87.7 / 87.3; rmsnorm_bwd and layernorm_bwd were 1 and 7 points slower so).
  static constexpr int kClusterTeam = 128;
  // Grid rows wherever pipelined (polynorm_bwd; fused_mul_polynorm_bwd's three staged tensors
  // are not): same run, H100, bf16, 82.5 / 84.0% of the copy ceiling at 1024x32768 / 512x65536
  // against 77.0 / 74.8 in clusters of 8 on 120 SMs (staged_rows.cuh's grid_rows_for).
  static constexpr bool kGridRows = true;
  // polynorm_bwd's rows of 16385-32768 bf16 on one block, the row over two stages
  // (staged_config.h's kSplitRows): 64 elements per thread per row and no sums across blocks.
  // Same run, bf16, % of the copy ceiling: H200 84.2-84.5 against 78.9-79.2 at 1024x32768,
  // 76 against 65 at 1638x20480; H100 +4.5 at 32K, +8.3 at 20480, fp32 +5 at 2048x16384.
  // Three staged tensors (fused_mul_polynorm_bwd) would need 288 KB.
  static constexpr bool kSplitRows = !kHasMul;
  // Four packs per thread even at 5120 bf16, where 3 would hold the row (H100: polynorm_bwd
  // 84.9-85.3 against 83.2-83.3% of the copy ceiling fitted; fused_mul_polynorm_bwd the same).
  // (H200, same run: fused_mul_polynorm_bwd +2.5 fitted, polynorm_bwd +0.4.)
  static constexpr bool kFitPacks = false;
  // Rows of 513-640 packs (4104-5120 bf16) on 128 threads at 5 packs (2 stages of 80 KB), not
  // 256 at 4 (3 of 64 KB, 62% of the slots used at 5120): each thread sums 40 elements per row
  // rather than 20, over a team of 4 warps. Same run, H200, bf16, 8192x5120, two repetitions:
  // 84.1 / 83.4% of the copy ceiling against 80.0 / 80.3. Three staged tensors at 5 packs need
  // 240 KB a stage pair: fused_mul_polynorm_bwd keeps 4.
  static constexpr bool kHalfTeams = !kHasMul && KBENCH_BWD_HALF_TEAMS;
  // polynorm_bwd's rows of 32776-49152 bf16 over groups of 10 or 12 blocks of four 128-thread
  // teams, not 8 blocks of two 256-thread ones (staged_config.h's kWidePastEight; H200 +7 to
  // +10.5 at 40000-49152). fused_mul_polynorm_bwd's rows there have 2 stages: not pipelined,
  // so no grid rows, and groups past 8 blocks are only those.
  static constexpr bool kWidePastEight = !kHasMul;
  // fused_mul_polynorm_bwd's rows that fill 7/8 of 5 blocks of its teams at 4 packs (256-thread
  // teams: 35840-40960 bf16; 128-thread: 17920-20480) over those 5, not 8 (staged_config.h's
  // with_five_blocks). Same run, bf16, % of the copy ceiling: H200 79.2-79.4 / 79.0 / 82.3-82.6
  // against 71.8 / 73.9-74.0 / 78.3-79.3 at 1872x17920 / 1820x18432 / 1638x20480, +0.6 to +1.7
  // at 36608-40960; H100 +1.1 to +2.2 at 18432 / 20480, +1.0 to +3.3 at 36608-40960.
  // polynorm_bwd's rows there take one block (split rows) or groups of 10 (kWidePastEight). Its
  // 256-thread rows (35840-40960) take 10 blocks at 2 packs since (kTenOrTwelveBlocks, below).
  static constexpr bool kFiveBlocks = kHasMul;
  // fused_mul_polynorm_bwd's rows that fill 7/8 of 10 or 12 blocks of 256-thread teams at 2
  // packs (35840-40960 and 43008-49152 bf16) over those, as grid rows (4 stages, pipelined),
  // not 5 or 8 blocks at 4 packs (2 stages; staged_config.h's with_ten_or_twelve_blocks). Same
  // run, bf16, % of the copy ceiling: H200 76.4-77.1 against 71.8-72.1 at 683x49152, +0.4 to
  // +1.0 at 40000 / 40960, -0.3 / -1.1 at 36608 / 44000; H100 +0.6 to +5.9 in one call, -1.4 to
  // +2.1 in another. fused_add_rmsnorm_bwd lost 4-10 so (H100).
  static constexpr bool kTenOrTwelveBlocks = kHasMul;
  struct Stats {
    BwdRow row;
    float sum_g;
  };

  __device__ static const T* staged_row(const Params& p, int i, int64_t row) {
    return (i == 0 ? p.dy : (i == 1 ? p.x : p.m)) + row * p.cols;
  }
  __device__ static Held hold(const Params&, int64_t) { return Held{}; }
  __device__ static void add_sums(int, Sums& sums, const Vec16<T> (&in)[kStaged], const Held&,
                                  const Stats&) {
    add_bwd_pack_sums<T, kHasMul>(sums, sums.v[6], in[0], in[1], in[kStaged - 1]);
  }
  __device__ static void finish_round(int, const Sums& total, Stats& s, const Params& p) {
    s.row = bwd_row(total, p.inv_cols, p.eps, load_weights(p.w, p.b));
    s.sum_g = total.v[6];
  }
  template <class Acc>
  __device__ static void store_out(const Params& p, int64_t row, int64_t col,
                                   const Vec16<T> (&in)[kStaged], const Held&, const Stats& s, Acc&) {
    Vec16<T> dxv, dmv;
    bwd_pack_out<T, kHasMul>(in[0], in[1], in[kStaged - 1], s.row, dxv, dmv);
    store_vec(p.dx + row * p.cols + col, dxv);
    if constexpr (kHasMul) store_vec(p.dm + row * p.cols + col, dmv);
  }
  __device__ static float4 row_total(const Stats& s) {
    return make_float4(s.row.dw0, s.row.dw1, s.row.dw2, s.sum_g);
  }
  // The same inside the kernel (staged_rows.cuh's finalizes_in_kernel): the sum of the totals.
  __device__ static void write_totals(const Params& p, float4 total) {
    p.dw[0] = total.x;
    p.dw[1] = total.y;
    p.dw[2] = total.z;
    p.db[0] = total.w;
  }
  static void finish_totals(const Params& p, const float4* totals, int64_t count, gpuStream_t stream,
                            bool overlap) {
    launch_bwd_finalize(p, totals, count, stream, overlap);
  }
  static T* col_grad(const Params&, int) { return nullptr; }
};

size_t bwd_v3_workspace(const Shape& s, DType dtype, int sm_count) {
  return std::max(bwd_v2_workspace(s, dtype, sm_count), staged_rows::totals_workspace_bytes(s, sm_count));
}

// Rows the staged kernels leave (unaligned, or wider than they hold) go to v2's kernels.
template <bool kHasMul>
void launch_polynorm_bwd_v3(const LaunchArgs& a) {
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const BwdParams<T> p = bwd_params<T, kHasMul>(a);
    if (!staged_rows::launch_staged<PolynormBwdStaged<T, kHasMul>>(p, bwd_rows_aligned(p), a)) {
      launch_bwd_v2_typed<T, kHasMul>(a);
    }
  });
}

}  // namespace
}  // namespace kbench
