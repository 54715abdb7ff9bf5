// layernorm backward. Inputs dy[M, N], x[M, N], w[N]; outputs dx[M, N], dw[N], db[N]. Per row,
// with mean = mean(x), rstd = rsqrt(mean((x - mean)^2) + eps), xhat = (x - mean) * rstd and
// g = dy * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   dw[j] = sum over rows of dy[:, j] * xhat[:, j]        db[j] = sum over rows of dy[:, j]
// fp32 accumulation throughout; dw and db are reduced over M in fp32 and rounded once at the
// end. mean and rstd are recomputed from x (nothing is saved by the forward).
//
// Row sums in two rounds, both over registers on the fast path: (sum x, sum g), then
// (sum (x - mean)^2, sum g * (x - mean)). Taking the variance as E[x^2] - mean^2, or
// sum g * xhat as (sum g * x - mean * sum g) * rstd, would save a round but cancels
// catastrophically for rows with a large mean and a small spread. With
// c = rstd^2 * mean(g * (x - mean)):  dx = rstd * ((g - mean(g)) - (x - mean) * c).
//
// Minimum traffic: read dy and x once, write dx once, read w and write dw and db once:
// (3*M*N + 3*N) * sizeof(T) bytes, about 6*M*N bytes in bf16.
//
// Versions (each one registered at the end of this file as an impl of op "layernorm_bwd"):
//   v1_naive              kernel 1: one 256-thread block per row, scalar loads, three passes
//                         (sum x and g; squared deviations and g * (x - mean); dx); mean and
//                         rstd per row to the workspace. Kernel 2: one thread per column sums
//                         dy * xhat and dy over all rows into dw and db.
//   v2_vec16_persistent   persistent grid, dy and x read once: a team (one warp up to 512
//                         threads; several teams per block) holds a row's dy and x in
//                         registers (Vec16 where aligned, scalar accesses otherwise), computes
//                         dx, and every thread accumulates dw and db for its fixed columns in
//                         fp32 across all rows it sees (dw in registers; db in registers, or
//                         in shared memory for 16-bit types). The block's teams combine
//                         them in shared memory into one fp32 partial row each of dw and db in
//                         the workspace; a second kernel sums the partial rows (coalesced).
//                         Rows beyond register capacity (16384 bf16 / 8192 fp32; half that for
//                         unaligned rows) are walked in packs by a block per row, three times,
//                         the second and third mostly from L2.
//   v3_vec16_staged       v2's arithmetic on dy and x staged in shared memory by async copies,
//                         each team's next rows in flight (kernels/common/staged_rows.cuh):
//                         one 512-thread block per SM, teams of 32-512 threads per row up to
//                         12288 bf16, then rows over 4-16 blocks of four 128-thread teams
//                         whose sums meet in global memory (grid rows; clusters of 8 for
//                         32769-49152 and past 65536), w as floats in shared memory there;
//                         dw and db in fp32 registers, one partial row pair per block (per
//                         group of blocks for wider rows; the block's teams add them up with
//                         each team taking a share, which it writes), summed at the end of the
//                         same kernel after a grid barrier. One round of row sums
//                         (x, g, x^2, g * x) where the variance allows (one_pass_variance.h),
//                         else v2's two. Unaligned rows: v2.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/registry.h"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/partials.h"
#include "kernels/common/reduce.h"
#include "kernels/common/staged_rows.cuh"
#include "kernels/common/vec.h"
#include "kernels/layernorm/one_pass_variance.h"

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
  T* db;
  int64_t rows;
  int64_t cols;
  float eps;
  float inv_cols;  // 1 / cols, rounded on the host (row_mean)
};

template <class T>
BwdParams<T> bwd_params(const LaunchArgs& a) {
  return BwdParams<T>{static_cast<const T*>(a.inputs[0]),
                      static_cast<const T*>(a.inputs[1]),
                      static_cast<const T*>(a.inputs[2]),
                      static_cast<T*>(a.outputs[0]),
                      static_cast<T*>(a.outputs[1]),
                      static_cast<T*>(a.outputs[2]),
                      a.shape.m,
                      a.shape.n,
                      a.eps,
                      1.f / static_cast<float>(a.shape.n)};
}

// 16-byte accesses are legal when every row of dy, x, dx and w starts 16-byte aligned.
template <class T>
bool bwd_rows_aligned(const BwdParams<T>& p) {
  return rows_are_vec16_aligned<T>(p.dy, p.cols) && rows_are_vec16_aligned<T>(p.x, p.cols) &&
         rows_are_vec16_aligned<T>(p.dx, p.cols) && rows_are_vec16_aligned<T>(p.w, p.cols);
}

// ---------------------------------------------------------------------------------------------
// v1_naive: block per row for dx, mean and rstd; then thread per column for dw and db.
// ---------------------------------------------------------------------------------------------

constexpr int kNaiveThreads = 256;

