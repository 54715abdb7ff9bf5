// fused_mul_polynorm backward. Inputs dy[M, N], x[M, N], m[M, N], w[3], b[1]; outputs
// dx[M, N], dm[M, N], dw[3], db[1] (dw and db in fp32). With G = dy * m, dx, dw and db are
// polynorm's backward of G (see polynorm_bwd.cu), and dm = dy * polynorm(x), which needs the
// row's norms and b.
//
// Minimum traffic: read dy, x, m once, write dx and dm once, w, b, dw, db:
// (5*M*N + 4) * sizeof(T) + 16 bytes, about 10*M*N in bf16.
//
// The kernels are polynorm_bwd's (kernels/polynorm/polynorm_math.h) with kHasMul = true.
//
// Versions (each one registered below as an impl of op "fused_mul_polynorm_bwd"):
//   v1_naive              kernel 1: one 256-thread block per row, scalar loads, two passes
//                         (row sums, then dx and dm); each row's share of dw and db as a
//                         float4 in the workspace. Kernel 2: one block sums the M float4s.
//   v2_vec16_persistent   persistent grid, one pass over dy, x and m: a team holds the row's
//                         three tensors in registers (Vec16 where aligned, scalar accesses
//                         otherwise), one barrier for the six row sums, dx and dm from the
//                         same registers; dw/db as fp32 block partials plus a finalize kernel.
//                         Three tensors fit up to 512-thread teams (16384 bf16 / 8192 fp32;
//                         half that unaligned); longer rows take the chunked two-pass path.
//   v3_vec16_staged       dy, x, m staged in shared memory through a ring of async copies
//                         (kernels/common/staged_rows.cuh), the next rows in flight while
//                         this one computes; one block per SM, rows of up to 131072 bf16 in
//                         clusters (2 packs per thread over 8 blocks, so 4 stages, but rows of
//                         28672-32768 bf16 at 4). The seven row sums (v2's six and sum of G) in one
//                         reduction; dw and db as one float4 per cluster, summed by block 0
//                         after a grid barrier at the end of the kernel where a block holds a
//                         row, else by a finalize kernel launched to overlap the main one.
//                         Unaligned rows go to v2's kernels.
#include "kernels/polynorm/polynorm_math.h"

namespace kbench {

KBENCH_REGISTER(fused_mul_polynorm_bwd_v1_naive) {
  register_impl("fused_mul_polynorm_bwd", "v1_naive")
      .note("block per row (two scalar passes), per-row dw/db partials, then one reducing block")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_bwd_v1<true>)
      .rejects(accepts_any_shape)
      .workspace(bwd_v1_workspace);
}

KBENCH_REGISTER(fused_mul_polynorm_bwd_v2_vec16_persistent) {
  register_impl("fused_mul_polynorm_bwd", "v2_vec16_persistent")
      .note("persistent, one pass: dy, x, m in registers, dw/db as fp32 block partials")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_bwd_v2<true>)
      .rejects(accepts_any_shape)
      .workspace(bwd_v2_workspace);
}

KBENCH_REGISTER(fused_mul_polynorm_bwd_v3_vec16_staged) {
  register_impl("fused_mul_polynorm_bwd", "v3_vec16_staged")
      .note("persistent, dy, x, m staged in shared memory ahead of use; dw/db as fp32 cluster partials")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_bwd_v3<true>)
      .rejects(accepts_any_shape)
      .workspace(bwd_v3_workspace);
}

}  // namespace kbench
