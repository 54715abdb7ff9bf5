// The rmsnorm backward kernels (v1_naive's and v2_vec16_persistent's), shared by rmsnorm_bwd
// (kernels/rmsnorm/rmsnorm_bwd.cu) and fused_add_rmsnorm_bwd
// (kernels/fused_add_rmsnorm/fused_add_rmsnorm_bwd.cu). With kAddGrad, dx also gets the
// gradient dh that flows into h directly (fused add: h = x + r is an output of the forward):
// dx = dh + rmsnorm's dx; one more input read per element.
#pragma once
#include <algorithm>
#include <cstdint>

#include "harness/registry.h"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/partials.h"
#include "kernels/common/reduce.h"
#include "kernels/common/staged_rows.cuh"
#include "kernels/common/vec.h"

namespace kbench::rmsnorm_bwd_rows {

// What every backward kernel takes. Row offsets are row * cols in int64: M * N can pass 2^31.
template <class T>
struct BwdParams {
  const T* dy;
  const T* x;
  const T* w;
  T* dx;
  T* dw;
  int64_t rows;
  int64_t cols;
  float eps;
  const T* dh = nullptr;  // kAddGrad kernels only
};

template <class T>
BwdParams<T> bwd_params(const LaunchArgs& a) {
  return BwdParams<T>{static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[1]),
                      static_cast<const T*>(a.inputs[2]), static_cast<T*>(a.outputs[0]),
                      static_cast<T*>(a.outputs[1]),      a.shape.m,
                      a.shape.n,                          a.eps};
}

// 16-byte accesses are legal when every row of dy, x, dx and w starts 16-byte aligned.
template <class T>
bool bwd_rows_aligned(const BwdParams<T>& p) {
  return rows_are_vec16_aligned<T>(p.dy, p.cols) && rows_are_vec16_aligned<T>(p.x, p.cols) &&
         rows_are_vec16_aligned<T>(p.dx, p.cols) && rows_are_vec16_aligned<T>(p.w, p.cols) &&
         (p.dh == nullptr || rows_are_vec16_aligned<T>(p.dh, p.cols));
}

// ---------------------------------------------------------------------------------------------
// v1_naive: block per row for dx and rstd, then thread per column for dw (p.x is h for the
// fused op: dw sums dy * h * rstd).
// ---------------------------------------------------------------------------------------------

constexpr int kNaiveThreads = 256;

template <class T, bool kAddGrad>
__global__ void __launch_bounds__(kNaiveThreads) rmsnorm_bwd_naive_rows(BwdParams<T> p,
                                                                        float* rstd_out) {
  __shared__ float scratch[kMaxWarps];
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t offset = row * p.cols;
    const T* dy_row = p.dy + offset;
    const T* x_row = p.x + offset;
    T* dx_row = p.dx + offset;
    float sum_sq = 0.f;
    float sum_gx = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float x = to_float(x_row[j]);
      sum_sq += x * x;
      sum_gx += to_float(dy_row[j]) * to_float(p.w[j]) * x;
    }
    sum_sq = block_reduce_sum(sum_sq, scratch);
    sum_gx = block_reduce_sum(sum_gx, scratch);
    const float rstd = rsqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);
    const float mean_gxhat = sum_gx * rstd / static_cast<float>(p.cols);
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float xhat = to_float(x_row[j]) * rstd;
      const float g = to_float(dy_row[j]) * to_float(p.w[j]);
      if constexpr (kAddGrad) {
        dx_row[j] = from_float<T>(to_float(p.dh[offset + j]) + rstd * (g - xhat * mean_gxhat));
      } else {
        dx_row[j] = from_float<T>(rstd * (g - xhat * mean_gxhat));
      }
    }
    if (threadIdx.x == 0) rstd_out[row] = rstd;
  }
}

template <class T>
__global__ void __launch_bounds__(kNaiveThreads) rmsnorm_bwd_naive_dw(BwdParams<T> p,
                                                                      const float* rstd) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= p.cols) return;
  float sum = 0.f;
  for (int64_t row = 0; row < p.rows; ++row) {
    const int64_t i = row * p.cols + col;
    sum += to_float(p.dy[i]) * to_float(p.x[i]) * rstd[row];
  }
  p.dw[col] = from_float<T>(sum);
}

inline size_t v1_workspace(const Shape& s, DType, int) {
  return static_cast<size_t>(s.m) * sizeof(float);
}