template <class T>
__global__ void __launch_bounds__(kNaiveThreads) layernorm_bwd_naive_rows(BwdParams<T> p,
                                                                          float2* stats) {
  __shared__ float scratch[kMaxWarps];
  const float n = static_cast<float>(p.cols);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* dy_row = p.dy + row * p.cols;
    const T* x_row = p.x + row * p.cols;
    T* dx_row = p.dx + row * p.cols;
    float sum_x = 0.f, sum_g = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      sum_x += to_float(x_row[j]);
      sum_g += to_float(dy_row[j]) * to_float(p.w[j]);
    }
    const float mean = block_reduce_sum(sum_x, scratch) / n;
    const float mean_g = block_reduce_sum(sum_g, scratch) / n;
    float sum_sq = 0.f, sum_gxc = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float xc = to_float(x_row[j]) - mean;
      sum_sq += xc * xc;
      sum_gxc += to_float(dy_row[j]) * to_float(p.w[j]) * xc;
    }
    const float rstd = rsqrtf(block_reduce_sum(sum_sq, scratch) / n + p.eps);
    const float mean_gxhat = block_reduce_sum(sum_gxc, scratch) * rstd / n;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float xhat = (to_float(x_row[j]) - mean) * rstd;
      const float g = to_float(dy_row[j]) * to_float(p.w[j]);
      dx_row[j] = from_float<T>(rstd * (g - mean_g - xhat * mean_gxhat));
    }
    if (threadIdx.x == 0) stats[row] = make_float2(mean, rstd);
  }
}

template <class T>
__global__ void __launch_bounds__(kNaiveThreads) layernorm_bwd_naive_cols(BwdParams<T> p,
                                                                          const float2* stats) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= p.cols) return;
  float sum_dw = 0.f, sum_db = 0.f;
  for (int64_t row = 0; row < p.rows; ++row) {
    const int64_t i = row * p.cols + col;
    const float dy = to_float(p.dy[i]);
    sum_dw += dy * (to_float(p.x[i]) - stats[row].x) * stats[row].y;
    sum_db += dy;
  }
  p.dw[col] = from_float<T>(sum_dw);
  p.db[col] = from_float<T>(sum_db);
}

size_t v1_workspace(const Shape& s, DType, int) {
  return static_cast<size_t>(s.m) * sizeof(float2);
}

template <class T>
void launch_v1(const LaunchArgs& a) {
  const BwdParams<T> p = bwd_params<T>(a);
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, v1_workspace(a.shape, a.dtype, a.sm_count), "layernorm_bwd");
  float2* stats = static_cast<float2*>(a.workspace);
  layernorm_bwd_naive_rows<T><<<row_blocks(p.rows), kNaiveThreads, 0, stream>>>(p, stats);
  KB_GPU_CHECK_LAUNCH();
  const int col_blocks = static_cast<int>(ceil_div(p.cols, kNaiveThreads));
  layernorm_bwd_naive_cols<T><<<col_blocks, kNaiveThreads, 0, stream>>>(p, stats);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Pack arithmetic of v2's kernels, a pair at a time (get_pair keeps 16-bit packs packed).
// g = dy * w is recomputed wherever it is needed (w comes from L1; holding g as floats would
// double the row's registers). __fmul_rn keeps the compiler from fusing dy * w into the next
// subtraction: for N = 1, g - mean(g) must be exactly 0 (rstd = 1 / sqrt(eps) magnifies any
// rounding residue by ~316).
// ---------------------------------------------------------------------------------------------

// Round 1: sums.x += x, sums.y += g.
template <class T>
__device__ __forceinline__ void add_sums_1(float2& sums, const Vec16<T>& dyv, const Vec16<T>& xv,
                                           const Vec16<T>& wv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 dy = get_pair(dyv, j);
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    sums.x += x.x;
    sums.x += x.y;
    sums.y += __fmul_rn(dy.x, w.x);
    sums.y += __fmul_rn(dy.y, w.y);
  }
}

// Round 1 of the staged kernel (v3): sums.x += x, sums.y += g, sums.z += x^2, sums.w += g * x.
template <class T, class W>
__device__ __forceinline__ void add_sums_1_and_products(float4& sums, const Vec16<T>& dyv,
                                                        const Vec16<T>& xv, const W& wv) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 dy = get_pair(dyv, j);
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    const float g0 = __fmul_rn(dy.x, w.x);
    const float g1 = __fmul_rn(dy.y, w.y);
    sums.x += x.x;
    sums.x += x.y;
    sums.y += g0;
    sums.y += g1;
    sums.z = fmaf(x.x, x.x, sums.z);
    sums.z = fmaf(x.y, x.y, sums.z);
    sums.w = fmaf(g0, x.x, sums.w);
    sums.w = fmaf(g1, x.y, sums.w);
  }
}

