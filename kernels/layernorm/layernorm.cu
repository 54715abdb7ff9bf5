// layernorm forward: y = (x - mean) * rsqrt(var + eps) * w + b over each row of x[M, N], with
// w[N], b[N], mean = mean(x) and var = mean((x - mean)^2) (biased); fp32 accumulation, result
// rounded once to the run's dtype.
//
// Minimum traffic: read x once, write y once, read w and b once: (2*M*N + 2*N) * sizeof(T)
// bytes, about 4*M*N bytes in bf16. Every version below is memory bound; the question is how
// close it gets to the copy bandwidth.
//
// The variance is taken in two passes (mean first, then the sum of squared deviations), not as
// E[x^2] - mean^2: with |x| ~ 1e3 and a spread of 1, that difference loses six of fp32's seven
// digits. Held in registers, the second pass costs no memory traffic. v4 (and v2 / v3 where a
// row's team is a warp or the whole block) sum x and x^2 in one round and add the second round
// only for rows where that would lose too much (one_pass_variance.h): one team reduction (and
// cluster exchange) per row instead of two.
//
// Versions (each one registered at the end of this file as an impl of op "layernorm"):
//   v1_naive        one 256-thread block per row, scalar loads, three passes over x: sum (the
//                   mean), sum of squared deviations (the variance), then y. The obviously
//                   correct baseline.
//   v2_vec16_regs   reads x exactly once: the row lives in registers, a compile-time number of
//                   Vec16 packs per thread chosen by N. Rows up to 1024 bf16 take one warp,
//                   up to 2048 two warps, several rows per block; longer rows a whole block
//                   (two 512-thread blocks per SM up to 32768 bf16). Persistent grid, w (and
//                   b where registers allow) held across rows, x loaded under the L2
//                   evict_last hint (vec.h's load_vec_stream), v4's one round of sums per
//                   row where the team is a warp or the block, y by two FMAs. Unaligned
//                   rows or N not a multiple of the pack use scalar accesses with the same
//                   layout; rows beyond register capacity (65536 bf16 / 32768 fp32 when
//                   aligned) take a block-per-row kernel that walks the row three times, the
//                   second and third times mostly from L2.
//   v3_vec16_rows_grid  v2's kernels on a non-persistent grid (as rmsnorm's v4_vec16_rows_grid):
//                   a finishing block's slot is refilled by one whose loads start at once.
//   v4_vec16_staged x staged in shared memory by async copies, the next rows in flight while
//                   this one is summed and written (kernels/common/staged_rows.cuh, as
//                   rmsnorm's v5_vec16_staged); w and b held in registers (at 6 and 8 packs
//                   per thread, 2K-16K bf16, b or both in shared memory). One round of sums
//                   (x, x^2) per row, means as sum * (1/N), a second round only where it
//                   would lose digits (one_pass_variance.h); y as two FMAs per element. Rows
//                   one block holds up to 6 stages deep; clusters past 16384 bf16.
//   v5_vec16_warp_rows  one 32-thread block per row on a grid of M blocks (as torch.compile's
//                   Triton kernel): x in registers, two warp reductions, no staging or
//                   persistence. Rows of up to 1024 elements (others skipped); the H200's
//                   fastest at 1K in fp32 (v6 in 16-bit), not the H100's.
//   v6_bulk_rows    x of each row staged by one bulk copy (TMA, sm_90; kernels/common/
//                   bulk_rows.cuh), a block of one team per row, 512 threads per SM, 6 rows in
//                   flight per block; v4's rounds of sums. Full rows of up to 128-thread
//                   teams only (1K, 2K, 4K bf16; 512-2K fp32), and of teams of 3 or 5 warps
//                   (3072, 5120 bf16; 1536, 2560 fp32); other rows, and GPUs before sm_90,
//                   take v4.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
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
#include "kernels/layernorm/one_pass_variance.h"

namespace kbench {
namespace {

// What every forward kernel takes. Row offsets are row * cols in int64: M * N can pass 2^31.
template <class T>
struct FwdParams {
  const T* x;
  const T* w;
  const T* b;
  T* y;
  int64_t rows;
  int64_t cols;
  float eps;
  float inv_cols;  // 1 / cols, rounded on the host (v4's row means)
};

template <class T>
FwdParams<T> fwd_params(const LaunchArgs& a) {
  return FwdParams<T>{static_cast<const T*>(a.inputs[0]),
                      static_cast<const T*>(a.inputs[1]),
                      static_cast<const T*>(a.inputs[2]),
                      static_cast<T*>(a.outputs[0]),
                      a.shape.m,
                      a.shape.n,
                      a.eps,
                      static_cast<float>(1.0 / static_cast<double>(a.shape.n))};
}

// 16-byte accesses are legal when every row of x and y, and w and b, start 16-byte aligned.
template <class T>
bool fwd_rows_aligned(const FwdParams<T>& p) {
  return rows_are_vec16_aligned<T>(p.x, p.cols) && rows_are_vec16_aligned<T>(p.y, p.cols) &&
         rows_are_vec16_aligned<T>(p.w, p.cols) && rows_are_vec16_aligned<T>(p.b, p.cols);
}

// ---------------------------------------------------------------------------------------------
// v1_naive: one block per row, scalar loads, three passes over x.
// ---------------------------------------------------------------------------------------------

constexpr int kNaiveThreads = 256;

template <class T>
__global__ void __launch_bounds__(kNaiveThreads) layernorm_fwd_naive(FwdParams<T> p) {
  __shared__ float scratch[kMaxWarps];
  const float n = static_cast<float>(p.cols);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x_row = p.x + row * p.cols;
    T* y_row = p.y + row * p.cols;
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) sum += to_float(x_row[j]);
    const float mean = block_reduce_sum(sum, scratch) / n;  // synchronizes before reuse
    float sum_sq = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float d = to_float(x_row[j]) - mean;
      sum_sq += d * d;
    }
    const float rstd = rsqrtf(block_reduce_sum(sum_sq, scratch) / n + p.eps);
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float xhat = (to_float(x_row[j]) - mean) * rstd;
      y_row[j] = from_float<T>(xhat * to_float(p.w[j]) + to_float(p.b[j]));
    }
  }
}

