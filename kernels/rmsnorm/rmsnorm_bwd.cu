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
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/registry.h"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/reduce.h"
#include "kernels/common/vec.h"

namespace kbench {
namespace {

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
         rows_are_vec16_aligned<T>(p.dx, p.cols) && rows_are_vec16_aligned<T>(p.w, p.cols);
}

gpuStream_t stream_of(const LaunchArgs& a) { return static_cast<gpuStream_t>(a.stream); }

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void require_workspace(const LaunchArgs& a, size_t bytes) {
  if (a.workspace_bytes < bytes || (bytes > 0 && a.workspace == nullptr)) {
    throw RuntimeFailure("rmsnorm_bwd: workspace of " + std::to_string(a.workspace_bytes) +
                         " bytes, launcher needs " + std::to_string(bytes));
  }
}

// ---------------------------------------------------------------------------------------------
// v1_naive: block per row for dx and rstd, then thread per column for dw.
// ---------------------------------------------------------------------------------------------

constexpr int kNaiveThreads = 256;
constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;  // grid cap; kernels loop over the rest

template <class T>
__global__ void __launch_bounds__(kNaiveThreads) rmsnorm_bwd_naive_rows(BwdParams<T> p,
                                                                        float* rstd_out) {
  __shared__ float scratch[kMaxWarps];
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* dy_row = p.dy + row * p.cols;
    const T* x_row = p.x + row * p.cols;
    T* dx_row = p.dx + row * p.cols;
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
      dx_row[j] = from_float<T>(rstd * (g - xhat * mean_gxhat));
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

size_t v1_workspace(const Shape& s, DType, int) { return static_cast<size_t>(s.m) * sizeof(float); }

template <class T>
void launch_v1(const LaunchArgs& a) {
  const BwdParams<T> p = bwd_params<T>(a);
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, v1_workspace(a.shape, a.dtype, a.sm_count));
  float* rstd = static_cast<float*>(a.workspace);
  const int row_blocks = static_cast<int>(std::min(p.rows, kMaxRowBlocks));
  rmsnorm_bwd_naive_rows<T><<<row_blocks, kNaiveThreads, 0, stream>>>(p, rstd);
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

// Pack k of a thread covers columns [col, col + V). Columns at or past `cols` read as 0 and are
// not written; cols = 0 turns a whole row off.
// Index is int where a row fits in registers (fewer registers), int64_t otherwise.
template <class T, bool kVector, bool kStream, class Index>
__device__ __forceinline__ Vec16<T> load_pack(const T* row, Index col, Index cols) {
  if constexpr (kVector) {
    if (col >= cols) return zero_vec<T>();
    return kStream ? load_vec_stream(row + col) : load_vec(row + col);
  } else {
    return load_vec_partial(row + col, cols - col);
  }
}

template <class T, bool kVector, class Index>
__device__ __forceinline__ void store_pack(T* row, Index col, Index cols, const Vec16<T>& v) {
  if constexpr (kVector) {
    if (col < cols) store_vec(row + col, v);
  } else {
    store_vec_partial(row + col, v, cols - col);
  }
}

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
// per element; dy * xhat = (dy * x) * rstd, 2 more with the accumulation.
template <class T>
__device__ __forceinline__ Vec16<T> pack_dx(const Vec16<T>& dyv, const Vec16<T>& xv,
                                            const Vec16<T>& wv, float rstd, float mean_gxhat,
                                            float (&dw_acc)[Vec16<T>::kSize]) {
  const float x_coef = rstd * rstd * mean_gxhat;
  Vec16<T> dxv;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 dy = get_pair(dyv, j);
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    set_pair(dxv, j,
             make_float2(fmaf(-x_coef, x.x, rstd * (dy.x * w.x)),
                         fmaf(-x_coef, x.y, rstd * (dy.y * w.y))));
    dw_acc[2 * j] = fmaf(dy.x * x.x, rstd, dw_acc[2 * j]);
    dw_acc[2 * j + 1] = fmaf(dy.y * x.y, rstd, dw_acc[2 * j + 1]);
  }
  return dxv;
}

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector>
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
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      dyv[k] = load_pack<T, kVector, true>(p.dy + offset, pack_col(k), valid);
      xv[k] = load_pack<T, kVector, true>(p.x + offset, pack_col(k), valid);
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
                             pack_dx(dyv[k], xv[k], load_w(k, valid), rstd, mean_gxhat, dw_acc[k]));
    }
  }

  // Fold the teams' accumulators into team 0's: log2(kTeams) rounds, in each the upper half
  // of the remaining teams hands its columns to the lower half through shared memory
  // (kBlock / 2 * kPacks * V floats: 32 KB in bf16). Fixed order, so dw is deterministic.
  if constexpr (kTeams > 1) {
    __shared__ float exchange[kBlock / 2 * kPacks * V];
    const auto slot = [lane](int team_slot, int k, int i) {
      return ((team_slot * kPacks + k) * V + i) * kTeam + lane;  // lane fastest: no bank conflicts
    };
#pragma unroll 1
    for (int half = kTeams / 2; half >= 1; half /= 2) {
      __syncthreads();  // the previous round's readers are done
      if (team >= half && team < 2 * half) {
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
#pragma unroll
          for (int i = 0; i < V; ++i) exchange[slot(team - half, k, i)] = dw_acc[k][i];
        }
      }
      __syncthreads();
      if (team < half) {
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
#pragma unroll
          for (int i = 0; i < V; ++i) dw_acc[k][i] += exchange[slot(team, k, i)];
        }
      }
    }
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