// Round 2: sums.x += (x - mean)^2 and sums.y += g * (x - mean) over the pack's elements that lie
// in the row (`valid` of them: <= 0 none, >= kSize all). Padded slots hold x = dy = w = 0;
// subtracting 0 instead of the mean there makes both terms 0 (one select per pack when
// kVector, where a pack is all in or all out; one per element otherwise).
template <class T, bool kVector, class Index, class W>
__device__ __forceinline__ void add_sums_2(float2& sums, const Vec16<T>& dyv, const Vec16<T>& xv,
                                           const W& wv, float mean, Index valid) {
  const float pack_mean = valid > 0 ? mean : 0.f;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 dy = get_pair(dyv, j);
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    const float xc0 = x.x - (kVector ? pack_mean : (2 * j < valid ? mean : 0.f));
    const float xc1 = x.y - (kVector ? pack_mean : (2 * j + 1 < valid ? mean : 0.f));
    sums.x = fmaf(xc0, xc0, sums.x);
    sums.x = fmaf(xc1, xc1, sums.x);
    sums.y = fmaf(__fmul_rn(dy.x, w.x), xc0, sums.y);
    sums.y = fmaf(__fmul_rn(dy.y, w.y), xc1, sums.y);
  }
}

// The row's coefficients once both rounds are summed.
struct RowCoefs {
  float mean;    // mean(x)
  float mean_g;  // mean(g)
  float rstd;    // rsqrt(var + eps)
  float c;       // rstd^2 * mean(g * (x - mean)) = rstd * mean(g * xhat)
};

// dx for one pack, and dw_acc += dy * xhat, db_acc += dy for its elements:
// xc = x - mean, dx = rstd * ((g - mean(g)) - xc * c), xhat = xc * rstd.
template <class T, class W>
__device__ __forceinline__ Vec16<T> pack_dx(const Vec16<T>& dyv, const Vec16<T>& xv,
                                            const W& wv, const RowCoefs& r,
                                            float* dw_acc, float* db_acc) {
  Vec16<T> dxv;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 dy = get_pair(dyv, j);
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    const float xc0 = x.x - r.mean;
    const float xc1 = x.y - r.mean;
    set_pair(dxv, j,
             make_float2(r.rstd * fmaf(-xc0, r.c, __fmul_rn(dy.x, w.x) - r.mean_g),
                         r.rstd * fmaf(-xc1, r.c, __fmul_rn(dy.y, w.y) - r.mean_g)));
    dw_acc[2 * j] = fmaf(dy.x, xc0 * r.rstd, dw_acc[2 * j]);
    dw_acc[2 * j + 1] = fmaf(dy.y, xc1 * r.rstd, dw_acc[2 * j + 1]);
    db_acc[2 * j] += dy.x;
    db_acc[2 * j + 1] += dy.y;
  }
  return dxv;
}

// From the row's means: of x, of g, of xc^2 (the variance) and of g * xc.
__device__ __forceinline__ RowCoefs row_coefs(float mean, float mean_g, float var, float mean_g_xc,
                                              float eps) {
  RowCoefs r;
  r.mean = mean;
  r.mean_g = mean_g;
  r.rstd = rsqrtf(var + eps);
  r.c = r.rstd * r.rstd * mean_g_xc;
  return r;
}

// From the two rounds' team sums (the same in every thread of the team).
__device__ __forceinline__ RowCoefs row_coefs(float2 sums_1, float2 sums_2, float n, float eps) {
  return row_coefs(sums_1.x / n, sums_1.y / n, sums_2.x / n, sums_2.y / n, eps);
}

// ---------------------------------------------------------------------------------------------
// v2_vec16_persistent, the register path.
//
// A team of kTeam threads owns one row at a time; a block holds kBlock / kTeam teams and the
// grid is persistent (kMinBlocks blocks per SM), walking rows with a block stride. Thread
// `lane` of a team holds kPacks packs of V elements of dy and x, pack k starting at column
// (k * kTeam + lane) * V (coalesced across the team), and fp32 dw and db accumulators for
// those same columns, which never change from row to row. All of a row's loads are issued
// before the first sum uses any of them: 2 x kPacks x 16 bytes in flight per thread. w is not
// held (it would not fit); each use reads it from L1, where every team of the block finds it.
//
// Registers (16-bit types, kPacks = 4): dy and x 32, dw 32, db 32 and ~40 for addresses,
// coefficients and temporaries do not fit 128 (ptxas spilled), so there db lives in shared
// memory instead (kDbShared): each thread's kPacks * V floats as float4 slots laid out
// [slot][thread], conflict-free, read-modified-written once per row: 2 x V / 4 16-byte
// shared accesses per pack of 8 elements. That fits 128 registers without spills (ptxas,
// sm_90): two 256-thread blocks per SM (their barriers fall at different times) or one
// 512-thread block for rows of 8193..16384 bf16 (64 KB of shared memory, opted into). fp32
// packs hold 4 elements and the scalar variant 2 packs per thread: both keep db in registers.
//
// The workspace holds 2 x gridDim.x fp32 partial rows: dw's of block b at row b, db's at row
// gridDim.x + b. The partials cost 2 x G x N x 4 bytes, written and read again, next to
// 6 x M x N bytes of dy, x, dx (bf16): G / (0.75 M), mostly L2 traffic while G x N x 8 bytes
// fits in L2.
// ---------------------------------------------------------------------------------------------

