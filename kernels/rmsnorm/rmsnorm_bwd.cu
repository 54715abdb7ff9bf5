// rmsnorm backward. Inputs dy[M, N], x[M, N], w[N]; outputs dx[M, N], dw[N]. Per row, with
// rstd = rsqrt(mean(x^2) + eps), xhat = x * rstd and g = dy * w:
//   dx = rstd * (g - xhat * mean(g * xhat))        dw[j] = sum over rows of dy[:, j] * xhat[:, j]
// fp32 accumulation throughout; dw is reduced over M in fp32 and rounded once at the end.
// Both row sums come from one pass: mean(g * xhat) = rstd * mean(g * x).
//
// Minimum traffic: read dy and x once, write dx once, read w and write dw once:
// (3*M*N + 2*N) * sizeof(T) bytes, about 6*M*N bytes in bf16.
//
// Versions (each one registered at the end of this file as an impl of op "rmsnorm_bwd"):
//   v1_naive              kernel 1: one 256-thread block per row, scalar loads, two passes
//                         (row sums, then dx); rstd[M] to the workspace. Kernel 2: one thread
//                         per column sums dy * x * rstd over all rows into dw.
//   v2_vec16_persistent   persistent grid, one pass over dy and x: a team (one warp up to 512
//                         threads; several teams per block) holds a row's dy and x in
//                         registers (Vec16 where aligned, scalar accesses otherwise), computes
//                         dx, and every thread accumulates dw for its fixed columns in fp32
//                         registers across all rows it sees. The block's teams combine their
//                         dw in shared memory into one fp32 partial row in the workspace; a
//                         second kernel sums the partial rows into dw (coalesced). Rows beyond
//                         register capacity (16384 bf16 / 8192 fp32; half that for unaligned
//                         rows) are processed in column chunks, twice (sums, then dx), the
//                         second pass mostly from L2.
//   v3_vec16_staged       the rows staged in shared memory by async copies, each team's next
//                         rows in flight while it computes (kernels/common/staged_rows.cuh);
//                         registers hold only w and the dw accumulators of the thread's
//                         columns. One 512-thread block per SM, teams of 32-512 threads per
//                         row up to 16384 bf16, beyond that a cluster of 2-8 blocks per row
//                         (row sums through distributed shared memory, sm_90). One partial dw
//                         row per block (or cluster), summed at the end of the same kernel
//                         (after a grid barrier, each block its share of the columns).
//                         Unaligned rows and GPUs without room for it: v2's kernels.
// All versions' kernels live in rmsnorm_bwd_rows.cuh (fused_add_rmsnorm_bwd shares them).
#include "harness/registry.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/rmsnorm/rmsnorm_bwd_rows.cuh"

namespace kbench {
namespace {

using rmsnorm_bwd_rows::bwd_params;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

KBENCH_REGISTER(rmsnorm_bwd_v1_naive) {
  register_impl("rmsnorm_bwd", "v1_naive")
      .note("block per row for dx (two scalar passes), then thread per column for dw")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_bwd_rows::launch_naive<T, false>(bwd_params<T>(a), a, "rmsnorm_bwd");
        });
      })
      .rejects(accepts_any_shape)
      .workspace(rmsnorm_bwd_rows::v1_workspace);
}

KBENCH_REGISTER(rmsnorm_bwd_v2_vec16_persistent) {
  register_impl("rmsnorm_bwd", "v2_vec16_persistent")
      .note("persistent, one pass: dy, x in registers, dw in fp32 registers, partial rows")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_bwd_rows::launch_persistent<T, false>(bwd_params<T>(a), a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(rmsnorm_bwd_rows::v2_workspace);
}

KBENCH_REGISTER(rmsnorm_bwd_v3_vec16_staged) {
  register_impl("rmsnorm_bwd", "v3_vec16_staged")
      .note("rows staged in shared memory, next row in flight; cluster per row past 16K bf16")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          rmsnorm_bwd_rows::launch_staged<T, false>(bwd_params<T>(a), a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(rmsnorm_bwd_rows::v3_workspace);
}

}  // namespace kbench
