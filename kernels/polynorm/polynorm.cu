// polynorm forward: y = w0*N(x^3) + w1*N(x^2) + w2*N(x) + b over each row of x[M, N], with
// N(u) = u * rsqrt(mean(u^2) + eps); w[3] and b[1] are scalars. fp32 math, y rounded once.
//
// Minimum traffic: read x once, write y once: (2*M*N + 4) * sizeof(T) bytes, about 4*M*N in
// bf16. ~12 instructions per element (three row sums, Horner for y): memory-bound like
// rmsnorm, with about 3x its arithmetic.
//
// The kernels live in polynorm_math.h, templated on kHasMul (fused_mul_polynorm.cu
// registers the same versions with m); the math per row and the numerics are described
// there.
//
// Versions (each one registered below as an impl of op "polynorm"):
//   v1_naive        one 256-thread block per row, scalar loads: block_reduce_sum of x^2, x^4,
//                   x^6, then a second pass over x writing y. The obviously correct baseline.
//   v2_vec16_regs   x read exactly once: the row lives in registers (Vec16 packs, a
//                   compile-time number per thread chosen by N), warp / two-warp teams for
//                   rows up to 2048 bf16, a block per row beyond (a team of exactly 3, 5
//                   or 6 warps for 3072, 5120, 6144 bf16); 1536 threads per SM for 16-byte
//                   rows up to 16384 bf16 (issue-bound: more warps); persistent grid, w and b
//                   loaded once per thread, the three sums reduced together (one barrier;
//                   a two-warp team's 16-bit rows scatter them over its lanes first).
//                   Unaligned rows use scalar accesses with the same layout (2 packs per
//                   thread at most); rows beyond register capacity (65536 bf16 / 32768 fp32,
//                   16384 / 8192 unaligned) take a chunked two-pass path.
//   v3_vec16_rows_grid  v2's kernels on a non-persistent grid (as rmsnorm's v4_vec16_rows_grid):
//                   a finishing block's slot is refilled by one whose loads start at once.
//   v4_vec16_staged x staged in shared memory by async copies, each team's next rows in
//                   flight while it reduces and writes this one (kernels/common/
//                   staged_rows.cuh, as rmsnorm's v5); the three sums in one float4; a
//                   cluster of blocks per row past 32768 bf16; rows of 4-6 packs per thread
//                   (up to 1K, 5120 bf16) on two blocks per SM. Unaligned rows take v3's.
//   v5_bulk_rows    x staged by bulk copies (TMA, sm_90; kernels/common/bulk_rows.cuh), one
//                   128-thread team per block at 8 packs per thread, four blocks per SM: full
//                   rows of that team only (8192 bf16 / fp16, 4096 fp32); on GPUs with fast
//                   memory (the H200) also the full 16-bit rows of a 256-thread team (16384),
//                   their last rows claimed from a counter; other rows, and GPUs before
//                   sm_90, take v4.
#include "kernels/polynorm/polynorm_math.h"

namespace kbench {
namespace {

// v5_bulk_rows: the bulk-rows skeleton (kernels/common/bulk_rows.cuh) at 8 packs per thread for
// the full rows of a 128-thread team (8K bf16, 4K fp32) on four blocks per SM; x kept packed in
// registers from the sums to y (PolynormFwdBulk). Against v4 over M at 8K bf16, means of three in
// one call per card (results/<device>/polynorm-rows-scan.csv; kernels/rmsnorm/NOTES.md,
// forty-seventh session): H100 +0.2 to +9.5 at every M from 1024 to 8192 rows (+9.5 at 1024 and
// 1536); H200 +7.8 at 1024 rows, 0.1-1.6 under at 1536-3072, +0.6 to +2.0 at 4096-8192. fp32 at
// 4K: -0.5 to +1.6 from 2048 rows, under at 1024 (H100 0.3, H200 2.3). At 2K-4K bf16 (smaller
// teams) it read level or under v4 in the forty-fifth session's lab, at 16K (256) 1.1 under, and
// at 4 packs lower at every width: other rows take v4.
template <class T>
struct PolynormBulk : PolynormFwdBulk<T, false> {
  static constexpr int kPacks = 8;
  static constexpr int kSmallestTeam = 128;
  static constexpr int kLargestTeam = 128;
  static constexpr bool kFullRowsOnly = true;
  // Fitted teams at 8 packs (6144 bf16: 3 warps; 10240-14336: 5-7) read -1.0 to +1.0 from v4,
  // and 4.2-5.0 under it at 20480-28672 (H200, bf16 and fp16; NOTES, forty-eighth session).
  static constexpr int kLargestFittedTeam = 0;
  // 16K bf16 on fast memory: a 256-thread team with 40% of its rows claimed (bulk_rows.cuh's
  // top) read 91.5-91.6 against v4's 89.3-89.7, 89.3 unclaimed; 32K (512) 87.7 against 88.2
  // (H200, three repetitions in one run; NOTES, fifty-third session). Claims at 8K (128) read
  // 1.5-2.4 lower (fifty-second).
  static constexpr int kLargestTeamOnFastMemory = sizeof(T) == 2 ? 256 : 128;
  static constexpr int kClaimsFromTeam = 256;
  static constexpr int kClaimedPercent = 40;
};

}  // namespace

KBENCH_REGISTER(polynorm_v1_naive) {
  register_impl("polynorm", "v1_naive")
      .note("one 256-thread block per row, scalar loads, two passes over x")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_v1<false>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(polynorm_v2_vec16_regs) {
  register_impl("polynorm", "v2_vec16_regs")
      .note("x read once into registers; warp or block per row, persistent, 3 sums, 1 barrier")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_v2<false>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(polynorm_v3_vec16_rows_grid) {
  register_impl("polynorm", "v3_vec16_rows_grid")
      .note("v2's kernels on a non-persistent grid: one block per group of rows")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        LaunchArgs grid_args = a;
        grid_args.sm_count = 0;  // non-persistent grid
        launch_polynorm_fwd_v2<false>(grid_args);
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(polynorm_v4_vec16_staged) {
  register_impl("polynorm", "v4_vec16_staged")
      .note("x staged in shared memory, next rows in flight, 3 sums in a float4; else v3")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_v4<false>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(polynorm_v5_bulk_rows) {
  register_impl("polynorm", "v5_bulk_rows")
      .note("x staged by bulk copies (TMA), 8 packs, full rows of a 128-thread team (and 256 on fast memory); else v4")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch(launch_polynorm_fwd_bulk<PolynormBulk, false>)
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

}  // namespace kbench