// Dynamic shared memory of a register-path block: kDbShared's db slots (whose space the dw
// fold reuses afterwards), else the dw and db fold's exchange when the block has several teams.
template <class T, int kBlock, int kTeam, int kPacks, bool kDbShared>
constexpr size_t regs_shared_bytes() {
  constexpr size_t kRow = static_cast<size_t>(kPacks) * Vec16<T>::kSize * sizeof(float);
  if (kDbShared) return kBlock * kRow;
  return kBlock / kTeam > 1 ? kBlock / 2 * kRow : 0;
}

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector, bool kDbShared>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    layernorm_bwd_regs(BwdParams<T> p, float* partials) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kTeams = kBlock / kTeam;
  constexpr int kSlots = kPacks * V / 4;  // float4 slots of db per thread (kDbShared)
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  static_assert(!kDbShared || (kVector && V % 4 == 0));
  __shared__ float2 scratch[2][kBlock / kWarpSize];
  extern __shared__ float4 shared_mem[];  // regs_shared_bytes()

  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  const int all_cols = static_cast<int>(p.cols);  // <= kTeam * kPacks * V <= 16384 here
  const float n = static_cast<float>(p.cols);
  const auto pack_col = [lane](int k) { return (k * kTeam + lane) * V; };
  const auto load_w = [&](int k, int valid) {
    return load_pack<T, kVector, false>(p.w, pack_col(k), valid);
  };

  float dw_acc[kPacks * V];
  float db_acc[kDbShared ? 1 : kPacks * V];
