// fused_mul_polynorm forward: y = polynorm(x) * m, m[M, N] elementwise, with polynorm(x) =
// w0*N(x^3) + w1*N(x^2) + w2*N(x) + b per row of x[M, N] (N(u) = u * rsqrt(mean(u^2) + eps)).
//
// Minimum traffic: read x and m once, write y once: (3*M*N + 4) * sizeof(T) bytes, about
// 6*M*N in bf16.
//
// The kernels are polynorm's (kernels/polynorm/polynorm_math.h) with kHasMul = true: m is
// loaded together with x and multiplied into y; the row statistics are x's alone.
//
// Versions (each one registered below as an impl of op "fused_mul_polynorm"):
//   v1_naive        one 256-thread block per row, scalar loads, two passes over x (the
//                   second also reads m).
//   v2_vec16_regs   x and m read exactly once, held in registers (Vec16 packs) beside each
//                   other up to 4 packs per thread (rows up to 16384 bf16); at 8 packs (rows
//                   up to 65536 bf16) m is loaded after the row's reduction, as x's
//                   registers free up. Persistent grid, warp or block per row, scalar
//                   variant for unaligned rows, chunked two-pass path beyond capacity.
//   v3_vec16_rows_grid  v2's kernels on a non-persistent grid (as rmsnorm's v4_vec16_rows_grid):
//                   a finishing block's slot is refilled by one whose loads start at once.
//                   With x and m loaded under the L2 evict_last hint (vec.h), on one H200
//                   96.1-99.6% of the copy ceiling at 1K-16K bf16 but 87.8 at 5120, ahead
//                   of v5 at 1K, 4K, 8K and 16K (sixty-first session).
//   v4_vec16_staged x and m staged in shared memory by async copies, each team's next rows in
//                   flight while it reduces and writes this one (kernels/common/
//                   staged_rows.cuh, as rmsnorm's v5); the three sums in one float4; a
//                   cluster of blocks per row past 16384 bf16. Unaligned rows take v3's.
//   v5_bulk_rows    x and m of each row staged by two bulk copies (TMA, sm_90; kernels/
//                   common/bulk_rows.cuh), a block of one team per row, 512 threads per SM,
//                   3 rows in flight per block. Full rows of up to 256-thread teams only (1K,
//                   2K, 4K, 8K bf16; 512-4K fp32), on GPUs with fast memory (the H200) also
//                   16-bit rows of a 512-thread team (16K), and of teams of 3, 5 or 6 warps
//                   (3072, 5120, 6144 bf16; 1536, 2560, 3072 fp32); rows of 128-thread teams
//                   and more claim their last 40% from a counter. Other rows, and GPUs before
//                   sm_90, take v4.
#include "kernels/polynorm/polynorm_math.h"

namespace kbench {
namespace {

// v5_bulk_rows: the bulk-rows skeleton (kernels/common/bulk_rows.cuh) for full rows of up to
// 256-thread teams at 4 packs (1K-8K bf16) and of fitted teams of 3, 5 or 6 warps (3072, 5120,
// 6144 bf16); x and m kept in registers from the sums to y, the weights folded into the row's
// coefficients (PolynormFwdBulk). Other rows take v4.
template <class T>
struct FusedMulPolynormBulk : PolynormFwdBulk<T, true> {
  static constexpr int kPacks = 4;
  static constexpr int kSmallestTeam = 32;
  // 5120 (rows not full) read 3-4 points lower than v4's, 16K level (H200, bf16, NOTES).
  static constexpr int kLargestTeam = 256;
  // 16K bf16 with its last rows claimed (40%): H200 92.5-94.3 against v3's 92.2-92.9 and v4's
  // 91.5-92.3 (88.4 unclaimed); H100 95.2 against v4's 95.7, so fast memory only (three
  // repetitions in one run per card; NOTES, fifty-third session).
  static constexpr int kLargestTeamOnFastMemory = sizeof(T) == 2 ? 512 : 256;
  static constexpr bool kFullRowsOnly = true;
  // Fitted teams of 3, 5 and 6 warps (3072, 5120, 6144 bf16) read 95.1 / 95.5 / 93.6 against
  // v4's 90.9 / 94.9 / 91.2 (fp16 +3.3 / 0.0 / +1.0, fp32 at 6 warps -0.2); 7 to 14 warps -0.4
  // to -4.0 (H200, two repetitions in one run; NOTES, forty-eighth session).
  static constexpr int kLargestFittedTeam = 192;
  // 40% of the groups claimed: +2.3 / +4.7 at 4K / 8K, 60% and 80% 0.3-0.8 under that (H200,
  // bf16); +0.9 / +1.4 / +2.2 at 4K / 5120 / 8K on the H100 (bulk_rows.cuh's top).
  static constexpr int kClaimedPercent = 40;
  // The 512-thread team (16K bf16 on fast memory) at 2 stages of 64 KB, not the 3 that fit:
  // H200, bf16, means of 3-5 repetitions in each of three calls, 94.4-95.5 against 92.7-93.9 at
  // 2048x16384, 87.0 / 97.1 / 96.0 against 82.6 / 96.2 / 94.9 at 1024 / 4096 / 3001 rows, fp16
  // +1.1. Its smaller teams at 2 stages read -0.9 to +0.6; fused_add_rmsnorm's 512-thread team
  // lost 1.0 (NOTES, fifty-seventh session).
  static constexpr int kWholeBlockStages = 2;
};

}  // namespace

KBENCH_REGISTER(fused_mul_polynorm_v1_naive) {
  register_impl("fused_mul_polynorm", "v1_naive")
      .note("one 256-thread block per row, scalar loads, two passes over x")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_v1<true>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(fused_mul_polynorm_v2_vec16_regs) {
  register_impl("fused_mul_polynorm", "v2_vec16_regs")
      .note("x and m read once into registers; warp or block per row, persistent")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_v2<true>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(fused_mul_polynorm_v3_vec16_rows_grid) {
  register_impl("fused_mul_polynorm", "v3_vec16_rows_grid")
      .note("v2's kernels on a non-persistent grid: one block per group of rows")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        LaunchArgs grid_args = a;
        grid_args.sm_count = 0;  // non-persistent grid
        launch_polynorm_fwd_v2<true>(grid_args);
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(fused_mul_polynorm_v4_vec16_staged) {
  register_impl("fused_mul_polynorm", "v4_vec16_staged")
      .note("x and m staged in shared memory, next rows in flight, 3 sums in a float4; else v3")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_v4<true>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(fused_mul_polynorm_v5_bulk_rows) {
  register_impl("fused_mul_polynorm", "v5_bulk_rows")
      .note("x, m staged by bulk copies (TMA), a block per row, full rows to 6K, 8K bf16 (16K on fast memory); else v4")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_bulk<FusedMulPolynormBulk, true>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

}  // namespace kbench