// A thread's V consecutive fp32 partials at column col: 16-byte accesses on the vector path
// (the partial row is 16-byte aligned there), scalar ones with bounds otherwise. Columns at
// or past `cols` read as 0 and are not written.
template <bool kVector, int V>
__device__ __forceinline__ void load_partial(float (&v)[V], const float* row, int64_t col,
                                             int64_t cols) {
  if constexpr (kVector) {
    static_assert(V % 4 == 0);
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      const float4 f = col < cols ? *reinterpret_cast<const float4*>(row + col + 4 * q)
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
      v[4 * q] = f.x;
      v[4 * q + 1] = f.y;
      v[4 * q + 2] = f.z;
      v[4 * q + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = col + i < cols ? row[col + i] : 0.f;
  }
}

template <bool kVector, int V>
__device__ __forceinline__ void store_partial(float* row, int64_t col, int64_t cols,
                                              const float (&v)[V]) {
  if constexpr (kVector) {
    if (col >= cols) return;
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      *reinterpret_cast<float4*>(row + col + 4 * q) =
          make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (col + i < cols) row[col + i] = v[i];
    }
  }
}

// Rows beyond register capacity: block per row, the row walked in chunks of kBlock * kPacks
// packs, twice: once for the row sums, once for dx and dw. The second pass re-reads this
// row's dy and x (4 * N bytes in bf16) microseconds after the first, mostly from L2. dw
// accumulates straight into the block's partial row in the workspace (each thread owns its
// columns, so no races); the block's first row initializes it. The old partial values are
// loaded together with dy and x, so the read-modify-write adds no round trip of its own.
template <class T, int kBlock, int kPacks, bool kVector>
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
      float dw_old[kPacks][V];  // the partial row before this row, then after
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t col = pack_col(base, k);
        dyv[k] = load_pack<T, kVector, true>(dy_row, col, p.cols);
        xv[k] = load_pack<T, kVector, true>(x_row, col, p.cols);
        wv[k] = load_pack<T, kVector, false>(p.w, col, p.cols);
        load_partial<kVector>(dw_old[k], partial, col, first_row ? 0 : p.cols);
      }
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t col = pack_col(base, k);
        store_pack<T, kVector>(dx_row, col, p.cols,
                               pack_dx(dyv[k], xv[k], wv[k], rstd, mean_gxhat, dw_old[k]));
        store_partial<kVector>(partial, col, p.cols, dw_old[k]);
      }
    }
    first_row = false;
  }
}

// dw[j] = sum of the partial rows' column j. A block takes 32 columns (one 128-byte line of
// each fp32 partial row) and kFinalizeGroups groups of threads split the partial rows; each
// thread keeps 4 loads in flight, then the groups' sums are added in a fixed order.
constexpr int kFinalizeCols = 32;
constexpr int kFinalizeGroups = 16;

template <class T>
__global__ void __launch_bounds__(kFinalizeCols * kFinalizeGroups)
    rmsnorm_bwd_dw_finalize(const float* partials, int64_t num_partials, int64_t cols, T* dw) {
  __shared__ float group_sums[kFinalizeGroups][kFinalizeCols];
  const int c = threadIdx.x % kFinalizeCols;
  const int group = threadIdx.x / kFinalizeCols;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kFinalizeCols + c;
  float s[4] = {0.f, 0.f, 0.f, 0.f};
  if (col < cols) {
    for (int64_t r = group; r < num_partials; r += 4 * kFinalizeGroups) {
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int64_t ru = r + u * kFinalizeGroups;
        if (ru < num_partials) s[u] += partials[ru * cols + col];
      }
    }
  }
  group_sums[group][c] = (s[0] + s[1]) + (s[2] + s[3]);
  __syncthreads();
  if (group == 0 && col < cols) {
    float total = 0.f;
#pragma unroll
    for (int g = 0; g < kFinalizeGroups; ++g) total += group_sums[g][c];
    dw[col] = from_float<T>(total);
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
  // 512-thread team run one block per SM. <= 128 registers per thread either way.
  static constexpr int kMinBlocks = kBlock_ == 256 ? 2 : 1;
};
constexpr int kMaxBlocksPerSm = 2;  // the largest kMinBlocks above: bounds the partial rows
constexpr int team_of(int threads) { return std::max(threads, kWarpSize); }