// v1_naive of rmsnorm_bwd (kAddGrad = false) and fused_add_rmsnorm_bwd (true); `who` names
// the impl in a workspace error.
template <class T, bool kAddGrad>
void launch_naive(const BwdParams<T>& p, const LaunchArgs& a, const char* who) {
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, v1_workspace(a.shape, a.dtype, a.sm_count), who);
  float* rstd = static_cast<float*>(a.workspace);
  rmsnorm_bwd_naive_rows<T, kAddGrad><<<row_blocks(p.rows), kNaiveThreads, 0, stream>>>(p, rstd);
  KB_GPU_CHECK_LAUNCH();
  const int col_blocks = static_cast<int>(ceil_div(p.cols, kNaiveThreads));
  rmsnorm_bwd_naive_dw<T><<<col_blocks, kNaiveThreads, 0, stream>>>(p, rstd);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// v2_vec16_persistent
//
// A team of kTeam threads owns one row at a time; a block holds kBlock / kTeam teams and the
// grid is persistent (kMinBlocks blocks per SM), walking rows with a block stride. Thread
// `lane` of a team holds kPacks packs of V elements of dy and x, pack k starting at column
// (k * kTeam + lane) * V (coalesced across the team), and kPacks * V fp32 dw accumulators
// for those same columns, which never change from row to row.
//
// Registers (bf16, kPacks = 4): dy and x 32, dw accumulators 32, the rest addresses and
// temporaries: <= 128, so 256-thread blocks run two per SM (their barriers fall at different
// times) and 512-thread teams, for rows of 8193..16384 bf16, one per SM. w is not held
// across rows (it would not fit); each row reads it from L1, where every team finds it. All
// of a row's loads are issued before the row sums use any of them: 2 x kPacks x 16 bytes in
// flight per thread, 64 KB per SM.
//
// Why one partial dw row per block and so few blocks: the partials cost G * N * 4 bytes,
// written and read again, next to 6 * M * N bytes of dy, x, dx (bf16). With G = 132..264
// blocks that is 1-3% at M = 16384 and mostly L2 traffic (G * N * 4 bytes fits in L2).
// Measured on H200 (bf16, M * N = 64M, cold L2): 85% of a large copy's bandwidth at
// N = 1024, 78% at 2048, 73% at 4096..8192, 67% at 16384; ncu shows the kernel close to
// issue-bound (0.5..0.65 instructions per scheduler per cycle at 4 warps per scheduler).
// ---------------------------------------------------------------------------------------------

// Row sums for one pack: (sum x^2, sum g * x) with g = dy * w. Written as explicit FMAs: the
// kernel is close to issue-bound on H100/H200 (ncu: ~0.6 instructions issued per scheduler
// per cycle), so 3 instead of 4.5 floating-point instructions per element matter.
template <class T>
__device__ __forceinline__ void add_row_sums(float2& sums, const Vec16<T>& dyv,
                                             const Vec16<T>& xv, const Vec16<T>& wv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 dy = get_pair(dyv, j);
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    sums.x = fmaf(x.x, x.x, sums.x);
    sums.x = fmaf(x.y, x.y, sums.x);
    sums.y = fmaf(dy.x * w.x, x.x, sums.y);
    sums.y = fmaf(dy.y * w.y, x.y, sums.y);
  }
}

