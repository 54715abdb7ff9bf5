// fused_add_rmsnorm backward. Inputs dy[M, N] (gradient of y), dh[M, N] (gradient of the h
// output, from the next layer), h[M, N] (the forward's h), w[N]; outputs dx[M, N] (the
// gradient of both x and r) and dw[N]. Per row, rstd = rsqrt(mean(h^2) + eps), hhat = h * rstd,
// g = dy * w:  dx = dh + rstd * (g - hhat * mean(g * hhat));  dw = sum over rows of dy * hhat.
//
// Minimum traffic: read dy, dh, h once, write dx once, read w and write dw once:
// (4*M*N + 2*N) * sizeof(T) bytes.
//
// Versions (each one registered at the end of this file as an impl of "fused_add_rmsnorm_bwd"):
//   v1_naive              rmsnorm_bwd's v1 kernels with dh added to dx (rmsnorm_bwd_rows.cuh,
//                         kAddGrad). Kernel 1: one 256-thread block per row, scalar loads, two
//                         passes (row sums, then dx + dh); rstd[M] to the workspace. Kernel 2:
//                         one thread per column sums dy * h * rstd over all rows into dw.
//   v2_vec16_persistent   rmsnorm_bwd's v2 kernels with dh added to dx (rmsnorm_bwd_rows.cuh,
//                         kAddGrad): dy, h, dh in registers, dw in fp32 registers across rows,
//                         one fp32 partial row per block, a finalize kernel.
//   v3_vec16_staged       rmsnorm_bwd's v3 with dh added: dy, h and dh staged in shared
//                         memory, the next row in flight; a cluster per row past 16384 bf16.
//                         The partial dw rows are summed at the end of the kernel where a
//                         block holds a row, by the finalize kernel for rows over clusters.
#include <algorithm>
#include <cstdint>

#include "harness/registry.h"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"
#include "kernels/rmsnorm/rmsnorm_bwd_rows.cuh"

namespace kbench {
namespace {

using rmsnorm_bwd_rows::BwdParams;

template <class T>
BwdParams<T> fused_add_bwd_params(const LaunchArgs& a) {
  BwdParams<T> p{static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[2]),
                 static_cast<const T*>(a.inputs[3]), static_cast<T*>(a.outputs[0]),
                 static_cast<T*>(a.outputs[1]),      a.shape.m,
                 a.shape.n,                          a.eps};
  p.dh = static_cast<const T*>(a.inputs[1]);
  return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

KBENCH_REGISTER(fused_add_rmsnorm_bwd_v1_naive) {
  register_impl("fused_add_rmsnorm_bwd", "v1_naive")
      .note("block per row for dx (two scalar passes), then thread per column for dw")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_bwd_rows::launch_naive<T, true>(fused_add_bwd_params<T>(a), a,
                                                  "fused_add_rmsnorm_bwd v1");
        });
      })
      .rejects(accepts_any_shape)
      .workspace(rmsnorm_bwd_rows::v1_workspace);
}

KBENCH_REGISTER(fused_add_rmsnorm_bwd_v2_vec16_persistent) {
  register_impl("fused_add_rmsnorm_bwd", "v2_vec16_persistent")
      .note("rmsnorm_bwd v2 with dh added: dy, h, dh in registers, dw partial rows per block")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_bwd_rows::launch_persistent<T, true>(fused_add_bwd_params<T>(a), a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(rmsnorm_bwd_rows::v2_workspace);
}

KBENCH_REGISTER(fused_add_rmsnorm_bwd_v3_vec16_staged) {
  register_impl("fused_add_rmsnorm_bwd", "v3_vec16_staged")
      .note("rmsnorm_bwd v3 with dh added: dy, h, dh staged in shared memory, next row in flight")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_bwd_rows::launch_staged<T, true>(fused_add_bwd_params<T>(a), a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(rmsnorm_bwd_rows::v3_workspace);
}

}  // namespace kbench