template <class T>
void launch_v1(const FwdParams<T>& p, gpuStream_t stream) {
  layernorm_fwd_naive<T><<<row_blocks(p.rows), kNaiveThreads, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Pack arithmetic shared by the fast kernels. All of it goes a pair at a time (get_pair /
// set_pair), so 16-bit packs stay two elements per register; two accumulators (the pair's
// halves) give two independent FMA chains.
// ---------------------------------------------------------------------------------------------

// acc += the pack's elements (padded slots load as 0 and add nothing).
template <class T>
__device__ __forceinline__ void add_elements(float2& acc, const Vec16<T>& xv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    acc.x += x.x;
    acc.y += x.y;
  }
}

// acc.x += x and acc.y += x^2 over the pack's elements (one round of sums for the variance,
// one_pass_variance.h).
template <class T>
__device__ __forceinline__ void add_elements_and_squares(float2& acc, const Vec16<T>& xv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    acc.x += x.x;
    acc.x += x.y;
    acc.y = fmaf(x.x, x.x, acc.y);
    acc.y = fmaf(x.y, x.y, acc.y);
  }
}

// acc += (x - mean)^2 over the pack's elements that lie in the row. `valid` is how many of the
// pack's elements do (<= 0: none, >= kSize: all). A padded slot holds 0, so subtracting 0
// instead of the mean makes its term 0: one select per pack on the vector path, where a pack
// is all in or all out, and one per element on the scalar path.
template <class T, bool kVector, class Index>
__device__ __forceinline__ void add_sq_deviations(float2& acc, const Vec16<T>& xv, float mean,
                                                  Index valid) {
  const float pack_mean = valid > 0 ? mean : 0.f;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    const float mx = kVector ? pack_mean : (2 * j < valid ? mean : 0.f);
    const float my = kVector ? pack_mean : (2 * j + 1 < valid ? mean : 0.f);
    const float dx = x.x - mx;
    const float dy = x.y - my;
    acc.x = fmaf(dx, dx, acc.x);
    acc.y = fmaf(dy, dy, acc.y);
  }
}

// y = (x - mean) * rstd * w + b for one pack: a subtract, a multiply and an FMA per element;
// or (kByFmas, v4) two FMAs, (x * rstd + shift) * w + b with shift = -mean * rstd, made once per
// row by the caller (made here, the compiler redid it for every pack). x * rstd + shift errs by
// about 2^-24 * (|x| + |mean|) * rstd: the size of the error that x - mean already carries from
// the fp32 mean (~2^-24 * |mean|, more over a long sum) times rstd, and 100 times under y's
// tolerance (layernorm_atol_scale in reference/layernorm.cpp: 1e-5 per unit of rstd * |w| *
// (|x| + |mean|)). v4 at bf16 issues 16-120 instructions fewer per kernel so. Same run, H200,
// % of the copy ceiling, means of three repetitions: bf16 93.0 / 93.0 / 91.8 against 92.1 /
// 92.7 / 91.4 at 1K / 2K / 4K, within 0.8 at 5120-64K; fp16 +0.5 to +1.5 at 1K-8K; fp32 +0 to
// +0.9 (kernels/rmsnorm/NOTES.md, twenty-eighth session).
template <class T, bool kByFmas = false>
__device__ __forceinline__ Vec16<T> normalize(const Vec16<T>& xv, const Vec16<T>& wv,
                                              const Vec16<T>& bv, float mean, float rstd,
                                              float shift = 0.f) {
  Vec16<T> yv;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    const float2 b = get_pair(bv, j);
    if constexpr (kByFmas) {
      set_pair(yv, j, make_float2(fmaf(fmaf(x.x, rstd, shift), w.x, b.x),
                                  fmaf(fmaf(x.y, rstd, shift), w.y, b.y)));
    } else {
      set_pair(yv, j, make_float2(fmaf((x.x - mean) * rstd, w.x, b.x),
                                  fmaf((x.y - mean) * rstd, w.y, b.y)));
    }
  }
  return yv;
}

// ---------------------------------------------------------------------------------------------
// Rows beyond register capacity (and the scalar-access fallback for them): one block per row,
// the row walked three times in packs (sum; squared deviations; y). The first walk reads x
// from memory, the next two find most of it in L2 (the block read it microseconds ago).
// ---------------------------------------------------------------------------------------------

constexpr int kChunkedThreads = 1024;

template <class T, bool kVector>
__global__ void __launch_bounds__(kChunkedThreads) layernorm_fwd_chunked(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int64_t kStride = int64_t{kChunkedThreads} * V;
  __shared__ float scratch[2][kChunkedThreads / kWarpSize];
  const float n = static_cast<float>(p.cols);
  const int64_t first_col = static_cast<int64_t>(threadIdx.x) * V;
  int buf = 0;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x_row = p.x + row * p.cols;
    T* y_row = p.y + row * p.cols;

    float2 acc = make_float2(0.f, 0.f);
#pragma unroll 4
    for (int64_t col = first_col; col < p.cols; col += kStride)
      add_elements(acc, load_pack<T, kVector, false>(x_row, col, p.cols));
    const float mean = team_reduce_sum<kChunkedThreads>(acc.x + acc.y, scratch[buf]) / n;
    buf ^= 1;

    acc = make_float2(0.f, 0.f);
#pragma unroll 4
    for (int64_t col = first_col; col < p.cols; col += kStride)
      add_sq_deviations<T, kVector>(acc, load_pack<T, kVector, false>(x_row, col, p.cols), mean,
                                    p.cols - col);
    const float var = team_reduce_sum<kChunkedThreads>(acc.x + acc.y, scratch[buf]) / n;
    buf ^= 1;
    const float rstd = rsqrtf(var + p.eps);

#pragma unroll 4
    for (int64_t col = first_col; col < p.cols; col += kStride) {
      const Vec16<T> xv = load_pack<T, kVector, true>(x_row, col, p.cols);
      const Vec16<T> wv = load_pack<T, kVector, false>(p.w, col, p.cols);
      const Vec16<T> bv = load_pack<T, kVector, false>(p.b, col, p.cols);
      store_pack<T, kVector>(y_row, col, p.cols, normalize(xv, wv, bv, mean, rstd));
    }
  }
}