// dx for one pack, and dw_acc[i] += dy * xhat for its elements. With c = mean(g * xhat) and
// xhat = x * rstd: dx = rstd * (g - xhat * c) = rstd * g - (rstd^2 * c) * x, 3 instructions
// per element; dy * xhat = (dy * x) * rstd, 2 more with the accumulation. kAddGrad: plus dh,
// in fp32 before the one rounding.
template <bool kAddGrad, class T>
__device__ __forceinline__ Vec16<T> pack_dx(const Vec16<T>& dyv, const Vec16<T>& xv,
                                            const Vec16<T>& wv, const Vec16<T>& dhv, float rstd,
                                            float mean_gxhat, float (&dw_acc)[Vec16<T>::kSize]) {
  const float x_coef = rstd * rstd * mean_gxhat;
  Vec16<T> dxv;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 dy = get_pair(dyv, j);
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    float2 dx = make_float2(fmaf(-x_coef, x.x, rstd * (dy.x * w.x)),
                            fmaf(-x_coef, x.y, rstd * (dy.y * w.y)));
    if constexpr (kAddGrad) {
      const float2 dh = get_pair(dhv, j);
      dx = make_float2(dx.x + dh.x, dx.y + dh.y);
    }
    set_pair(dxv, j, dx);
    dw_acc[2 * j] = fmaf(dy.x * x.x, rstd, dw_acc[2 * j]);
    dw_acc[2 * j + 1] = fmaf(dy.y * x.y, rstd, dw_acc[2 * j + 1]);
  }
  return dxv;
}

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector, bool kAddGrad>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    rmsnorm_bwd_regs(BwdParams<T> p, float* dw_partials) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kTeams = kBlock / kTeam;
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  __shared__ float2 scratch[2][kBlock / kWarpSize];

  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  const int cols = static_cast<int>(p.cols);  // <= kTeam * kPacks * V <= 16384 on this path
  const auto pack_col = [lane](int k) { return (k * kTeam + lane) * V; };
  // w is not held: with dy, x and the fp32 dw accumulators (64 registers per thread in bf16)
  // it would not fit 128 registers. Every team of the block reads the same N * sizeof(T)
  // bytes of w twice per row, from L1.
  const auto load_w = [&](int k, int valid) {
    return load_pack<T, kVector, false>(p.w, pack_col(k), valid);
  };

  float dw_acc[kPacks][V];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
#pragma unroll
    for (int i = 0; i < V; ++i) dw_acc[k][i] = 0.f;
  }

  int buf = 0;
  const float inv_cols = 1.f / static_cast<float>(cols);
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kTeams;
  // Block-uniform loop: a team whose row is past the end still joins team_reduce_sum's barrier.
  for (int64_t first_row = static_cast<int64_t>(blockIdx.x) * kTeams; first_row < p.rows;
       first_row += row_stride) {
    const int64_t row = first_row + team;
    const int valid = row < p.rows ? cols : 0;  // 0: this team has no row this round
    const int64_t offset = row * p.cols;

    // Issue every load of the row before using any: 2 * kPacks x 16 bytes in flight per thread.
    Vec16<T> dyv[kPacks];
    Vec16<T> xv[kPacks];
    Vec16<T> dhv[kAddGrad ? kPacks : 1];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      dyv[k] = load_pack<T, kVector, true>(p.dy + offset, pack_col(k), valid);
      xv[k] = load_pack<T, kVector, true>(p.x + offset, pack_col(k), valid);
      if constexpr (kAddGrad) dhv[k] = load_pack<T, kVector, true>(p.dh + offset, pack_col(k), valid);
    }

    float2 sums = make_float2(0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) add_row_sums(sums, dyv[k], xv[k], load_w(k, valid));
    sums = team_reduce_sum<kTeam>(sums, scratch[buf]);
    buf ^= 1;
    if (valid == 0) continue;  // past the barrier; nothing below synchronizes

    const float rstd = rsqrtf(sums.x * inv_cols + p.eps);
    const float mean_gxhat = sums.y * rstd * inv_cols;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      // Convert again rather than keep the row alive as floats (2x the registers).
      keep_packed(dyv[k]);
      keep_packed(xv[k]);
      store_pack<T, kVector>(p.dx + offset, pack_col(k), valid,
                             pack_dx<kAddGrad>(dyv[k], xv[k], load_w(k, valid), dhv[kAddGrad ? k : 0],
                                               rstd, mean_gxhat, dw_acc[k]));
    }
  }

  // Fold the teams' accumulators into team 0's through shared memory (kBlock / 2 * kPacks * V
  // floats: 16 KB for 256 threads in bf16). Fixed order, so dw is deterministic.
  if constexpr (kTeams > 1) {
    __shared__ float exchange[kBlock / 2 * kPacks * V];
    fold_teams<kBlock, kTeam, kPacks>(dw_acc, exchange);
  }
  if (team == 0) {
    float* partial = dw_partials + static_cast<int64_t>(blockIdx.x) * p.cols;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (pack_col(k) + i < cols) partial[pack_col(k) + i] = dw_acc[k][i];
      }
    }
  }
}

