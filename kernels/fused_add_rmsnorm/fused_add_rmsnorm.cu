// fused_add_rmsnorm forward: h = x + r, y = h * rsqrt(mean(h^2) + eps) * w over each row of
// x[M, N] and r[M, N]; w[N]. Outputs y and h, both in the run's dtype. fp32 arithmetic; h is
// rounded once and y is computed from the rounded h (what the next layer sees as residual).
//
// Minimum traffic: read x, r once, write y, h once, read w: (4*M*N + N) * sizeof(T) bytes.
//
// Versions (each one registered at the end of this file as an impl of op "fused_add_rmsnorm"):
//   v1_naive        one 256-thread block per row, scalar accesses: pass 1 writes h and sums
//                   h^2, pass 2 reads h back (its own writes, from L2) and writes y.
//   v2_vec16_regs   rmsnorm's register-row kernel with the add fused in (rmsnorm_rows.cuh,
//                   kAdd): x and r read once, h = x + r held in registers for the row sum and
//                   y, w re-read per row from L1; two passes beyond register capacity. On a
//                   non-persistent grid, as rmsnorm's v4_vec16_rows_grid.
//   v3_vec16_staged x and r staged in shared memory by async copies, each team's next rows in
//                   flight while it reduces and writes this one (kernels/common/
//                   staged_rows.cuh, as rmsnorm's v5): h = x + r summed from shared memory,
//                   then h and y written (h in the sums pass, kept over x, where a team of 256
//                   or 512 threads of one block holds the row in one stage); split rows up to
//                   32768 bf16, a cluster of blocks per row past that. Unaligned rows take v2's.
//   v4_bulk_rows    x and r of each row staged by two bulk copies (TMA, sm_90), a block of one
//                   team per row, 512 threads per SM in 1-16 blocks, 3-8 rows in flight
//                   each; h written as soon as it is made, y after the row sum; full rows
//                   (N = 1024 * 2^k bf16, and 3, 5, 6, 7, 10, 12, 14 K on teams of that
//                   many warps) without a branch per pack. Rows of up to 16384 bf16; wider,
//                   unaligned rows and GPUs before sm_90 take v3.
#include <cstdint>

#include "harness/registry.h"
#include "kernels/common/bulk_rows.cuh"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"
#include "kernels/common/staged_rows.cuh"
#include "kernels/rmsnorm/rmsnorm_rows.cuh"

namespace kbench {
namespace {

using rmsnorm_rows::FwdParams;

template <class T>
FwdParams<T> fused_add_params(const LaunchArgs& a) {
  FwdParams<T> p{static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[2]),
                 static_cast<T*>(a.outputs[0]), a.shape.m, a.shape.n, a.eps};
  p.r = static_cast<const T*>(a.inputs[1]);
  p.h = static_cast<T*>(a.outputs[1]);
  return p;
}

// ---------------------------------------------------------------------------------------------
// v1_naive
// ---------------------------------------------------------------------------------------------

constexpr int kNaiveThreads = 256;

template <class T>
__global__ void __launch_bounds__(kNaiveThreads) fused_add_rmsnorm_naive(FwdParams<T> p) {
  __shared__ float scratch[kMaxWarps];
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t offset = row * p.cols;
    float sum_sq = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const T h = from_float<T>(to_float(p.x[offset + j]) + to_float(p.r[offset + j]));
      p.h[offset + j] = h;
      sum_sq += to_float(h) * to_float(h);
    }
    sum_sq = block_reduce_sum(sum_sq, scratch);
    const float rstd = rsqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {  // the same j: own writes
      p.y[offset + j] = from_float<T>(to_float(p.h[offset + j]) * rstd * to_float(p.w[j]));
    }
  }
}

