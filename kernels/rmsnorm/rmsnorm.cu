// rmsnorm forward: y = x * rsqrt(mean(x^2) + eps) * w over each row of x[M, N], w[N];
// fp32 accumulation, result rounded once to the run's dtype.
//
// Minimum traffic: read x once, write y once, read w once: (2*M*N + N) * sizeof(T) bytes,
// about 4*M*N bytes in bf16. Every version below is memory bound; the question is how close
// it gets to the copy bandwidth.
//
// Versions (each one registered at the end of this file as an impl of op "rmsnorm"):
//   v1_naive            one 256-thread block per row, scalar loads: block_reduce_sum of x^2,
//                       then a second pass over x writing y. The obviously correct baseline.
//   v2_vec16            v1's design with 16-byte loads and stores (Vec16) when x, w and y rows
//                       are 16-byte aligned (scalar accesses otherwise); the block is sized to
//                       the row. Still two passes over x; the second mostly hits L2.
//   v3_vec16_regs       reads x exactly once: the row lives in registers, a compile-time number
//                       of Vec16 per thread chosen by N. Rows up to 1024 elements of bf16 take
//                       one warp each (w kept in registers across rows), up to 2048 two warps,
//                       several rows per block; longer rows take a whole block. Rows of two
//                       warps or more at 4 packs per thread (to 16384 bf16) run 2048 threads
//                       per SM and re-read w per row; 8-pack rows (to 32768 bf16) two
//                       512-thread blocks per SM. Persistent grid; x loaded under the L2
//                       evict_last hint (vec.h's load_vec_stream).
//                       Unaligned rows use scalar accesses with the same layout; rows beyond
//                       register capacity (65536 bf16 / 32768 fp32) take v2's path.
//   v4_vec16_rows_grid  v3's kernels on a non-persistent grid: one block per group of rows
//                       (one row per block from 4096 bf16 up), the hardware starting a new
//                       block wherever one finishes. A persistent block stops loading while it
//                       reduces and stores; here a finishing block's slot is refilled with one
//                       whose loads start at once. w is loaded once per block (from L1/L2).
//                       Measured on H100: 95-97% of the copy ceiling for N 1024-8192 bf16,
//                       where v3 reaches 93-96% (NOTES.md). On one H200, bf16: 94.8-95.2% at
//                       2K-8K and 93.9% at 16K, level with v5 or ahead (sixty-first session).
//   v5_vec16_staged     x staged in shared memory by async copies, each team's next rows in
//                       flight while it reduces and writes this one (kernels/common/
//                       staged_rows.cuh): one 512-thread block per SM, teams of 32-512 threads
//                       per row at 8 packs per thread (rows up to 32768 bf16 in one block), w
//                       held in registers; wider rows over a cluster of 2-8 blocks, two rows
//                       per block; rows that fill 3/4 of a team's packs or less take 5 or 6
//                       per thread, so more stages fit (5120 bf16, H100: 95.4-96.1 -> 99.2-99.5%
//                       of the copy ceiling); rows a warp holds at 4 packs (1024 bf16) 6
//                       stages deep. Unaligned rows take v4's kernels.
// v2-v5's kernels live in rmsnorm_rows.cuh (fused_add_rmsnorm shares v2-v4's).
#include <algorithm>
#include <cstdint>

#include "harness/registry.h"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"
#include "kernels/common/vec.h"
#include "kernels/rmsnorm/rmsnorm_rows.cuh"

namespace kbench {
namespace {

using rmsnorm_rows::FwdParams;

template <class T>
FwdParams<T> fwd_params(const LaunchArgs& a) {
  return FwdParams<T>{static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[1]),
                      static_cast<T*>(a.outputs[0]), a.shape.m, a.shape.n, a.eps};
}

// ---------------------------------------------------------------------------------------------
// v1_naive: one block per row, scalar loads, two passes over x.
// ---------------------------------------------------------------------------------------------

constexpr int kNaiveThreads = 256;

template <class T>
__global__ void __launch_bounds__(1024) rmsnorm_fwd_naive(FwdParams<T> p) {
  __shared__ float scratch[kMaxWarps];
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x_row = p.x + row * p.cols;
    T* y_row = p.y + row * p.cols;
    float sum_sq = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float v = to_float(x_row[j]);
      sum_sq += v * v;
    }
    sum_sq = block_reduce_sum(sum_sq, scratch);  // synchronizes before reusing scratch
    const float rstd = rsqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      y_row[j] = from_float<T>(to_float(x_row[j]) * rstd * to_float(p.w[j]));
    }
  }
}

template <class T>
void launch_v1(const FwdParams<T>& p, gpuStream_t stream) {
  rmsnorm_fwd_naive<T><<<row_blocks(p.rows), kNaiveThreads, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

}  // namespace

KBENCH_REGISTER(rmsnorm_v1_naive) {
  register_impl("rmsnorm", "v1_naive")
      .note("one 256-thread block per row, scalar loads, two passes over x")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v1(fwd_params<T>(a), stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(rmsnorm_v2_vec16) {
  register_impl("rmsnorm", "v2_vec16")
      .note("block per row, 16-byte loads/stores, two passes over x (second from L2)")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_rows::launch_two_pass<T, false>(fwd_params<T>(a), stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(rmsnorm_v3_vec16_regs) {
  register_impl("rmsnorm", "v3_vec16_regs")
      .note("x read once into registers; warp per row (small N) or block per row, persistent")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_rows::launch_regs<T, false>(fwd_params<T>(a), a.sm_count, stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(rmsnorm_v4_vec16_rows_grid) {
  register_impl("rmsnorm", "v4_vec16_rows_grid")
      .note("v3's kernels on a non-persistent grid: one block per group of rows")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_rows::launch_regs<T, false>(fwd_params<T>(a), 0, stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(rmsnorm_v5_vec16_staged) {
  register_impl("rmsnorm", "v5_vec16_staged")
      .note("x staged in shared memory, next rows in flight; cluster per row past 32K bf16")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_rows::launch_staged<T>(fwd_params<T>(a), a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

}  // namespace kbench