// Rows beyond register capacity: block per row, the row walked in chunks of kBlock * kPacks
// packs, twice: once for the row sums, once for dx and dw. The second pass re-reads this
// row's dy and x (4 * N bytes in bf16) microseconds after the first, mostly from L2. dw
// accumulates straight into the block's partial row in the workspace (each thread owns its
// columns, so no races); the block's first row initializes it. The old partial values are
// loaded together with dy and x, so the read-modify-write adds no round trip of its own.
template <class T, int kBlock, int kPacks, bool kVector, bool kAddGrad>
__global__ void __launch_bounds__(kBlock, 1)
    rmsnorm_bwd_chunked(BwdParams<T> p, float* dw_partials) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int64_t kChunk = int64_t{kBlock} * kPacks * V;
  __shared__ float2 scratch[2][kBlock / kWarpSize];
  float* partial = dw_partials + static_cast<int64_t>(blockIdx.x) * p.cols;
  const auto pack_col = [](int64_t base, int k) {
    return base + static_cast<int64_t>(k * kBlock + static_cast<int>(threadIdx.x)) * V;
  };
  const float inv_cols = 1.f / static_cast<float>(p.cols);

  int buf = 0;
  bool first_row = true;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* dy_row = p.dy + row * p.cols;
    const T* x_row = p.x + row * p.cols;
    T* dx_row = p.dx + row * p.cols;

    float2 sums = make_float2(0.f, 0.f);
    for (int64_t base = 0; base < p.cols; base += kChunk) {
      Vec16<T> dyv[kPacks];
      Vec16<T> xv[kPacks];
      Vec16<T> wv[kPacks];
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        dyv[k] = load_pack<T, kVector, false>(dy_row, pack_col(base, k), p.cols);
        xv[k] = load_pack<T, kVector, false>(x_row, pack_col(base, k), p.cols);
        wv[k] = load_pack<T, kVector, false>(p.w, pack_col(base, k), p.cols);
      }
#pragma unroll
      for (int k = 0; k < kPacks; ++k) add_row_sums(sums, dyv[k], xv[k], wv[k]);
    }
    sums = team_reduce_sum<kBlock>(sums, scratch[buf]);
    buf ^= 1;
    const float rstd = rsqrtf(sums.x * inv_cols + p.eps);
    const float mean_gxhat = sums.y * rstd * inv_cols;

    for (int64_t base = 0; base < p.cols; base += kChunk) {
      Vec16<T> dyv[kPacks];
      Vec16<T> xv[kPacks];
      Vec16<T> wv[kPacks];
      Vec16<T> dhv[kAddGrad ? kPacks : 1];
      float dw_old[kPacks][V];  // the partial row before this row, then after
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t col = pack_col(base, k);
        if constexpr (kAddGrad) dhv[k] = load_pack<T, kVector, true>(p.dh + row * p.cols, col, p.cols);
        dyv[k] = load_pack<T, kVector, true>(dy_row, col, p.cols);
        xv[k] = load_pack<T, kVector, true>(x_row, col, p.cols);
        wv[k] = load_pack<T, kVector, false>(p.w, col, p.cols);
        load_partial<kVector, V>(dw_old[k], partial, col, first_row ? 0 : p.cols);
      }
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t col = pack_col(base, k);
        store_pack<T, kVector>(dx_row, col, p.cols,
                               pack_dx<kAddGrad>(dyv[k], xv[k], wv[k], dhv[kAddGrad ? k : 0], rstd,
                                                 mean_gxhat, dw_old[k]));
        store_partial<kVector, V>(partial, col, p.cols, dw_old[k]);
      }
    }
    first_row = false;
  }
}

// The register path: 4 packs of dy and x per thread (32 registers each in bf16, plus 32 fp32
// dw accumulators); a 512-thread team holds 16384 bf16 (8192 fp32) per row.
constexpr int kBwdPacks = 4;

template <int kBlock_, int kTeam_, int kPacks_, bool kVector_>
struct BwdConfig {
  static constexpr int kBlock = kBlock_;
  static constexpr int kTeam = kTeam_;
  static constexpr int kPacks = kPacks_;
  static constexpr bool kVector = kVector_;
  // 2 x 256 threads per SM for the smaller teams: two blocks whose barriers fall at different
  // times hide each other's per-row stall (loads drain, row sums, barrier). Rows that need a
  // 512-thread team run one block per SM. <= 128 registers per thread either way. (Three
  // 256-thread blocks with 2 packs per thread measured slower on H100: 60-97% of this.)
  static constexpr int kMinBlocks = kBlock_ == 256 ? 2 : 1;
};
constexpr int kMaxBlocksPerSm = 2;  // the largest kMinBlocks above: bounds the partial rows
constexpr int team_of(int threads) { return std::max(threads, kWarpSize); }