// Calls f(BwdConfig<...>{}) with the smallest team that holds `packs` packs per row in
// registers; returns false (calling nothing) when the row is beyond register capacity. The
// scalar-access variant needs registers for per-element addresses and bounds, so it holds
// half as many packs per thread (8192 bf16 per row) to stay clear of spills.
template <bool kVector, class F>
bool with_bwd_config_of(int64_t packs, F&& f) {
  constexpr int kPacks = kVector ? kBwdPacks : kBwdPacks / 2;
  if (packs <= team_of(32) * kPacks) return f(BwdConfig<256, team_of(32), kPacks, kVector>{}), true;
  if (packs <= team_of(64) * kPacks) return f(BwdConfig<256, team_of(64), kPacks, kVector>{}), true;
  if (packs <= 128 * kPacks) return f(BwdConfig<256, 128, kPacks, kVector>{}), true;
  if (packs <= 256 * kPacks) return f(BwdConfig<256, 256, kPacks, kVector>{}), true;
  if (packs <= 512 * kPacks) return f(BwdConfig<512, 512, kPacks, kVector>{}), true;
  return false;
}
template <class F>
bool with_bwd_config(int64_t packs, bool vector, F&& f) {
  return vector ? with_bwd_config_of<true>(packs, f) : with_bwd_config_of<false>(packs, f);
}

// Beyond register capacity: 1024 threads, 2 packs per chunk step (1 for scalar accesses).
constexpr int kChunkedBlock = 1024;

// Partial dw rows: one per block, at most kMaxBlocksPerSm blocks per SM, never more blocks
// than rows.
int64_t v2_max_partials(const Shape& s, int sm_count) {
  return std::max<int64_t>(
      1, std::min<int64_t>(s.m, int64_t{std::max(sm_count, 1)} * kMaxBlocksPerSm));
}

size_t v2_workspace(const Shape& s, DType, int sm_count) {
  return static_cast<size_t>(v2_max_partials(s, sm_count)) * static_cast<size_t>(s.n) *
         sizeof(float);
}

template <class T>
void launch_v2(const LaunchArgs& a) {
  constexpr int V = Vec16<T>::kSize;
  const BwdParams<T> p = bwd_params<T>(a);
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, v2_workspace(a.shape, a.dtype, a.sm_count));
  float* partials = static_cast<float*>(a.workspace);
  // The chunked kernel also reads and writes its fp32 partial rows 16 bytes at a time.
  const bool vector = bwd_rows_aligned(p) && reinterpret_cast<uintptr_t>(partials) % 16 == 0;
  const int64_t sms = std::max(a.sm_count, 1);
  // The chunked kernel: one block per SM, one row per block at a time.
  int grid = static_cast<int>(std::min(p.rows, sms));

  const bool in_registers = with_bwd_config(ceil_div(p.cols, V), vector, [&](auto config) {
    using C = decltype(config);
    constexpr int kTeams = C::kBlock / C::kTeam;
    grid = static_cast<int>(std::min(ceil_div(p.rows, kTeams), sms * C::kMinBlocks));
    rmsnorm_bwd_regs<T, C::kBlock, C::kTeam, C::kPacks, C::kMinBlocks, C::kVector>
        <<<grid, C::kBlock, 0, stream>>>(p, partials);
  });
  if (!in_registers) {
    if (vector) {
      rmsnorm_bwd_chunked<T, kChunkedBlock, 2, true><<<grid, kChunkedBlock, 0, stream>>>(p, partials);
    } else {
      rmsnorm_bwd_chunked<T, kChunkedBlock, 1, false><<<grid, kChunkedBlock, 0, stream>>>(p, partials);
    }
  }
  KB_GPU_CHECK_LAUNCH();

  const int finalize_blocks = static_cast<int>(ceil_div(p.cols, kFinalizeCols));
  rmsnorm_bwd_dw_finalize<T><<<finalize_blocks, kFinalizeCols * kFinalizeGroups, 0, stream>>>(
      partials, grid, p.cols, p.dw);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

std::optional<std::string> accepts_any_shape(const Shape&, DType) { return std::nullopt; }

}  // namespace

KBENCH_REGISTER(rmsnorm_bwd_v1_naive) {
  register_impl("rmsnorm_bwd", "v1_naive")
      .note("block per row for dx (two scalar passes), then thread per column for dw")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) { launch_v1<typename decltype(tag)::type>(a); });
      })
      .rejects(accepts_any_shape)
      .workspace(v1_workspace);
}

KBENCH_REGISTER(rmsnorm_bwd_v2_vec16_persistent) {
  register_impl("rmsnorm_bwd", "v2_vec16_persistent")
      .note("persistent, one pass: dy, x in registers, dw in fp32 registers, partial rows")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) { launch_v2<typename decltype(tag)::type>(a); });
      })
      .rejects(accepts_any_shape)
      .workspace(v2_workspace);
}

}  // namespace kbench
