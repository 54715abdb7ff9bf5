// polynorm backward. Inputs dy[M, N], x[M, N], w[3]; outputs dx[M, N], dw[3], db[1]. Per row,
// with u_k = x^p_k (p = 3, 2, 1 for w0, w1, w2), r_k = rsqrt(mean(u_k^2) + eps):
//   dx = sum_k p_k w_k r_k x^(p_k - 1) (dy - x^p_k rho_k),  rho_k = mean(dy x^p_k) r_k^2
//   dw_k = sum over all rows of r_k * sum(dy x^p_k)      db = sum of dy
// fp32 throughout; dw and db are sums over all M*N elements, kept in fp32 and written as fp32
// outputs. All six row sums (x^2, x^4, x^6, dy x, dy x^2, dy x^3) come from one pass.
//
// Minimum traffic: read dy and x once, write dx once, w, dw, db: (3*M*N + 3) * sizeof(T) + 16
// bytes, about 6*M*N in bf16.
//
// The kernels live in polynorm_math.h, templated on kHasMul (fused_mul_polynorm_bwd.cu
// registers the same versions with m); the numerics are described there.
//
// Versions (each one registered below as an impl of op "polynorm_bwd"):
//   v1_naive              kernel 1: one 256-thread block per row, scalar loads, two passes
//                         (row sums, then dx); each row's share of dw and db as a float4 in
//                         the workspace. Kernel 2: one block sums the M float4s.
//   v2_vec16_persistent   persistent grid, one pass over dy and x: a team (one warp up to a
//                         1024-thread block) holds a row's dy and x in registers (Vec16 where
//                         aligned, scalar accesses otherwise), reduces the six sums with one
//                         barrier and writes dx from the same registers. dw needs no
//                         per-element accumulator (a row adds r_k * sum(dy x^p)); db is a
//                         per-thread fp32 sum. Each block reduces its four accumulators into
//                         one float4 partial; a finalize kernel adds the <= 4 per SM. Rows
//                         beyond register capacity (32768 bf16 / 16384 fp32; half that when
//                         unaligned) are processed in column chunks, twice (sums, then dx),
//                         the second pass mostly from L2.
//   v3_vec16_staged       dy, x staged in shared memory through a ring of async copies
//                         (kernels/common/staged_rows.cuh), the next rows in flight while
//                         this one computes; one block per SM, rows of up to 131072 bf16 in
//                         clusters. The seven row sums (v2's six and sum of G) in one
//                         reduction; dw and db as one float4 per cluster, summed by block 0
//                         once every block has written its own (a grid barrier at the end of
//                         the kernel). Unaligned rows go to v2's kernels.
#include "kernels/polynorm/polynorm_math.h"

namespace kbench {

KBENCH_REGISTER(polynorm_bwd_v1_naive) {
  register_impl("polynorm_bwd", "v1_naive")
      .note("block per row (two scalar passes), per-row dw/db partials, then one reducing block")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_bwd_v1<false>)
      .rejects(accepts_any_shape)
      .workspace(bwd_v1_workspace);
}

KBENCH_REGISTER(polynorm_bwd_v2_vec16_persistent) {
  register_impl("polynorm_bwd", "v2_vec16_persistent")
      .note("persistent, one pass: dy, x in registers, dw/db as fp32 block partials")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_bwd_v2<false>)
      .rejects(accepts_any_shape)
      .workspace(bwd_v2_workspace);
}

KBENCH_REGISTER(polynorm_bwd_v3_vec16_staged) {
  register_impl("polynorm_bwd", "v3_vec16_staged")
      .note("persistent, dy, x staged in shared memory ahead of use; dw/db as fp32 cluster partials")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_bwd_v3<false>)
      .rejects(accepts_any_shape)
      .workspace(bwd_v3_workspace);
}

}  // namespace kbench