// Calls f(BwdConfig<...>{}) with the smallest team that holds `packs` packs per row in
// registers; returns false (calling nothing) when the row is beyond register capacity. The
// scalar-access variant needs registers for per-element addresses and bounds, so it holds
// half as many packs per thread (8192 bf16 per row) to stay clear of spills, and so does
// kAddGrad (dh's packs next to dy's and x's spilled 60-90 bytes at 4 packs, ptxas).
template <bool kVector, bool kAddGrad, class F>
bool with_bwd_config_of(int64_t packs, F&& f) {
  constexpr int kPacks = (kVector ? kBwdPacks : kBwdPacks / 2) / (kAddGrad ? 2 : 1);
  if (packs <= team_of(32) * kPacks) return f(BwdConfig<256, team_of(32), kPacks, kVector>{}), true;
  if (packs <= team_of(64) * kPacks) return f(BwdConfig<256, team_of(64), kPacks, kVector>{}), true;
  if (packs <= 128 * kPacks) return f(BwdConfig<256, 128, kPacks, kVector>{}), true;
  if (packs <= 256 * kPacks) return f(BwdConfig<256, 256, kPacks, kVector>{}), true;
  if (packs <= 512 * kPacks) return f(BwdConfig<512, 512, kPacks, kVector>{}), true;
  return false;
}
template <bool kAddGrad, class F>
bool with_bwd_config(int64_t packs, bool vector, F&& f) {
  return vector ? with_bwd_config_of<true, kAddGrad>(packs, f)
                : with_bwd_config_of<false, kAddGrad>(packs, f);
}

// Beyond register capacity: 1024 threads, 2 packs per chunk step (1 for scalar accesses or
// kAddGrad).
constexpr int kChunkedBlock = 1024;

// Partial dw rows: one per block, at most kMaxBlocksPerSm blocks per SM, never more blocks
// than rows.
inline size_t v2_workspace(const Shape& s, DType, int sm_count) {
  return static_cast<size_t>(max_persistent_blocks(s.m, sm_count, kMaxBlocksPerSm)) *
         static_cast<size_t>(s.n) * sizeof(float);
}

// rmsnorm_bwd's v2_vec16_persistent; a supplies the workspace, SM count and stream.
template <class T, bool kAddGrad>
void launch_persistent(const BwdParams<T>& p, const LaunchArgs& a) {
  constexpr int V = Vec16<T>::kSize;
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, v2_workspace(a.shape, a.dtype, a.sm_count), "rmsnorm_bwd v2");
  float* partials = static_cast<float*>(a.workspace);
  // The chunked kernel also reads and writes its fp32 partial rows 16 bytes at a time.
  const bool vector = bwd_rows_aligned(p) && reinterpret_cast<uintptr_t>(partials) % 16 == 0;
  const int64_t sms = std::max(a.sm_count, 1);
  // The chunked kernel: one block per SM, one row per block at a time.
  int grid = static_cast<int>(std::min(p.rows, sms));

  const bool in_registers = with_bwd_config<kAddGrad>(ceil_div(p.cols, V), vector, [&](auto config) {
    using C = decltype(config);
    constexpr int kTeams = C::kBlock / C::kTeam;
    grid = static_cast<int>(std::min(ceil_div(p.rows, kTeams), sms * C::kMinBlocks));
    rmsnorm_bwd_regs<T, C::kBlock, C::kTeam, C::kPacks, C::kMinBlocks, C::kVector, kAddGrad>
        <<<grid, C::kBlock, 0, stream>>>(p, partials);
  });
  if (!in_registers) {
    if (vector) {
      rmsnorm_bwd_chunked<T, kChunkedBlock, kAddGrad ? 1 : 2, true, kAddGrad><<<grid, kChunkedBlock, 0, stream>>>(p, partials);
    } else {
      rmsnorm_bwd_chunked<T, kChunkedBlock, 1, false, kAddGrad><<<grid, kChunkedBlock, 0, stream>>>(p, partials);
    }
  }
  KB_GPU_CHECK_LAUNCH();

  // dw: the sum of the partial rows (partials.h).
  launch_finalize_partial_rows<1>(stream, partials, grid, p.cols, p.dw);
}