#pragma unroll
  for (int i = 0; i < kPacks * V; ++i) dw_acc[i] = 0.f;
  if constexpr (kDbShared) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      shared_mem[s * kBlock + threadIdx.x] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kPacks * V; ++i) db_acc[i] = 0.f;
  }

  int buf = 0;
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kTeams;
  // Block-uniform loop: a team whose row is past the end still joins team_reduce_sum's barrier.
  for (int64_t first_row = static_cast<int64_t>(blockIdx.x) * kTeams; first_row < p.rows;
       first_row += row_stride) {
    const int64_t row = first_row + team;
    const int valid = row < p.rows ? all_cols : 0;  // 0: this team has no row this round
    const int64_t offset = row * p.cols;

    // Issue every load of the row before using any: 2 * kPacks x 16 bytes in flight per thread.
    Vec16<T> dyv[kPacks];
    Vec16<T> xv[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      dyv[k] = load_pack<T, kVector, true>(p.dy + offset, pack_col(k), valid);
      xv[k] = load_pack<T, kVector, true>(p.x + offset, pack_col(k), valid);
    }

    float2 sums_1 = make_float2(0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) add_sums_1(sums_1, dyv[k], xv[k], load_w(k, valid));
    sums_1 = team_reduce_sum<kTeam>(sums_1, scratch[buf]);
    buf ^= 1;
    // Divisions (here and in row_coefs), not multiplies by 1 / N: ptxas does not move the next
    // round's conversions of the row above them, which keeps the row packed.
    const float mean = sums_1.x / n;

    float2 sums_2 = make_float2(0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      // Convert again rather than keep the row alive as floats (2x the registers).
      keep_packed(dyv[k]);
      keep_packed(xv[k]);
      add_sums_2<T, kVector>(sums_2, dyv[k], xv[k], load_w(k, valid), mean, valid - pack_col(k));
    }
    sums_2 = team_reduce_sum<kTeam>(sums_2, scratch[buf]);
    buf ^= 1;
    if (valid == 0) continue;  // past both barriers; nothing below synchronizes

    const RowCoefs r = row_coefs(sums_1, sums_2, n, p.eps);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      keep_packed(dyv[k]);
      keep_packed(xv[k]);
      if constexpr (kDbShared) {
        float db_pack[V];  // this thread's db for the pack, from shared memory and back
        float4* slots = shared_mem + k * (V / 4) * kBlock + threadIdx.x;
#pragma unroll
        for (int q = 0; q < V / 4; ++q) {
          const float4 f = slots[q * kBlock];
          db_pack[4 * q] = f.x;
          db_pack[4 * q + 1] = f.y;
          db_pack[4 * q + 2] = f.z;
          db_pack[4 * q + 3] = f.w;
        }
        const Vec16<T> dxv =
            pack_dx(dyv[k], xv[k], load_w(k, valid), r, &dw_acc[k * V], db_pack);
        store_pack<T, kVector>(p.dx + offset, pack_col(k), valid, dxv);
#pragma unroll
        for (int q = 0; q < V / 4; ++q) {
          slots[q * kBlock] = make_float4(db_pack[4 * q], db_pack[4 * q + 1], db_pack[4 * q + 2],
                                          db_pack[4 * q + 3]);
        }
      } else {
        store_pack<T, kVector>(p.dx + offset, pack_col(k), valid,
                               pack_dx(dyv[k], xv[k], load_w(k, valid), r, &dw_acc[k * V],
                                       &db_acc[k * V]));
      }
    }
  }

  // One partial row each of dw and db per block: the teams' accumulators added in a fixed
  // order (deterministic), written by team 0.
  float* dw_partial = partials + static_cast<int64_t>(blockIdx.x) * p.cols;
  float* db_partial = partials + static_cast<int64_t>(gridDim.x + blockIdx.x) * p.cols;
  if constexpr (kDbShared) {
    __syncthreads();  // every team's db slots are final
    if (team == 0) {
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        float4 total = shared_mem[s * kBlock + lane];
#pragma unroll
        for (int t = 1; t < kTeams; ++t) {
          const float4 f = shared_mem[s * kBlock + t * kTeam + lane];
          total = make_float4(total.x + f.x, total.y + f.y, total.z + f.z, total.w + f.w);
        }
        const int col = pack_col(s / (V / 4)) + 4 * (s % (V / 4));
        if (col < all_cols) *reinterpret_cast<float4*>(db_partial + col) = total;
      }
    }
    // fold_teams' first barrier keeps the exchange below from overwriting slots still read.
  } else if constexpr (kTeams > 1) {
    fold_teams<kBlock, kTeam, 1>(&db_acc, reinterpret_cast<float*>(shared_mem));
  }
  if constexpr (kTeams > 1) {
    fold_teams<kBlock, kTeam, 1>(&dw_acc, reinterpret_cast<float*>(shared_mem));
  }
  if (team == 0) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      store_partial<kVector, V>(dw_partial, pack_col(k), p.cols, &dw_acc[k * V]);
      if constexpr (!kDbShared) {
        store_partial<kVector, V>(db_partial, pack_col(k), p.cols, &db_acc[k * V]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Rows beyond register capacity: a block per row, the row walked in packs three times (round
// 1 sums; round 2 sums; dx, dw, db). The second and third walks re-read this row's dy and x
// (4 * N bytes in bf16) microseconds after the first, mostly from L2. dw and db accumulate
// straight into the block's partial rows in the workspace (each thread owns its columns, so
// no races); the block's first row initializes them.
// ---------------------------------------------------------------------------------------------

constexpr int kChunkedThreads = 1024;

template <class T, bool kVector>
__global__ void __launch_bounds__(kChunkedThreads, 1)
    layernorm_bwd_chunked(BwdParams<T> p, float* partials) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int64_t kStride = int64_t{kChunkedThreads} * V;
  __shared__ float2 scratch[2][kChunkedThreads / kWarpSize];
  float* dw_partial = partials + static_cast<int64_t>(blockIdx.x) * p.cols;
  float* db_partial = partials + static_cast<int64_t>(gridDim.x + blockIdx.x) * p.cols;
  const int64_t first_col = static_cast<int64_t>(threadIdx.x) * V;
  const float n = static_cast<float>(p.cols);

  int buf = 0;
  bool first_row = true;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* dy_row = p.dy + row * p.cols;
    const T* x_row = p.x + row * p.cols;
    T* dx_row = p.dx + row * p.cols;

    float2 sums_1 = make_float2(0.f, 0.f);
#pragma unroll 1
    for (int64_t col = first_col; col < p.cols; col += kStride) {
      add_sums_1(sums_1, load_pack<T, kVector, false>(dy_row, col, p.cols),
                 load_pack<T, kVector, false>(x_row, col, p.cols),
                 load_pack<T, kVector, false>(p.w, col, p.cols));
    }
    sums_1 = team_reduce_sum<kChunkedThreads>(sums_1, scratch[buf]);
    buf ^= 1;
    const float mean = sums_1.x / n;

    float2 sums_2 = make_float2(0.f, 0.f);
#pragma unroll 1
    for (int64_t col = first_col; col < p.cols; col += kStride) {
      add_sums_2<T, kVector>(sums_2, load_pack<T, kVector, false>(dy_row, col, p.cols),
                             load_pack<T, kVector, false>(x_row, col, p.cols),
                             load_pack<T, kVector, false>(p.w, col, p.cols), mean, p.cols - col);
    }
    sums_2 = team_reduce_sum<kChunkedThreads>(sums_2, scratch[buf]);
    buf ^= 1;
    const RowCoefs r = row_coefs(sums_1, sums_2, n, p.eps);

    for (int64_t col = first_col; col < p.cols; col += kStride) {
      const Vec16<T> dyv = load_pack<T, kVector, true>(dy_row, col, p.cols);
      const Vec16<T> xv = load_pack<T, kVector, true>(x_row, col, p.cols);
      const Vec16<T> wv = load_pack<T, kVector, false>(p.w, col, p.cols);
      float dw_acc[V], db_acc[V];  // the partial rows before this row, then after
      load_partial<kVector, V>(dw_acc, dw_partial, col, first_row ? 0 : p.cols);
      load_partial<kVector, V>(db_acc, db_partial, col, first_row ? 0 : p.cols);
      store_pack<T, kVector>(dx_row, col, p.cols, pack_dx(dyv, xv, wv, r, dw_acc, db_acc));
      store_partial<kVector, V>(dw_partial, col, p.cols, dw_acc);
      store_partial<kVector, V>(db_partial, col, p.cols, db_acc);
    }
    first_row = false;
  }
}

// ---------------------------------------------------------------------------------------------
// v2's configurations and launcher
// ---------------------------------------------------------------------------------------------

template <class T, int kBlock_, int kTeam_, int kPacks_, int kMinBlocks_, bool kVector_>
struct BwdConfig {
  static constexpr int kBlock = kBlock_;
  static constexpr int kTeam = kTeam_;
  static constexpr int kPacks = kPacks_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr bool kVector = kVector_;
  // db in shared memory where dy, x, dw and db would not fit 128 registers (16-bit packs).
  static constexpr bool kDbShared = kVector_ && Vec16<T>::kSize == 8 && kPacks_ == 4;
  static constexpr size_t kSharedBytes =
      regs_shared_bytes<T, kBlock_, kTeam_, kPacks_, kDbShared>();
};
constexpr int kMaxBlocksPerSm = 2;  // the largest kMinBlocks below: bounds the partial rows
constexpr int team_of(int threads) { return std::max(threads, kWarpSize); }

// Dynamic shared memory one block may use. The 512-thread 16-bit configuration needs 64 KB:
// CUDA allows it after an opt-in (sm_80: 163 KB, sm_90: 227 KB); AMD's LDS holds 64 KB per
// workgroup including the static part, so HIP takes the chunked path for those rows.
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
constexpr size_t kMaxSharedBytes = 48 * 1024;
#else
constexpr size_t kMaxSharedBytes = 96 * 1024;
#endif

// Calls f(BwdConfig<...>{}) with the smallest team that holds `packs` packs per row in
// registers; returns false (calling nothing) when the row is beyond register capacity. 4 packs
// of dy and x per thread: a 512-thread team holds 16384 bf16 (8192 fp32) per row. The
// scalar-access variant needs registers for per-element addresses and bounds, so it holds
// half as many packs per thread.
template <class T, bool kVector, class F>
bool with_bwd_config_of(int64_t packs, F&& f) {
  constexpr int kPacks = kVector ? 4 : 2;
  using C512 = BwdConfig<T, 512, 512, kPacks, 1, kVector>;
  constexpr int kWarpTeam = team_of(32), kTwoWarpTeam = team_of(64);
  if (packs <= kWarpTeam * kPacks) return f(BwdConfig<T, 256, kWarpTeam, kPacks, 2, kVector>{}), true;
  if (packs <= kTwoWarpTeam * kPacks) return f(BwdConfig<T, 256, kTwoWarpTeam, kPacks, 2, kVector>{}), true;
  if (packs <= 128 * kPacks) return f(BwdConfig<T, 256, 128, kPacks, 2, kVector>{}), true;
  if (packs <= 256 * kPacks) return f(BwdConfig<T, 256, 256, kPacks, 2, kVector>{}), true;
  if constexpr (C512::kSharedBytes <= kMaxSharedBytes) {
    if (packs <= 512 * kPacks) return f(C512{}), true;
  }
  return false;
}
template <class T, class F>
bool with_bwd_config(int64_t packs, bool vector, F&& f) {
  return vector ? with_bwd_config_of<T, true>(packs, f) : with_bwd_config_of<T, false>(packs, f);
}

// Partial rows: one pair (dw, db) per block, at most kMaxBlocksPerSm blocks per SM, never more
// blocks than rows.
size_t v2_workspace(const Shape& s, DType, int sm_count) {
  return 2 * static_cast<size_t>(max_persistent_blocks(s.m, sm_count, kMaxBlocksPerSm)) *
         static_cast<size_t>(s.n) * sizeof(float);
}

template <class T>
void launch_v2(const LaunchArgs& a) {
  constexpr int V = Vec16<T>::kSize;
  const BwdParams<T> p = bwd_params<T>(a);
  const gpuStream_t stream = stream_of(a);
  require_workspace(a, v2_workspace(a.shape, a.dtype, a.sm_count), "layernorm_bwd");
  float* partials = static_cast<float*>(a.workspace);
  // The partial rows are read and written 16 bytes at a time on the vector path.
  const bool vector = bwd_rows_aligned(p) && reinterpret_cast<uintptr_t>(partials) % 16 == 0;
  const int64_t sms = std::max(a.sm_count, 1);
  // The chunked kernel: one block per SM, one row per block at a time.
  int grid = static_cast<int>(std::min(p.rows, sms));

  const bool in_registers = with_bwd_config<T>(ceil_div(p.cols, V), vector, [&](auto config) {
    using C = decltype(config);
    constexpr int kTeams = C::kBlock / C::kTeam;
    grid = static_cast<int>(std::min(ceil_div(p.rows, kTeams), sms * C::kMinBlocks));
    auto* kernel = layernorm_bwd_regs<T, C::kBlock, C::kTeam, C::kPacks, C::kMinBlocks,
                                      C::kVector, C::kDbShared>;
    static std::atomic<uint64_t> opted_in{0};  // one per configuration (and T)
    allow_shared_bytes(reinterpret_cast<const void*>(kernel), C::kSharedBytes, opted_in);
    kernel<<<grid, C::kBlock, C::kSharedBytes, stream>>>(p, partials);
  });
  if (!in_registers) {
    if (vector) {
      layernorm_bwd_chunked<T, true><<<grid, kChunkedThreads, 0, stream>>>(p, partials);
    } else {
      layernorm_bwd_chunked<T, false><<<grid, kChunkedThreads, 0, stream>>>(p, partials);
    }
  }
  KB_GPU_CHECK_LAUNCH();

  // dw and db: the sums of their partial rows, in one launch (partials.h).
  launch_finalize_partial_rows<2>(stream, partials, grid, p.cols, p.dw, p.db);
}

// ---------------------------------------------------------------------------------------------
// v3_vec16_staged: dy and x staged in shared memory, the next row in flight while this one
// computes (kernels/common/staged_rows.cuh), with v2's arithmetic: the same two rounds of row
// sums, the same dx, dw and db. Rows the staged kernels do not take go to v2; they beat v2 at
// every N of the default sweep, fp32 to bf16 (H100, kernels/rmsnorm/NOTES.md).
// ---------------------------------------------------------------------------------------------

// A row's mean from its sum in the staged kernel: sum * (1 / cols), the reciprocal rounded on
// the host (1, the default), or sum / cols (0, a knob for scripts/ab-flags.sh): an IEEE division
// is ~10 instructions, and the first round takes four means per row. The two differ by at most
// an ulp (not at all where cols is a power of two). Same run, H200, bf16, two repetitions:
// +0.1 to +0.8 points of the copy ceiling at every N of the default sweep. (layernorm's forward,
// two means per row, measured +0.3 to +1.4 at N <= 16384 but -1 to -2.6 at 32768 and 65536, and
// keeps its divisions.)
#ifndef KBENCH_ROW_RECIPROCAL
#define KBENCH_ROW_RECIPROCAL 1
#endif
template <class T>
__device__ __forceinline__ float row_mean(float sum, const BwdParams<T>& p) {
#if KBENCH_ROW_RECIPROCAL
  return sum * p.inv_cols;
#else
  return sum / static_cast<float>(p.cols);
#endif
}

template <class T>
struct LayernormBwdStaged {
  using Type = T;
  using Params = BwdParams<T>;
  using Held = Vec16<T>;              // w
  // w in shared memory (kHeldShared below) as floats, converted once rather than in both
  // passes over every row: same run, H200, bf16, +0.7 to +1.0 points of the copy ceiling at
  // 16384, 32768 and 65536 (78.5 against 77.7 at 16384).
  using SharedHeld = FloatPack<Vec16<T>::kSize>;
  using Sums = float4;
  static constexpr int kStaged = 2;   // dy, x
  static constexpr int kPacks = staged_rows::kPacks;
  // (sum x, sum g, sum x^2, sum g * x); then, for rows one_pass_variance_ok turns down,
  // (sum xc^2, sum g * xc) with xc = x - mean.
  static constexpr int kRounds = 2;
  static constexpr int kColGrads = 2; // dw, db
  // w in shared memory for rows over several blocks (staged_rows.cuh's held_in_shared): with
  // w, dw and db in registers those kernels spilled, and 2 points slower at 65536.
  static constexpr bool kHeldShared = true;
  // Rows past 12288 bf16 over 4 (up to 16384), 8 (32768) or 16 (49153-65536) blocks of four
  // 128-thread teams, as grid rows (staged_config.h's with_wide_rows), not one 512-thread team
  // per block (16384) or clusters of 8 blocks of two 256-thread teams on 120 SMs (65536): half
  // the partial rows of dw and db. Same run, bf16, % of the copy ceiling, three repetitions:
  // H100 2048x16384 82.4-82.7 against 79.5-79.7, 512x65536 80.4-80.6 against 79.4-79.7; H200
  // 77.3-77.5 against 73.8-74.0 at 16384, 73.2-73.5 against 73.8-74.2 at 65536. 32768 took this
  // configuration before (80.7 / 80.6 against 77.3 / 77.4 for 4 blocks of two 256-thread teams
  // in a cluster, H100). At 2 packs per thread (twice the blocks) 1-12 points slower;
  // rmsnorm_bwd so: -10 at 16384, +2 at 32768; polynorm_bwd (H200) -5 at 16384
  // (kernels/rmsnorm/NOTES.md, thirteenth session).
  static constexpr bool kWideRows = true;
  // A block's teams' dw and db summed with the work spread over the teams, each writing its
  // share of the block's partial rows (staged_rows.cuh's scatter_fold), not all into team 0's
  // in log2(teams) rounds (two for the four teams of 16384-65536): same run, H200, bf16, five
  // passes, +0.36 / +0.38 / +0.42 points of the copy ceiling at 16384 / 32768 / 65536, +0.1 at
  // 2048; on another, three passes, +0.07 to +0.17 at 1024 / 2048 and +0.22 / +0.32 at 65536 in
  // fp16 / bf16 (kernels/rmsnorm/NOTES.md, seventy-first session).
  static constexpr bool kScatterFold = true;
  struct Stats {
    RowCoefs coefs;
    bool second_round;
  };

  __device__ static const T* staged_row(const Params& p, int i, int64_t row) {
    return (i == 0 ? p.dy : p.x) + row * p.cols;
  }
  __device__ static Held hold(const Params& p, int64_t col) { return load_vec(p.w + col); }
  __device__ static SharedHeld hold_shared(const Params& p, int64_t col) {
    return to_float_pack(load_vec(p.w + col));
  }
  template <class W>
  __device__ static void add_sums(int round, float4& sums, const Vec16<T> (&in)[kStaged],
                                  const W& w, const Stats& s) {
    if (round == 0) {
      add_sums_1_and_products(sums, in[0], in[1], w);
    } else {
      float2 sums_2 = make_float2(sums.x, sums.y);
      add_sums_2<T, true>(sums_2, in[0], in[1], w, s.coefs.mean, Vec16<T>::kSize);
      sums.x = sums_2.x;
      sums.y = sums_2.y;
    }
  }
  __device__ static void finish_round(int round, float4 total, Stats& s, const Params& p) {
    if (round == 0) {
      const float mean = row_mean(total.x, p);
      const float mean_g = row_mean(total.y, p);
      const float var = fmaf(-mean, mean, row_mean(total.z, p));
      // mean((x - mean) * g) from the same round: cancels no worse than the variance.
      const float cov = fmaf(-mean, mean_g, row_mean(total.w, p));
      s.second_round = !one_pass_variance_ok<T>(mean, var);
      s.coefs = row_coefs(mean, mean_g, fmaxf(var, 0.f), cov, p.eps);
    } else {
      s.coefs = row_coefs(s.coefs.mean, s.coefs.mean_g, row_mean(total.x, p), row_mean(total.y, p),
                          p.eps);
    }
  }
  __device__ static bool needs_round(int, const Stats& s) { return s.second_round; }
  // acc: dw of the pack's V elements, then db's.
  template <class W>
  __device__ static void store_out(const Params& p, int64_t row, int64_t col,
                                   const Vec16<T> (&in)[kStaged], const W& w, const Stats& s,
                                   float (&acc)[2 * Vec16<T>::kSize]) {
    store_vec(p.dx + row * p.cols + col,
              kbench::pack_dx(in[0], in[1], w, s.coefs, acc, acc + Vec16<T>::kSize));
  }
  __host__ __device__ static T* col_grad(const Params& p, int g) { return g == 0 ? p.dw : p.db; }
};

size_t v3_workspace(const Shape& s, DType dtype, int sm_count) {
  return std::max(v2_workspace(s, dtype, sm_count), staged_rows::workspace_bytes(s, 2, sm_count));
}

template <class T>
void launch_v3(const LaunchArgs& a) {
  const BwdParams<T> p = bwd_params<T>(a);
  if (!staged_rows::launch_staged<LayernormBwdStaged<T>>(p, bwd_rows_aligned(p), a)) {
    launch_v2<T>(a);
  }
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

}  // namespace

KBENCH_REGISTER(layernorm_bwd_v1_naive) {
  register_impl("layernorm_bwd", "v1_naive")
      .note("block per row for dx (three scalar passes), then thread per column for dw, db")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) { launch_v1<typename decltype(tag)::type>(a); });
      })
      .rejects(accepts_any_shape)
      .workspace(v1_workspace);
}

KBENCH_REGISTER(layernorm_bwd_v2_vec16_persistent) {
  register_impl("layernorm_bwd", "v2_vec16_persistent")
      .note("persistent: dy, x read once into registers, dw/db in fp32 registers (db in shared "
            "memory for 16-bit), partial rows")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) { launch_v2<typename decltype(tag)::type>(a); });
      })
      .rejects(accepts_any_shape)
      .workspace(v2_workspace);
}

KBENCH_REGISTER(layernorm_bwd_v3_vec16_staged) {
  register_impl("layernorm_bwd", "v3_vec16_staged")
      .note("dy, x staged in shared memory, next row in flight; rows past 12K bf16 over 4-16 blocks")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) { launch_v3<typename decltype(tag)::type>(a); });
      })
      .rejects(accepts_any_shape)
      .workspace(v3_workspace);
}

}  // namespace kbench