template <class T>
void launch_fwd_chunked(const FwdParams<T>& p, bool vector, gpuStream_t stream) {
  if (vector) {
    layernorm_fwd_chunked<T, true><<<row_blocks(p.rows), kChunkedThreads, 0, stream>>>(p);
  } else {
    layernorm_fwd_chunked<T, false><<<row_blocks(p.rows), kChunkedThreads, 0, stream>>>(p);
  }
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// v2_vec16_regs: x read once, the row held in registers.
//
// A team of kTeam threads (one or two warps, or the whole block) owns one row at a time; a
// block holds kBlock / kTeam teams. Thread `lane` of a team holds kPacks packs of V elements,
// pack k starting at column (k * kTeam + lane) * V, so each pack load is coalesced across the
// team (one warp instruction reads 32 x 16 = 512 contiguous bytes). All kPacks loads are
// issued before the first sum consumes any of them: kPacks x 16 bytes in flight per thread,
// e.g. 1024 threads x 4 x 16 B = 64 KB per SM, well over the ~20 KB an H100 SM needs to cover
// HBM latency at its share of the bandwidth (3.35 TB/s / 132 SMs x ~700 ns).
//
// Per row: one team sum of x and x^2 (kLayernormRegsOneRound below), or where that would lose
// digits or the team is two warps a second of the squared deviations from the registers (the
// mean, then the variance), and one pass writing y. Per element that is an add and an FMA (a
// subtract and an FMA more in a second round) for the statistics and two FMAs for y
// (kLayernormRegsByFmas), plus the bf16/fp16 unpacking (integer ops on pairs).
//
// The grid is persistent (kMinBlocks blocks per SM, the occupancy __launch_bounds__ asks for)
// and walks rows with a block stride, so w and b are loaded once per thread and reused for
// every row where registers allow (see kHoldW / kHoldB). kVector = false is the scalar-access
// variant (unaligned rows or N not a multiple of V): the same layout, packs loaded element
// by element with a bound check.
// ---------------------------------------------------------------------------------------------

// Register rows whose team is a warp or the whole block take v4's one round of sums (x, x^2)
// per row, and a second round of squared deviations only where one_pass_variance_ok turns the
// first down: one team reduction per row instead of two. The decision comes from sums that are
// bitwise the same in the whole team, and such a team's barrier is its block's (HIP's too), so
// every thread that must meet at a barrier takes the same path; two-warp teams (2K bf16) keep
// two rounds. H200, bf16, points of the copy ceiling, two passes (kernels/rmsnorm/NOTES.md,
// sixty-second session): v3 +2.3 to +4.6 at 1K, 4K-16K and 64K, -1.7 at 32K; v2 +0.5 to +4.8
// at every N but 2K; fp16 +0.5 to +6.2 (v2 and v3) where it applies.
// KBENCH_LAYERNORM_REGS_ONE_ROUND=0 keeps two rounds (a knob for scripts/ab-flags.sh).
#ifndef KBENCH_LAYERNORM_REGS_ONE_ROUND
#define KBENCH_LAYERNORM_REGS_ONE_ROUND 1
#endif
template <int kBlock, int kTeam>
constexpr bool kLayernormRegsOneRound =
    KBENCH_LAYERNORM_REGS_ONE_ROUND && (kTeam == kWarpSize || kTeam == kBlock);

// y as (x * rstd + shift) * w + b, two FMAs per element, as v4 does (normalize's kByFmas), not
// (x - mean) * rstd * w + b (a subtract, a multiply and an FMA): 24-64 instructions fewer per
// kernel (SASS sm_90, bf16). Measured only together with vec.h's KBENCH_PACK_WORD_SELECT: v3
// bf16 +7.9 / +6.3 / +5.5 / +8.4 / +7.2 / +11.3 at 1K / 2K / 4K / 5120 / 8K / 16K (94.1 at 1K,
// v6's 93.5 in the same runs; kernels/rmsnorm/NOTES.md, sixty-third session). 0: the latter (a
// knob for scripts/ab-flags.sh).
#ifndef KBENCH_LAYERNORM_REGS_BY_FMAS
#define KBENCH_LAYERNORM_REGS_BY_FMAS 1
#endif
constexpr bool kLayernormRegsByFmas = KBENCH_LAYERNORM_REGS_BY_FMAS;

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector>
__global__ void __launch_bounds__(kBlock, kMinBlocks) layernorm_fwd_regs(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kTeams = kBlock / kTeam;
  // Registers per thread: 4 per pack of x, w or b (16-bit packs stay packed, see keep_packed).
  // The budget is 65536 / (kBlock * kMinBlocks): 64 at 1024 threads per SM. w for up to 4
  // packs (16 registers) is held across rows; b too up to 2 packs (holding it at 4 spilled,
  // ptxas sm_90). Beyond that they are re-read per row from L1/L2, where every team of the
  // block finds them: N * sizeof(T) per row each next to 2 * N * sizeof(T) of HBM traffic.
  constexpr bool kHoldW = kPacks <= 4;
  constexpr bool kHoldB = kPacks <= 2;
  constexpr bool kOneRound = kLayernormRegsOneRound<kBlock, kTeam>;
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  __shared__ float scratch[2][kBlock / kWarpSize];
  __shared__ float2 scratch2[kOneRound ? 2 : 1][kBlock / kWarpSize];

  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  const int all_cols = static_cast<int>(p.cols);  // <= kTeam * kPacks * V <= 65536 here
  const auto pack_col = [lane](int k) { return (k * kTeam + lane) * V; };
  // Divisions, not a multiply by 1 / N: exact means for more rows, and ptxas does not move
  // work across them (with a multiply it hoisted the next pass's conversions of x above the
  // team sum, 64 registers and spills).
  const float n = static_cast<float>(p.cols);

  Vec16<T> w_held[kHoldW ? kPacks : 1];
  Vec16<T> b_held[kHoldB ? kPacks : 1];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    if constexpr (kHoldW) w_held[k] = load_pack<T, kVector, false>(p.w, pack_col(k), all_cols);
    if constexpr (kHoldB) b_held[k] = load_pack<T, kVector, false>(p.b, pack_col(k), all_cols);
  }

  int buf = 0;
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kTeams;
  // Block-uniform loop: a team whose row is past the end still joins team_reduce_sum's barrier.
  for (int64_t first_row = static_cast<int64_t>(blockIdx.x) * kTeams; first_row < p.rows;
       first_row += row_stride) {
    const int64_t row = first_row + team;
    const int cols = row < p.rows ? all_cols : 0;  // 0: this team has no row this round
    const int64_t offset = row * p.cols;

    Vec16<T> xv[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k)
      xv[k] = load_pack<T, kVector, true>(p.x + offset, pack_col(k), cols);

    float mean, var;
    bool second_round = true;
    if constexpr (kOneRound) {
      float2 acc = make_float2(0.f, 0.f);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) add_elements_and_squares(acc, xv[k]);
      const float2 total = team_reduce_sum<kTeam>(acc, scratch2[buf]);
      buf ^= 1;
      mean = total.x / n;
      var = fmaf(-mean, mean, total.y / n);
      second_round = !one_pass_variance_ok<T>(mean, var);  // the same in the whole team
    } else {
      float2 acc = make_float2(0.f, 0.f);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) add_elements(acc, xv[k]);
      mean = team_reduce_sum<kTeam>(acc.x + acc.y, scratch[buf]) / n;
      buf ^= 1;
    }
    if (second_round) {
      float2 acc = make_float2(0.f, 0.f);
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        keep_packed(xv[k]);  // convert x again rather than keep 2x the registers alive as floats
        add_sq_deviations<T, kVector>(acc, xv[k], mean, cols - pack_col(k));
      }
      var = team_reduce_sum<kTeam>(acc.x + acc.y, scratch[buf]) / n;
      buf ^= 1;
    }
    const float rstd = rsqrtf(var + p.eps);
    const float shift = -mean * rstd;  // y by two FMAs per element (KBENCH_LAYERNORM_REGS_BY_FMAS)