// ---------------------------------------------------------------------------------------------
// v3_vec16_staged: the rows staged in shared memory, the next row in flight while this one
// computes (kernels/common/staged_rows.cuh), with the arithmetic above. Rows the staged
// kernels do not take (unaligned, wider than 131072 bf16 / 65536 fp32, or without clusters
// wider than 16384 bf16) go to v2's. The staged kernels beat v2's at every N of the default
// sweep, fp32 to bf16 (H100, NOTES.md).
// ---------------------------------------------------------------------------------------------

template <class T, bool kAddGrad>
struct RmsnormBwdStaged {
  using Type = T;
  using Params = BwdParams<T>;
  using Held = Vec16<T>;                            // w
  using Sums = float2;
  static constexpr int kStaged = kAddGrad ? 3 : 2;  // dy, x (h for the fused op), dh
  static constexpr int kPacks = staged_rows::kPacks;
  // fused_add_rmsnorm_bwd's rows over several blocks: 2 packs per thread where they fill them,
  // so that its three staged tensors fit 4 stages instead of 2 (pipelined rows), as grid rows
  // (staged_rows.cuh). Same run, H100, bf16, 1024x32768 / 512x65536: 87.8 / 86.9% of the copy
  // ceiling against 84.1 / 84.6 at 4 packs (clusters at 2 packs: 87.5 / 83.0). rmsnorm_bwd
  // keeps 4 packs (2 measured 1-3 points slower) and hardware clusters: its rows over several
  // blocks have two teams per block, where grid rows measured 10 points slower at 32K.
  static constexpr int kClusterPacks = kAddGrad ? 2 : kPacks;
  static constexpr bool kGridRows = kAddGrad;
  // No split rows (staged_config.h's kSplitRows): at 8 packs per thread, dw's accumulators and w
  // fill the 128 registers. Same run, H100, bf16, 81.3 against 85.9% of the copy ceiling at
  // 1024x32768, 82.0 against 87.9 at 1638x20480.
  static constexpr int kRounds = 1;                 // (sum x^2, sum g * x)
  static constexpr int kColGrads = 1;               // dw
  struct Stats {
    float rstd;
    float mean_gxhat;
  };

  __device__ static const T* staged_row(const Params& p, int i, int64_t row) {
    return (i == 0 ? p.dy : (i == 1 ? p.x : p.dh)) + row * p.cols;
  }
  __device__ static Held hold(const Params& p, int64_t col) { return load_vec(p.w + col); }
  __device__ static void add_sums(int, float2& sums, const Vec16<T> (&in)[kStaged], const Held& w,
                                  const Stats&) {
    add_row_sums(sums, in[0], in[1], w);
  }
  __device__ static void finish_round(int, float2 total, Stats& s, const Params& p) {
    const float inv_cols = 1.f / static_cast<float>(p.cols);
    s.rstd = rsqrtf(total.x * inv_cols + p.eps);
    s.mean_gxhat = total.y * s.rstd * inv_cols;
  }
  // acc: dw of the pack's V elements.
  __device__ static void store_out(const Params& p, int64_t row, int64_t col,
                                   const Vec16<T> (&in)[kStaged], const Held& w, const Stats& s,
                                   float (&acc)[Vec16<T>::kSize]) {
    store_vec(p.dx + row * p.cols + col,
              rmsnorm_bwd_rows::pack_dx<kAddGrad>(in[0], in[1], w, in[kStaged - 1], s.rstd,
                                                  s.mean_gxhat, acc));
  }
  __host__ __device__ static T* col_grad(const Params& p, int) { return p.dw; }
};


inline size_t v3_workspace(const Shape& s, DType dtype, int sm_count) {
  return std::max(v2_workspace(s, dtype, sm_count), staged_rows::workspace_bytes(s, 1, sm_count));
}

template <class T, bool kAddGrad>
void launch_staged(const BwdParams<T>& p, const LaunchArgs& a) {
  using Op = RmsnormBwdStaged<T, kAddGrad>;
  if (!staged_rows::launch_staged<Op>(p, bwd_rows_aligned(p), a)) {
    launch_persistent<T, kAddGrad>(p, a);
  }
}

}  // namespace kbench::rmsnorm_bwd_rows