template <class T>
void launch_v1(const FwdParams<T>& p, gpuStream_t stream) {
  fused_add_rmsnorm_naive<T><<<row_blocks(p.rows), kNaiveThreads, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// v3_vec16_staged: the staged-rows policy (kernels/common/staged_rows.cuh)
// ---------------------------------------------------------------------------------------------

// h stored in the sums pass, made once (1, the default, for rows a team of 256 or 512 threads
// of one block holds: staged_rows.cuh's restages), or made again with y from x and r and stored
// with it (0, a knob for scripts/ab-flags.sh).
#ifndef KBENCH_FUSED_ADD_EARLY_H
#define KBENCH_FUSED_ADD_EARLY_H 1
#endif

// rmsnorm's policy (Held, Sums, Stats, finish_round) with x and r staged and h = x + r made
// from them where rmsnorm reads x.
template <class T>
struct FusedAddRmsnormStaged : rmsnorm_rows::RmsnormFwdStaged<T> {
  using Base = rmsnorm_rows::RmsnormFwdStaged<T>;
  static constexpr int kStaged = 2;  // x, r
  static constexpr int kPacks = staged_rows::kPacks;  // two staged tensors: 8 leave 1 stage
  // Rows of 16385-32768 bf16 on one block, the row over two stages (staged_config.h's
  // kSplitRows), not over several blocks. Same run, % of the copy ceiling, three repetitions:
  // H100 94.0-94.2 against 91.3-91.4 at 1024x32768 bf16, +2.6 fp16, +1.5 fp32 at 2048x16384;
  // H200 90.6-91.0 against 87.6-89.7 at 32K; but -1.5 at 1638x20480 (62% of the slots) on both.
  static constexpr bool kSplitRows = true;
  // Wider rows (64K bf16: 8 blocks of two 256-thread teams) stay in clusters: as grid rows
  // (kGridRows = true), same run, three repetitions, H200 91.2 against 89.4-90.2% of the copy
  // ceiling at 512x65536 bf16, but H100 90.0-90.5 against 91.7-92.1 at 1024x65536 and -0.3 to
  // -1.8 at every other 64K point and in fp32. Grid rows on GPUs with fast memory only, where
  // they put more blocks to work, measured lower on an H200 that holds 15 clusters of 8 (120
  // SMs, against grid rows' 128), same run, three repetitions: 88.2-88.9 against 89.7-90.5 at
  // 512x65536, 86.5-87.1 against 90.2-90.7 at 1024x65536, 3.0-4.7 lower at 40000-57344 (fp16
  // -2.9, fp32 -1.3 at 64K; kernels/rmsnorm/NOTES.md, forty-ninth session).

  __device__ static const T* staged_row(const FwdParams<T>& p, int i, int64_t row) {
    return (i == 0 ? p.x : p.r) + row * p.cols;
  }
  // The sums are of h rounded to T, as written and as y is computed from.
  __device__ static void add_sums(int, float2& sums, const Vec16<T> (&in)[2], const Vec16<T>&,
                                  const typename Base::Stats&) {
    Base::add_squares(sums, rmsnorm_rows::add_packs(in[0], in[1]));
  }
  // h needs no row sum: where a team of 256 or 512 threads of one block holds the row, it is
  // written in the sums pass and kept in x's slot (staged_rows.cuh's restages), so the outputs
  // pass reads h and makes only y. Same run, bf16, % of the copy ceiling, three repetitions,
  // against h made again and stored with y: H200 +0.6 / +1.3 / +0.8 at 5120 / 8K / 16K, H100
  // +0.7 / +0.7 / +1.3 (fp16 +1.1 / +1.7 at 16K). Written so for every row it measured -0.3 to
  // -0.7 for warp teams (1K, 2K) and split or cluster rows (32K, 64K) on both cards, and h
  // made once but stored with y within +-0.4 of before (H100): the stores' timing is the gain.
  template <class Config>
  static constexpr bool kRestagesIn = KBENCH_FUSED_ADD_EARLY_H && Config::kTeam >= 256 &&
                                      Config::kCluster == 1 && Config::kSplit == 1;
  __device__ static Vec16<T> add_sums_restage(int, float2& sums, const Vec16<T> (&in)[2],
                                              const Vec16<T>&, const typename Base::Stats&,
                                              const FwdParams<T>& p, int64_t row, int64_t col) {
    const Vec16<T> hv = rmsnorm_rows::add_packs(in[0], in[1]);
    store_vec(p.h + row * p.cols + col, hv);
    Base::add_squares(sums, hv);
    return hv;
  }
  template <class Acc>
  __device__ static void store_restaged(const FwdParams<T>& p, int64_t row, int64_t col,
                                        const Vec16<T> (&in)[2], const Vec16<T>& w,
                                        const typename Base::Stats& s, Acc&) {
    store_vec(p.y + row * p.cols + col, rmsnorm_rows::normalize(in[0], w, s.rstd));  // in[0]: h
  }
  template <class Acc>
  __device__ static void store_out(const FwdParams<T>& p, int64_t row, int64_t col,
                                   const Vec16<T> (&in)[2], const Vec16<T>& w,
                                   const typename Base::Stats& s, Acc&) {
    const Vec16<T> hv = rmsnorm_rows::add_packs(in[0], in[1]);
    const int64_t offset = row * p.cols + col;
    store_vec(p.h + offset, hv);
    store_vec(p.y + offset, rmsnorm_rows::normalize(hv, w, s.rstd));
  }
};

template <class T>
void launch_v3(const FwdParams<T>& p, const LaunchArgs& a) {
  using Op = FusedAddRmsnormStaged<T>;
  if (!staged_rows::launch_staged<Op>(p, rmsnorm_rows::fwd_rows_aligned(p), a)) {
    rmsnorm_rows::launch_regs<T, true>(p, 0, stream_of(a));
  }
}

// ---------------------------------------------------------------------------------------------
// v4_bulk_rows: x and r staged by bulk copies (kernels/common/bulk_rows.cuh)
// ---------------------------------------------------------------------------------------------

// bulk_rows.cuh's policy for fused_add_rmsnorm (its top has the same-run A/B against v3): x
// and r staged, w held, h kept; h is written as soon as it is made, y after the row sum.
template <class T>
struct FusedAddRmsnormBulk {
  using Type = T;
  using Params = FwdParams<T>;
  using Sums = float;
  using Held = Vec16<T>;  // w
  using Kept = Vec16<T>;  // h
  struct Stats {
    float rstd;
  };
  static constexpr int kStaged = 2;  // x, r
  static constexpr int kPacks = 4;
  static constexpr int kSmallestTeam = 32;
  static constexpr int kLargestTeam = 512;  // every row up to 16384 bf16 (all faster than v3's)
  static constexpr bool kFullRowsOnly = false;
  // Every fitted team: +0.4 to +1.1 over power-of-two teams at 3072-14336 bf16 (H200; the A/B
  // at bulk_rows.cuh's top), fp16 +0.3 to +0.9, fp32 +0.4 to +0.7 at 3072-7168.
  static constexpr int kLargestFittedTeam = 448;
  // 60% of the groups claimed: +1.4 to +2.7 at 4K-16K against none, 40% and 80% within 0.5 of
  // it (H200, bf16); +0.8 to +1.7 on the H100 (bulk_rows.cuh's top).
  static constexpr int kClaimedPercent = 60;
  static constexpr bool kSecondRound = false;

  static bool aligned(const Params& p) { return rmsnorm_rows::fwd_rows_aligned(p); }
  __device__ static const T* staged(const Params& p, int i) { return i == 0 ? p.x : p.r; }
  __device__ static Held hold(const Params& p, int col, bool valid) {
    return valid ? load_vec(p.w + col) : zero_vec<T>();
  }
  __device__ static void keep_held_packed(Held& w) { keep_packed(w); }
  __device__ static Kept take(const Params& p, const Vec16<T> (&in)[2], int64_t row, int col,
                              float& sum) {
    const Vec16<T> h = rmsnorm_rows::add_packs(in[0], in[1]);
    store_vec(p.h + row * p.cols + col, h);
    rmsnorm_rows::add_squares(sum, h);
    return h;
  }
  __device__ static Stats stats(const Params& p, float sum) {
    return Stats{rsqrtf(sum / static_cast<float>(p.cols) + p.eps)};
  }
  __device__ static void store(const Params& p, int64_t row, int col, const Kept& h, const Held& w,
                               const Stats& s) {
    store_vec(p.y + row * p.cols + col, rmsnorm_rows::normalize(h, w, s.rstd));
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

KBENCH_REGISTER(fused_add_rmsnorm_v1_naive) {
  register_impl("fused_add_rmsnorm", "v1_naive")
      .note("block per row, scalar accesses; pass 1 writes h, pass 2 reads it back for y")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v1(fused_add_params<T>(a), stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(fused_add_rmsnorm_v2_vec16_regs) {
  register_impl("fused_add_rmsnorm", "v2_vec16_regs")
      .note("rmsnorm v3's register-row kernel with the add fused: x, r read once, h in registers")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          // sm_count 0: non-persistent grid.
          rmsnorm_rows::launch_regs<T, true>(fused_add_params<T>(a), 0, stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(fused_add_rmsnorm_v3_vec16_staged) {
  register_impl("fused_add_rmsnorm", "v3_vec16_staged")
      .note("x, r staged in shared memory, next rows in flight; h and y written; else v2")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v3(fused_add_params<T>(a), a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(fused_add_rmsnorm_v4_bulk_rows) {
  register_impl("fused_add_rmsnorm", "v4_bulk_rows")
      .note("x, r staged by bulk copies (TMA), a stage's rows one copy per tensor; else v3")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const FwdParams<T> p = fused_add_params<T>(a);
          if (!bulk_rows::launch_bulk_rows<FusedAddRmsnormBulk<T>>(p, a)) launch_v3(p, a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

}  // namespace kbench