#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      keep_packed(xv[k]);
      Vec16<T> wv, bv;
      if constexpr (kHoldW) {
        wv = w_held[k];
        keep_packed(wv);  // stops the compiler hoisting w's conversion out of the row loop
      } else {
        wv = load_pack<T, kVector, false>(p.w, pack_col(k), cols);
      }
      if constexpr (kHoldB) {
        bv = b_held[k];
        keep_packed(bv);
      } else {
        bv = load_pack<T, kVector, false>(p.b, pack_col(k), cols);
      }
      store_pack<T, kVector>(p.y + offset, pack_col(k), cols,
                             normalize<T, kLayernormRegsByFmas>(xv[k], wv, bv, mean, rstd, shift));
    }
  }
}

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector>
void launch_fwd_regs_variant(const FwdParams<T>& p, int sm_count, gpuStream_t stream) {
  constexpr int kTeams = kBlock / kTeam;
  // sm_count = 0: a non-persistent grid (v3), one block per group of rows.
  const int64_t resident =
      sm_count > 0 ? static_cast<int64_t>(sm_count) * kMinBlocks : kMaxRowBlocks;
  const int grid = static_cast<int>(std::min(ceil_div(p.rows, kTeams), resident));
  layernorm_fwd_regs<T, kBlock, kTeam, kPacks, kMinBlocks, kVector>
      <<<grid, kBlock, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// v2 (sm_count > 0: persistent) and v3 (sm_count = 0); layouts as rmsnorm's (row_layout.h).
template <class T>
void launch_v2(const FwdParams<T>& p, int sm_count, gpuStream_t stream) {
  const int64_t packs = ceil_div(p.cols, Vec16<T>::kSize);
  const bool vector = fwd_rows_aligned(p);
  const bool in_registers = with_row_layout(packs, vector, true, [&](auto layout, auto vec) {
    using L = decltype(layout);
    launch_fwd_regs_variant<T, L::kBlock, L::kTeam, L::kPacks, L::kMinBlocks,
                            decltype(vec)::value>(p, sm_count, stream);
  });
  if (!in_registers) launch_fwd_chunked(p, vector, stream);  // three walks of the row
}

// ---------------------------------------------------------------------------------------------
// v4_vec16_staged: v2's arithmetic on rows staged in shared memory (staged_rows.cuh).
// ---------------------------------------------------------------------------------------------

// Packs per thread for 16-bit types (a knob for scripts/ab-flags.sh; fp32 takes 4): 8 for rows
// a team of up to 256 threads holds, w and b then in shared memory (kHeldSharedPacks), 4
// beyond (kWidePacks), w and b in registers; 4 everywhere (w and b always in registers) was
// the layout before.
#ifndef KBENCH_LAYERNORM_PACKS
#define KBENCH_LAYERNORM_PACKS 8
#endif
// The row means as sum * (1/N rounded on the host), not sum / N (an IEEE division is ~10
// instructions; as layernorm_bwd's row_mean). Same run, bf16, means of two repetitions: H200
// +0.9 to +2.9 at 4K, 5120 and 8K (87.6 / 88.6 against 85.2 / 85.2 at 8K), within 1 elsewhere;
// H100 +0.2 to +1.4 at 1K-16K, within 1 at 32K / 64K. 0: divisions (a knob).
#ifndef KBENCH_LAYERNORM_FWD_RECIPROCAL
#define KBENCH_LAYERNORM_FWD_RECIPROCAL 1
#endif
// Where w and b sit in shared memory (kHeldSharedPacks below, 6 and 8 packs per thread): w in
// registers and only b there (1, the default; staged_rows.cuh's splits_held), or both there
// (0, a knob for scripts/ab-flags.sh). 32 registers more and half the shared loads per pack;
// 16384 bf16 then fits 3 stages of 64 KB beside b, not 2 beside w and b, and 12288 4 of 48 KB,
// not 3. Same run, H200, % of the copy ceiling, means of three repetitions, against both in
// shared memory: bf16 +1.2 to +2.5 at 2K-16K (88.9 against 86.4 at 2048x16384, 92.9 against
// 90.7 at 5461x6144); fp16 +1.7 / +2.2 at 6144 / 12288 (6 packs), but -2.2 to -2.8 at 2K /
// 4K / 8K, whose 8-pack fp16 kernels spill 20-24 bytes so (bf16's none): fp16 keeps w and b
// in shared memory at 8 packs but in 256-thread teams (16K, KBENCH_LAYERNORM_FP16_SPLIT_TEAM
// below). H100, bf16: +0.1 to +2.8 at 2K-16K (96.2 against 93.4 at 16K). (8 packs for the wide
// rows as well, 32768 on 2 blocks, measured -0.7 / -1.5 at 32K / 64K.) w and b both as floats in
// shared memory, converted once, measured 84.5 against 93.0 at 2K (H200; kernels/rmsnorm/
// NOTES.md, twenty-eighth session).
#ifndef KBENCH_LAYERNORM_SPLIT_HELD
#define KBENCH_LAYERNORM_SPLIT_HELD 1
#endif
// fp16 splits too at 8 packs in teams of at least this many threads (256, the default: 16384
// fp16, which gets 3 stages of 64 KB beside b, not 2 beside w and b; 1024: never, a knob for
// scripts/ab-flags.sh). Same run, fp16, % of the copy ceiling, three repetitions, at 2048x16384:
// H200 88.2-88.5 against 86.4-86.8; H100 93.6-93.9 against 92.6-94.4, when that kernel still
// spilled 24 bytes (twenty-ninth session); with w kept packed (staged_rows.cuh's
// KBENCH_KEEP_SPLIT_PACKED) it spills nothing. Every team at 8 packs (32) measured -1.2 / -0.3 /
// -0.3 at 2K / 4K / 8K fp16 on the H100 (three repetitions; thirty-sixth session,
// kernels/rmsnorm/NOTES.md).
#ifndef KBENCH_LAYERNORM_FP16_SPLIT_TEAM
#define KBENCH_LAYERNORM_FP16_SPLIT_TEAM 256
#endif
// With fast memory, w and b in registers wherever a thread holds 6 or 8 packs of a row one
// block holds (1, the default: kHeldInRegsIn below), or only where a whole-block team holds
// 8 (0, the forty-first session's; a knob for scripts/ab-flags.sh).
#ifndef KBENCH_LAYERNORM_HELD_IN_REGS
#define KBENCH_LAYERNORM_HELD_IN_REGS 1
#endif
template <class T, bool kSplit>
struct LayernormSplitHeld {};  // w and b both in shared memory
template <class T>
struct LayernormSplitHeld<T, true> {
  template <class Config>
  static constexpr bool kSplitHeldIn = std::is_same_v<T, bf16_t> || Config::kPacks < 8 ||
                                      Config::kTeam >= KBENCH_LAYERNORM_FP16_SPLIT_TEAM;
  using RegHeld = Vec16<T>;     // w
  using SharedHeld = Vec16<T>;  // b
  __device__ static RegHeld hold_regs(const FwdParams<T>& p, int64_t col) { return load_vec(p.w + col); }
  __device__ static SharedHeld hold_shared(const FwdParams<T>& p, int64_t col) {
    return load_vec(p.b + col);
  }
};

// kFastMemory: the policy for GPUs with fast memory (staged_rows.cuh's fast_memory: the H200),
// rows left in shared memory.
template <class T, bool kFastMemory = false>
struct LayernormFwdStaged : LayernormSplitHeld<T, KBENCH_LAYERNORM_SPLIT_HELD> {
  using Type = T;
  using Params = FwdParams<T>;
  // w and b held in registers: reading b from L1 as each output pack is made measured 4-6
  // points of the copy ceiling slower (H100).
  struct Held {
    Vec16<T> w, b;
  };
  using Sums = float2;
  static constexpr int kStaged = 1;  // x
  // 8 packs per thread (64 elements of a bf16 row, not 32: half the per-row work per
  // element) where a team of up to 256 threads holds the row (2K-16K bf16), w and b then in
  // shared memory (bf16's w in registers: LayernormSplitHeld), read at each use, from 6 packs
  // on (kHeldSharedPacks; with fast memory both in registers: kHeldInRegsIn): as floats in
  // registers they took 128 and spilled; packed, converted at each use, they measured 2-4.5
  // points of the copy ceiling slower than 4 packs (H200). Same run, bf16, % of the copy
  // ceiling, means of three repetitions, against 4 packs: H200 +0.7 / +3.7 / +5.8 / +2.3 at
  // 2K / 4K / 8K / 16K (91.2 against 85.3 at 4096x8192), +1.9 / +3.0 / +2.1 at 3072 / 6144 /
  // 12288 (6 packs). Wider rows keep 4 packs (kWidePacks; but 16392-20480 bf16 take 5 on one
  // block: staged_config.h's KBENCH_WHOLE_BLOCK_FIVE) and w and b in registers: 8 packs
  // measured 1-3 points slower at 32K and 64K, and their w and b would not fit beside 2
  // stages. On four 128-thread teams per block at 8 packs (w in registers, b in shared memory,
  // 3 stages), over 4 or 8 blocks: H200, bf16, 78.3-79.3 against 86.5-86.9 at 1024x32768,
  // within the spread at 512x65536 (kernels/rmsnorm/NOTES.md, fortieth session). Rows fitted
  // to 4 or 5 packs (1K, 5120) keep theirs in registers: in shared memory they measured 1.9
  // and 2.6 slower (H200). fp32 keeps 4 packs: at 8 it measured 0.3-1.9
  // (H200) and 2-3 (H100) points slower at 1K-8K in the sweeps.
  static constexpr int kPacks = sizeof(T) == 2 ? KBENCH_LAYERNORM_PACKS : 4;
  static constexpr int kWidePacks = 4;
  static constexpr int kHeldSharedPacks = 6;
  // With fast memory, 16-bit rows that fill 7/8 or more of a whole-block team at 8 packs
  // (28672-32768 bf16) take one block at 8 packs, w and b both in registers beside 3 stages of
  // 64 KB (staged_config.h's KBENCH_WHOLE_BLOCK_FULL_ROWS): 128 registers and no spills with
  // them kept packed (keep_held_packed), 228 bytes of spills as floats (ptxas sm_90, bf16), and
  // with b in shared memory only 2 stages fit (86.0-86.3 at 1024x32768 on the H200, twenty-ninth
  // session). Same run, H200, % of the copy ceiling, three repetitions, against 4 blocks of two
  // 256-thread teams at 4 packs: bf16 88.7-89.2 against 86.7-87.1 at 1024x32768, 88.2-88.5
  // against 86.5-87.3 at 2048x32768, 88.5-89.1 against 87.1-87.5 at 1170x28672; fp16 88.2-89.3
  // against 86.5-86.8 at 1024x32768. Wider rows at 8 packs lost: 86.7-87.0 against 89.2-89.4 at
  // 683x49152 and 87.3 against 88.1-88.5 at 512x65536 (4 blocks, b in shared memory), 82.0-82.2
  // at 512x65536 on clusters of 2 whole-block teams, w and b in registers
  // (kernels/rmsnorm/NOTES.md, forty-first session). Not measured on the H100.
  static constexpr bool kWholeBlockFullRows = kFastMemory && sizeof(T) == 2;
  // And with fast memory every 16-bit row one block holds at 6 or 8 packs (2K-16K and
  // 28672-32768 bf16, 3072 / 6144 / 12288 at 6) keeps w and b both in registers, kept packed,
  // rather than b (fp16 below 16K at 8 packs: w and b) in shared memory, read at each use:
  // 123-128 registers and no spills (ptxas sm_90, bf16 and fp16), the same 3 or 4 stages. Same
  // run, H200, % of the copy ceiling, means of three repetitions, against whole-block teams only
  // (KBENCH_LAYERNORM_HELD_IN_REGS=0): bf16 94.2 / 93.7 / 93.9 / 91.8 against 93.5 / 92.6 / 92.1
  // / 88.9 at 2K / 4K / 8K / 16K, fp16 94.4 / 93.8 / 91.4 against 92.4 / 91.1 / 87.6 at 2K / 8K
  // / 16K (teams of 128 and more only, 8K and 16K, read 94.2 / 92.0 there). At 6 packs too, in
  // another call, against 8 packs only: bf16 92.5 / 92.0 / 90.3 against 91.6 / 90.3 / 88.1 at
  // 3072 / 6144 / 12288, fp16 +1.3 / +1.9 / +2.4 (kernels/rmsnorm/NOTES.md, forty-second
  // session). Not measured on the H100, whose policy keeps them in shared memory.
  template <class Config>
  static constexpr bool kHeldInRegsIn =
      kFastMemory && sizeof(T) == 2 && Config::kCluster == 1 &&
      (KBENCH_LAYERNORM_HELD_IN_REGS ? Config::kPacks >= kHeldSharedPacks
                                     : Config::kTeam == staged_rows::kBlock && Config::kPacks == 8);
  __device__ static void keep_held_packed(Held& h) {
    keep_packed(h.w);
    keep_packed(h.b);
  }
  // Pipelined rows over several blocks at up to 4 packs (32K and 64K bf16, 49152 at 3) read into
  // registers once, their stage refilled after their sums (staged_rows.cuh's
  // KBENCH_PIPELINED_ROW_IN_REGS): H100, bf16, +0.8 / +1.2 / +1.9 at 1024x32768 / 512x65536 /
  // 683x49152. Its 5-pack rows (40000) spilled 152 bytes so and read 68.5 against 93.5-94.4; its
  // rows one block holds lost up to 1.8 read into registers (KBENCH_ROW_IN_REGS), so not those.
  // With fast memory only at 3 packs: H200, bf16, KBENCH_FAST_MEMORY 1 against 0, three
  // repetitions, +2.3 / +2.8 at 32K / 64K without them at 4 packs; without them at 3 packs too,
  // -2.6 / -0.9 at 45056 / 49152 (two repetitions).
  template <class Config>
  static constexpr bool kPipelinedRowInRegsIn = Config::kPacks <= (kFastMemory ? 3 : 4);
  // Its 16-bit rows one block holds read into registers once where teams of up to 128 threads
  // hold them at 8 or 4 packs (staged_rows.cuh's KBENCH_ROW_IN_REGS). Same run, H100, against
  // not: bf16 +0.3 / +0.3 / +0.8 / +0.8 at 1K / 2K / 4K / 8K (three repetitions), fp16 +0.6 /
  // +1.7 / +1.8 / +1.2 (two); 256-thread teams at 8 packs (16K), 6 and 5 packs lost 0.5-1.8
  // (fp16 -5.8 at 5120, 4-20 bytes of spills). Not with fast memory: H200, bf16, two
  // repetitions, KBENCH_FAST_MEMORY 1 against 0, +0.4 / +0.6 / +1.3 / +1.2 at 1K / 2K / 4K / 8K
  // without.
  template <class Config>
  static constexpr bool kRowInRegsIn = !kFastMemory && sizeof(T) == 2 && Config::kTeam <= 128 &&
                                       (Config::kPacks == 8 || Config::kPacks == 4);
  // Fitted packs: 5120 bf16 on a team of 128 at 5 packs per thread (staged_config.h's
  // kHalfTeams), every slot used. Same run, bf16, % of the copy ceiling, three repetitions: H100
  // 96.9 / 96.9 / 96.7 against 93.9 / 93.7 / 93.5 at 4 packs on 256 threads; H200 91.9 / 92.2 /
  // 92.2 against 90.8 / 90.8 / 90.1. (3 packs on 256, 83% of the slots, measured 83.6 against
  // 90.5 on the H200 before; at 6144, where that is what fitting takes, -0.3 to -0.9 on the
  // H100 and +-0.5 on the H200.)
  static constexpr bool kFitPacks = true;
  // No split rows (staged_config.h's kSplitRows): at 8 packs per thread, w and b converted at
  // each use, H200 bf16 85.0-85.7% of the copy ceiling against 86.4-86.9 at 1024x32768 (fp16
  // -2), though fp32 +1.3 at 2048x16384 and bf16 +5.8 at 1638x20480 (three repetitions).
  // (sum x, sum x^2); then, for rows one_pass_variance_ok turns down, sum (x - mean)^2.
  static constexpr int kRounds = 2;
  static constexpr int kColGrads = 0;  // none
  struct Stats {
    float mean;
    float rstd;
    float shift;  // -mean * rstd: y as two FMAs per element (normalize's kByFmas)
    bool second_round;
  };

  __device__ static const T* staged_row(const Params& p, int, int64_t row) { return p.x + row * p.cols; }
  __device__ static Held hold(const Params& p, int64_t col) {
    return Held{load_vec(p.w + col), load_vec(p.b + col)};
  }
  __device__ static Held join_held(const Vec16<T>& w, const Vec16<T>& b) { return Held{w, b}; }
  __device__ static void add_sums(int round, float2& sums, const Vec16<T> (&in)[1], const Held&,
                                  const Stats& s) {
    if (round == 0) {
      add_elements_and_squares(sums, in[0]);
    } else {
      add_sq_deviations<T, true>(sums, in[0], s.mean, Vec16<T>::kSize);
    }
  }
  __device__ static float row_mean(float sum, const Params& p) {
#if KBENCH_LAYERNORM_FWD_RECIPROCAL
    return sum * p.inv_cols;
#else
    return sum / static_cast<float>(p.cols);
#endif
  }
  __device__ static void finish_round(int round, float2 total, Stats& s, const Params& p) {
    if (round == 0) {
      s.mean = row_mean(total.x, p);
      const float var = fmaf(-s.mean, s.mean, row_mean(total.y, p));
      s.second_round = !one_pass_variance_ok<T>(s.mean, var);
      s.rstd = rsqrtf(fmaxf(var, 0.f) + p.eps);
    } else {
      s.rstd = rsqrtf(row_mean(total.x + total.y, p) + p.eps);
    }
    s.shift = -s.mean * s.rstd;
  }
  __device__ static bool needs_round(int, const Stats& s) { return s.second_round; }
  template <class Acc>
  __device__ static void store_out(const Params& p, int64_t row, int64_t col, const Vec16<T> (&in)[1],
                                   const Held& h, const Stats& s, Acc&) {
    store_vec(p.y + row * p.cols + col, normalize<T, true>(in[0], h.w, h.b, s.mean, s.rstd, s.shift));
  }
  static T* col_grad(const Params&, int) { return nullptr; }
};

template <class T>
void launch_v4(const FwdParams<T>& p, const LaunchArgs& a) {
  using Op = LayernormFwdStaged<T>;
  using FastMemoryOp = LayernormFwdStaged<T, true>;
  if (!staged_rows::launch_staged_for_memory<Op, FastMemoryOp>(p, fwd_rows_aligned(p), a)) {
    launch_v2(p, 0, stream_of(a));
  }
}

// ---------------------------------------------------------------------------------------------
// v6_bulk_rows: the bulk-rows skeleton (kernels/common/bulk_rows.cuh) for full rows of up to
// 128-thread teams (1K-4K bf16) and of fitted teams of 3 or 5 warps (3072, 5120 bf16), one
// round of sums (x, x^2) and a second over the kept packs where one_pass_variance_ok turns the
// first down; other rows take v4.
// ---------------------------------------------------------------------------------------------

template <class T>
struct LayernormBulk {
  using Staged = LayernormFwdStaged<T>;
  using Type = T;
  using Params = FwdParams<T>;
  using Sums = float2;
  struct Held {
    Vec16<T> w, b;
  };
  using Kept = Vec16<T>;  // x
  using Stats = typename Staged::Stats;
  static constexpr int kStaged = 1;
  static constexpr int kPacks = 4;
  // Wider or partly filled rows read 1.3-4.5 points lower than v4's (H200, bf16, NOTES).
  static constexpr int kSmallestTeam = 32;
  static constexpr int kLargestTeam = 128;
  static constexpr bool kFullRowsOnly = true;
  // Fitted teams of 3 and 5 warps (3072, 5120 bf16) read 94.7 / 94.7 against v4's 92.5 / 93.0
  // (fp16 +1.5 / +0.3); 6 to 14 warps (6144-14336) -0.2 to -1.5 (fp16 to -2.2), but 7 +1.4 (H200,
  // two repetitions in one run; NOTES, forty-eighth session).
  static constexpr int kLargestFittedTeam = 160;
  static constexpr int kClaimedPercent = 0;  // 40-80% read 1.3-3.1 lower at 4K (H200)
  static constexpr bool kSecondRound = true;

  static bool aligned(const Params& p) { return fwd_rows_aligned(p); }
  __device__ static const T* staged(const Params& p, int) { return p.x; }
  __device__ static Held hold(const Params& p, int col, bool valid) {
    return valid ? Held{load_vec(p.w + col), load_vec(p.b + col)}
                 : Held{zero_vec<T>(), zero_vec<T>()};
  }
  __device__ static void keep_held_packed(Held& h) {
    keep_packed(h.w);
    keep_packed(h.b);
  }
  __device__ static Kept take(const Params&, const Vec16<T> (&in)[1], int64_t, int, float2& sums) {
    add_elements_and_squares(sums, in[0]);
    return in[0];
  }
  __device__ static Stats stats(const Params& p, float2 total) {
    Stats s;
    Staged::finish_round(0, total, s, p);
    return s;
  }
  __device__ static bool needs_second_round(const Stats& s) { return s.second_round; }
  __device__ static void add_second(float2& sums, const Kept& x, const Stats& s) {
    add_sq_deviations<T, true>(sums, x, s.mean, Vec16<T>::kSize);
  }
  __device__ static void second_stats(const Params& p, float2 total, Stats& s) {
    Staged::finish_round(1, total, s, p);
  }
  __device__ static void store(const Params& p, int64_t row, int col, const Kept& x,
                               const Held& h, const Stats& s) {
    const Vec16<T> y = normalize<T, true>(x, h.w, h.b, s.mean, s.rstd, s.shift);
    store_vec(p.y + row * p.cols + col, y);
  }
};

// ---------------------------------------------------------------------------------------------
// v5_vec16_warp_rows: one warp-sized block per row on a grid of M blocks, not persistent, as
// torch.compile's Triton kernel for 1K rows (num_warps 1, 64 registers; read on the H200 in
// the twenty-eighth session): each lane loads its packs of x at once, the row's two
// sums are two warp reductions (the variance in two passes over registers, exact), and the
// hardware refills an SM's block slots as rows finish: no staging, no barrier, no persistence.
// Rows of up to 1024 elements (4 packs per lane in 16-bit types, 8 in fp32), N a multiple of
// the pack. Same run, % of the copy ceiling, three repetitions, against v4 at 32768x1024 /
// 32768x768 / 65536x512: H200 bf16 94.2-94.5 / 88.5-89.0 / 69.9-70.1 against 93.4-93.6 /
// 87.3-87.6 / 85.9-86.7, fp32 96.4-96.6 against 92.1-92.5 at 1K; H100 bf16 96.6-96.9 / 95.9-96.2
// / 89.1-91.1 against 100.0-100.2 / 99.8-99.9 / 95.4-95.9 (kernels/rmsnorm/NOTES.md,
// twenty-eighth session). Narrow rows leave most lanes idle: v4 there. One round of sums (x,
// x^2) with the second only where one_pass_variance_ok turns it down, as the register rows do,
// read level or lower: bf16 -0.1 to -0.2 at 1K, 0.0 to -0.7 at 768, fp16 -0.3 to -0.5 (H200,
// three passes; NOTES, seventy-ninth session).
// ---------------------------------------------------------------------------------------------

constexpr int64_t kWarpRowsMaxCols = 1024;

template <class T>
constexpr int kWarpRowPacks = static_cast<int>(kWarpRowsMaxCols) / (kWarpSize * Vec16<T>::kSize);

// 32 blocks per SM (the most an SM holds) at 64 registers each. (HIP's second argument of
// __launch_bounds__ counts waves per execution unit, and nothing was measured there: 1.)
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
constexpr int kWarpRowsMinBlocks = 1;
#else
constexpr int kWarpRowsMinBlocks = 32;
#endif
template <class T>
__global__ void __launch_bounds__(kWarpSize, kWarpRowsMinBlocks) layernorm_fwd_warp_rows(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kPacks = kWarpRowPacks<T>;
  const int cols = static_cast<int>(p.cols);
  const T* x_row = p.x + static_cast<int64_t>(blockIdx.x) * p.cols;
  T* y_row = p.y + static_cast<int64_t>(blockIdx.x) * p.cols;
  const auto col_of = [](int k) { return (k * kWarpSize + static_cast<int>(threadIdx.x)) * V; };
  Vec16<T> xv[kPacks];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    // x read once (vec.h's load_vec_stream: the L2 evict_last hint Triton's kernel loads with
    // too); a zero pack adds nothing.
    xv[k] = load_pack<T, true, true>(x_row, col_of(k), cols);
  }
  float2 acc = make_float2(0.f, 0.f);
#pragma unroll
  for (int k = 0; k < kPacks; ++k) add_elements(acc, xv[k]);
  const float mean = warp_reduce_sum(acc.x + acc.y) * p.inv_cols;
  acc = make_float2(0.f, 0.f);
#pragma unroll
  for (int k = 0; k < kPacks; ++k) add_sq_deviations<T, true>(acc, xv[k], mean, col_of(k) < cols ? V : 0);
  const float rstd = rsqrtf(warp_reduce_sum(acc.x + acc.y) * p.inv_cols + p.eps);
  const float shift = -mean * rstd;
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const int col = col_of(k);
    if (col < cols) {  // w and b read only now (from L1 or L2): x alone lives across the sums
      store_vec(y_row + col, normalize<T, true>(xv[k], load_vec(p.w + col), load_vec(p.b + col),
                                                mean, rstd, shift));
    }
  }
}

std::optional<std::string> warp_rows_reject(const Shape& shape, DType dtype) {
  const int64_t pack = 16 / static_cast<int64_t>(dtype_size(dtype));
  if (shape.n > kWarpRowsMaxCols)
    return "v5_vec16_warp_rows takes rows of up to 1024 elements (N=" + std::to_string(shape.n) + ")";
  if (shape.n % pack != 0)
    return "v5_vec16_warp_rows needs N a multiple of " + std::to_string(pack) + " (N=" +
           std::to_string(shape.n) + ")";
  if (shape.m > INT32_MAX) return "v5_vec16_warp_rows takes at most 2^31 - 1 rows";
  return std::nullopt;
}

template <class T>
void launch_v5(const FwdParams<T>& p, gpuStream_t stream) {
  if (!fwd_rows_aligned(p)) return launch_v2(p, 0, stream);  // the scalar path
  layernorm_fwd_warp_rows<T><<<static_cast<unsigned>(p.rows), kWarpSize, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

}  // namespace

KBENCH_REGISTER(layernorm_v1_naive) {
  register_impl("layernorm", "v1_naive")
      .note("one 256-thread block per row, scalar loads, three passes over x")
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

KBENCH_REGISTER(layernorm_v2_vec16_regs) {
  register_impl("layernorm", "v2_vec16_regs")
      .note("x read once into registers, two-pass variance from them; warp or block per row, "
            "persistent")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v2(fwd_params<T>(a), a.sm_count, stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(layernorm_v3_vec16_rows_grid) {
  register_impl("layernorm", "v3_vec16_rows_grid")
      .note("v2's kernels on a non-persistent grid: one block per group of rows")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v2(fwd_params<T>(a), 0, stream_of(a));  // sm_count 0: non-persistent grid
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(layernorm_v4_vec16_staged) {
  register_impl("layernorm", "v4_vec16_staged")
      .note("x staged in shared memory, next rows in flight; cluster per row past 16K bf16")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v4(fwd_params<T>(a), a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(layernorm_v5_vec16_warp_rows) {
  register_impl("layernorm", "v5_vec16_warp_rows")
      .note("one 32-thread block per row on a grid of M blocks (as torch.compile's Triton kernel); N <= 1024")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v5(fwd_params<T>(a), stream_of(a));
        });
      })
      .rejects(warp_rows_reject)
      .workspace(no_workspace);
}

KBENCH_REGISTER(layernorm_v6_bulk_rows) {
  register_impl("layernorm", "v6_bulk_rows")
      .note("x staged by bulk copies (TMA), one block per row, full rows to 5120 bf16; else v4")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const FwdParams<T> p = fwd_params<T>(a);
          if (!bulk_rows::launch_bulk_rows<LayernormBulk<T>>(p, a)) launch_v4(p, a);
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

}  // namespace kbench
