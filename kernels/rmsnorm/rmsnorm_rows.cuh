// The register-row rmsnorm forward kernels, shared by rmsnorm (kernels/rmsnorm/rmsnorm.cu) and
// fused_add_rmsnorm (kernels/fused_add_rmsnorm/fused_add_rmsnorm.cu). With kAdd the row is
// h = x + r (rounded to T and written to h) and y = rmsnorm(h) * w: the same kernel with one
// more input read and one more output written per element.
//
//   rmsnorm_fwd_two_pass  block per row, 16-byte (or scalar) accesses, two passes over the
//                         row, the second from L2: rows beyond register capacity.
//   rmsnorm_fwd_regs      the row read once into registers (see the comment at the kernel).
#pragma once
#include <algorithm>
#include <cstdint>

#include "harness/registry.h"
#include "kernels/common/compat.h"
#include "kernels/common/dtypes.h"
#include "kernels/common/launch.h"
#include "kernels/common/reduce.h"
#include "kernels/common/row_layout.h"
#include "kernels/common/staged_rows.cuh"
#include "kernels/common/vec.h"

namespace kbench::rmsnorm_rows {

// What every forward kernel takes. Row offsets are row * cols in int64: M * N can pass 2^31.
// r and h are used only by kAdd kernels (fused_add_rmsnorm).
template <class T>
struct FwdParams {
  const T* x;
  const T* w;
  T* y;
  int64_t rows;
  int64_t cols;
  float eps;
  const T* r = nullptr;
  T* h = nullptr;
};

// 16-byte accesses are legal when every row of every tensor starts 16-byte aligned.
template <class T>
bool fwd_rows_aligned(const FwdParams<T>& p) {
  const bool residual_aligned = p.r == nullptr || (rows_are_vec16_aligned<T>(p.r, p.cols) &&
                                                   rows_are_vec16_aligned<T>(p.h, p.cols));
  return rows_are_vec16_aligned<T>(p.x, p.cols) && rows_are_vec16_aligned<T>(p.y, p.cols) &&
         rows_are_vec16_aligned<T>(p.w, p.cols) && residual_aligned;
}

// y = x * rstd * w for one pack, a pair at a time (see get_pair: keeps 16-bit packs packed).
template <class T>
__device__ __forceinline__ Vec16<T> normalize(const Vec16<T>& xv, const Vec16<T>& wv, float rstd) {
  Vec16<T> yv;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    const float2 w = get_pair(wv, j);
    set_pair(yv, j, make_float2(x.x * rstd * w.x, x.y * rstd * w.y));
  }
  return yv;
}

// sum += the squares of the pack's elements, a pair at a time.
template <class T>
__device__ __forceinline__ void add_squares(float& sum, const Vec16<T>& v) {
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 e = get_pair(v, j);
    sum = fmaf(e.x, e.x, sum);
    sum = fmaf(e.y, e.y, sum);
  }
}

// h = x + r for one pack, in fp32, rounded once to T.
template <class T>
__device__ __forceinline__ Vec16<T> add_packs(const Vec16<T>& xv, const Vec16<T>& rv) {
  Vec16<T> hv;
#pragma unroll
  for (int j = 0; j < Vec16<T>::kSize / 2; ++j) {
    const float2 x = get_pair(xv, j);
    const float2 r = get_pair(rv, j);
    set_pair(hv, j, make_float2(x.x + r.x, x.y + r.y));
  }
  return hv;
}

// One pack of the row a norm takes statistics of: x, or with kAdd h = x + r (also written to
// h_row). kStream: the data is used once, keep it out of L1.
template <class T, bool kVector, bool kAdd, bool kStream, class Index>
__device__ __forceinline__ Vec16<T> load_row_pack(const FwdParams<T>& p, int64_t offset, Index col,
                                                  Index cols) {
  const Vec16<T> xv = load_pack<T, kVector, kStream>(p.x + offset, col, cols);
  if constexpr (!kAdd) {
    return xv;
  } else {
    const Vec16<T> hv = add_packs(xv, load_pack<T, kVector, kStream>(p.r + offset, col, cols));
    store_pack<T, kVector>(p.h + offset, col, cols, hv);
    return hv;
  }
}

// ---------------------------------------------------------------------------------------------
// Two passes, block per row: pass 1 sums the squares (kAdd: and writes h), pass 2 re-reads
// the row (x, or h just written by the same thread) mostly from L2 and writes y.
// ---------------------------------------------------------------------------------------------

template <class T, bool kVector, bool kAdd>
__global__ void __launch_bounds__(1024) rmsnorm_fwd_two_pass(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  __shared__ float scratch[kMaxWarps];
  const int64_t packs = ceil_div(p.cols, V);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t offset = row * p.cols;
    float sum_sq = 0.f;
    for (int64_t k = threadIdx.x; k < packs; k += blockDim.x) {
      const Vec16<T> xv = load_row_pack<T, kVector, kAdd, false>(p, offset, k * V, p.cols);
#pragma unroll
      for (int j = 0; j < V / 2; ++j) {
        const float2 v = get_pair(xv, j);
        sum_sq = fmaf(v.x, v.x, sum_sq);
        sum_sq = fmaf(v.y, v.y, sum_sq);
      }
    }
    sum_sq = block_reduce_sum(sum_sq, scratch);  // synchronizes before reusing scratch
    const float rstd = rsqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);
    const T* row_in = (kAdd ? p.h : p.x) + offset;
    for (int64_t k = threadIdx.x; k < packs; k += blockDim.x) {
      const Vec16<T> xv = load_pack<T, kVector, false>(row_in, k * V, p.cols);
      const Vec16<T> wv = load_pack<T, kVector, false>(p.w, k * V, p.cols);
      store_pack<T, kVector>(p.y + offset, k * V, p.cols, normalize(xv, wv, rstd));
    }
  }
}

template <class T, bool kAdd>
void launch_two_pass(const FwdParams<T>& p, gpuStream_t stream) {
  // About one Vec16 per thread per pass, between 128 and 1024 threads.
  const int64_t packs = ceil_div(p.cols, Vec16<T>::kSize);
  const int threads = static_cast<int>(
      std::clamp<int64_t>(ceil_div(packs, kWarpSize) * kWarpSize, 128, 1024));
  if (fwd_rows_aligned(p)) {
    rmsnorm_fwd_two_pass<T, true, kAdd><<<row_blocks(p.rows), threads, 0, stream>>>(p);
  } else {
    rmsnorm_fwd_two_pass<T, false, kAdd><<<row_blocks(p.rows), threads, 0, stream>>>(p);
  }
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// The row read once, held in registers.
//
// A team of kTeam threads (one warp, or the whole block) owns one row at a time; a block holds
// kBlock / kTeam teams. Thread `lane` of a team holds kPacks packs of V elements, pack k
// starting at column (k * kTeam + lane) * V, so each pack load is coalesced across the team
// (one warp instruction reads 32 x 16 = 512 contiguous bytes). All kPacks loads are issued
// before the reduction consumes any of them: kPacks x 16 bytes in flight per thread, e.g.
// 1024 threads x 4 x 16 B = 64 KB per SM, well over the ~20 KB an H100 SM needs to cover
// HBM latency at its share of the bandwidth (3.35 TB/s / 132 SMs x ~700 ns).
//
// The grid is persistent (kMinBlocks blocks per SM, the occupancy __launch_bounds__ asks
// for) and walks rows with a block stride, so w is loaded once per thread and reused for
// every row. kVector = false is the scalar-access variant (unaligned rows or N not a
// multiple of V): the same layout, packs loaded element by element with a bound check.
// kAdd: r's packs are loaded too and x + r replaces x; w is then re-read per row (r's packs
// take the registers held w would).
// ---------------------------------------------------------------------------------------------

// Rows of two warps or more at up to 4 packs per thread (1025-16384 bf16), 16-byte accesses: w is
// not held but re-read per row from L1 / L2, and the block asks for 2048 threads per SM (32
// registers; fp16's 512-thread kernel spills 4 bytes) instead of the layout's 1024. On one H200,
// bf16, v4 (GB/s, four runs against two, all rmsnorm's loads under the L2 evict_last hint): +1.9 /
// +0.4 / +9.0 / +1.9 / +12.1% at 2K / 4K / 5120 / 8K / 16K, 95.2% of the ceiling at 8K and 94.1% at
// 16K, where v5 read 93.1-94.8 and 92.8-93.2; w not held alone gave about half of that. Warp rows
// (1K and narrower) lost 1.0% so and keep w; so do fused_add_rmsnorm's rows (kAdd, r's packs too)
// and the scalar variant (it spilled at 32 registers). kernels/rmsnorm/NOTES.md, sixty-first
// session.
template <int kTeam, int kPacks, bool kVector, bool kAdd>
constexpr bool kWideRowsAtFullOccupancy = !kAdd && kWideFourPackRows<kTeam, kPacks, kVector>;

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector, bool kAdd>
__global__ void __launch_bounds__(kBlock, kMinBlocks) rmsnorm_fwd_regs(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kTeams = kBlock / kTeam;
  // w for up to 4 packs costs 16 registers and is reused for every row (but in the rows of
  // kWideRowsAtFullOccupancy, whose 32 registers hold x alone). At 8 packs x alone
  // takes 32 registers of the 64 a 1024-thread block may have, so w is re-read per row
  // (from L2: N * sizeof(T) per row next to 2 * N * sizeof(T) of HBM traffic).
  constexpr bool kHoldW =
      kPacks <= 4 && !kAdd && !kWideRowsAtFullOccupancy<kTeam, kPacks, kVector, kAdd>;
  static_assert(kBlock % kTeam == 0 && kTeam % kWarpSize == 0);
  __shared__ float scratch[2][kBlock / kWarpSize];

  const int team = threadIdx.x / kTeam;
  const int lane = threadIdx.x % kTeam;
  const auto pack_col = [lane](int k) { return static_cast<int64_t>(k * kTeam + lane) * V; };

  Vec16<T> w_held[kHoldW ? kPacks : 1];
  if constexpr (kHoldW) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) w_held[k] = load_pack<T, kVector, false>(p.w, pack_col(k), p.cols);
  }

  int buf = 0;
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kTeams;
  // Block-uniform loop: a team whose row is past the end still joins team_reduce_sum's barrier.
  for (int64_t first_row = static_cast<int64_t>(blockIdx.x) * kTeams; first_row < p.rows;
       first_row += row_stride) {
    const int64_t row = first_row + team;
    const int64_t cols = row < p.rows ? p.cols : 0;  // 0: this team has no row this round
    const int64_t offset = row * p.cols;
    T* y_row = p.y + offset;

    Vec16<T> xv[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) xv[k] = load_row_pack<T, kVector, kAdd, true>(p, offset, pack_col(k), cols);

    float sum_sq = 0.f;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < V / 2; ++j) {
        const float2 v = get_pair(xv[k], j);
        sum_sq = fmaf(v.x, v.x, sum_sq);  // one FMA per element
        sum_sq = fmaf(v.y, v.y, sum_sq);
      }
    }
    sum_sq = team_reduce_sum<kTeam>(sum_sq, scratch[buf]);
    buf ^= 1;
    const float rstd = rsqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);

#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      keep_packed(xv[k]);  // convert x again rather than keep 2x the registers alive as floats
      Vec16<T> wv;
      if constexpr (kHoldW) {
        wv = w_held[k];
        keep_packed(wv);  // stops the compiler hoisting w's conversion out of the row loop
      } else {
        wv = load_pack<T, kVector, false>(p.w, pack_col(k), cols);
      }
      store_pack<T, kVector>(y_row, pack_col(k), cols, normalize(xv[k], wv, rstd));
    }
  }
}

// sm_count = 0: one block per group of rows (the hardware schedules blocks as others finish)
// instead of a persistent grid.
template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector, bool kAdd>
void launch_fwd_regs_variant(const FwdParams<T>& p, int sm_count, gpuStream_t stream) {
  constexpr int kTeams = kBlock / kTeam;
  const int64_t resident =
      sm_count > 0 ? static_cast<int64_t>(sm_count) * kMinBlocks : kMaxRowBlocks;
  const int grid = static_cast<int>(std::min(ceil_div(p.rows, kTeams), resident));
  rmsnorm_fwd_regs<T, kBlock, kTeam, kPacks, kMinBlocks, kVector, kAdd><<<grid, kBlock, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// rmsnorm's v3_vec16_regs (sm_count > 0) and v4_vec16_rows_grid (sm_count = 0); fused add
// (kAdd) does without the 8-pack layouts (r's packs next to x's would not fit 64 registers).
template <class T, bool kAdd>
void launch_regs(const FwdParams<T>& p, int sm_count, gpuStream_t stream) {
  const int64_t packs = ceil_div(p.cols, Vec16<T>::kSize);
  const bool in_registers =
      with_row_layout(packs, fwd_rows_aligned(p), !kAdd, [&](auto layout, auto vector) {
        using L = decltype(layout);
        constexpr bool kVector = decltype(vector)::value;
        constexpr int kMinBlocks = kWideRowsAtFullOccupancy<L::kTeam, L::kPacks, kVector, kAdd>
                                       ? 2048 / L::kBlock
                                       : L::kMinBlocks;
        launch_fwd_regs_variant<T, L::kBlock, L::kTeam, L::kPacks, kMinBlocks, kVector, kAdd>(
            p, sm_count, stream);
      });
  if (!in_registers) launch_two_pass<T, kAdd>(p, stream);  // the second pass from L2
}

// ---------------------------------------------------------------------------------------------
// x staged in shared memory, the next rows in flight while this one computes
// (kernels/common/staged_rows.cuh): rmsnorm's v5_vec16_staged. Rows it does not take
// (unaligned rows; with KBENCH_FORWARD_CLUSTERS=0 also forward_rows_for_staged) go to
// launch_regs (v4).
// ---------------------------------------------------------------------------------------------

// A row's mean square as sum * (1 / N), 1 / N computed once per kernel (the compiler hoists
// it out of the row loop), not sum / N, an IEEE division (~10 instructions) per row: a knob
// for scripts/ab-flags.sh (0 divides).
#ifndef KBENCH_RMSNORM_FWD_RECIPROCAL
#define KBENCH_RMSNORM_FWD_RECIPROCAL 1
#endif
// kFastMemory: the policy for GPUs with fast memory (staged_rows.cuh's fast_memory: the H200).
template <class T, bool kFastMemory = false>
struct RmsnormFwdStaged {
  using Type = T;
  using Params = FwdParams<T>;
  using Held = Vec16<T>;               // w
  using Sums = float2;
  static constexpr bool kOneSum = true;  // sum x^2 in .x
  static constexpr int kStaged = 1;    // x
  static constexpr int kPacks = staged_rows::kForwardPacks;
  // No split rows for rmsnorm itself (fused_add_rmsnorm, two staged tensors, has them): at 16
  // packs per thread, 32769-65536 bf16 measured 0.5-1 point slower at 512x65536 and 5 at
  // 820x40960 (H200; staged_config.h's kSplitRows).
  static constexpr bool kSplitRows = false;
  // One block per SM (staged_rows.cuh's blocks_per_sm), not two for rows of stages up to 48 KB
  // (4-6 packs per thread: 512, 1K, 3072, 5120 bf16). Same run, bf16, % of the copy ceiling, two
  // against one: H200 +0.7 / +1.0 / +1.3 at 32768x1024 / 8192x5120 / 65536x512, but H100 +0.4 /
  // -2.1 / -1.4 there, and -8 to -17 at 3072-12288 (6 packs: 64 registers spilled 60 bytes);
  // fused_add_rmsnorm (3 packs per tensor) H200 -1.3 / -0.5 at 5120 / 512.
  static constexpr int kBlocksPerSm = 1;
  // Rows one block holds read into registers once, their stage refilled after the row's sums
  // (staged_rows.cuh's KBENCH_ROW_IN_REGS): H100, bf16, +0.5 to +2.3% of the copy ceiling at
  // 2K-32K (101.6 against 99.0 at 2048x16384), fp16 +1.2 to +1.9.
  static constexpr bool kRowInRegs = true;
  // And pipelined rows over several blocks (two rows in registers beside w): H100, bf16, +1.8 /
  // +2.4 at 839x40000 / 683x49152. At 8 packs (64K) they spilled 120-132 bytes and read 79
  // against 94 until w stayed packed beside them (staged_rows.cuh's held): 8 bytes so. Same
  // run, H100, at 512x65536: bf16 96.4-98.0 against 94.1-94.6, fp16 97.9-98.4 against 93.2-94.6
  // (thirty-sixth session, kernels/rmsnorm/NOTES.md).
  // fp32's 8-pack rows (no packed w to keep) would spill 8-28 bytes: not those.
  // With fast memory only up to 5 packs (H200, bf16, two repetitions each). At 6 packs, same
  // build, KBENCH_FAST_MEMORY 1 against 0 when only 6 differed: 88.9-89.5 / 90.4-90.7 without
  // them against 85.7-86.1 / 87.8-88.1 with, at 745x45056 / 683x49152. At 8 packs, another
  // H200: 90.8-90.9 without them against 89.5 with at 512x65536; at 1024x32768 90.1-90.3 against
  // 90.6-91.7, where a build with no rows in registers at all (the same kernel there) read 91.4.
  // At 5 packs they gain: +1.8 at 839x40000.
  template <class Config>
  static constexpr bool kPipelinedRowInRegsIn =
      kFastMemory ? Config::kPacks <= 5 : (Config::kPacks <= 6 || sizeof(T) == 2);
  static constexpr int kRounds = 1;    // sum x^2 (in .x)
  static constexpr int kColGrads = 0;  // none
  // With fast memory, w of 16-bit rows one block holds at 8 packs on teams of 64 threads or
  // more (4K-32K bf16) stays packed, converted at each use (staged_rows.cuh's kHeldInRegsIn):
  // converted to floats once, before the row loop, it made every warp wait there for w, whose
  // loads the compiler issued after the prologue's row copies (ncu on the H200: 13-16% of the
  // warps' samples on that conversion at 8K and 32K). Same run, H200, bf16, % of the copy
  // ceiling, three repetitions: 94.9-95.5 against 93.5-94.2 at 2048x16384, 95.7-96.0 against
  // 95.2-96.1 at 4096x8192, 96.1-96.6 against 95.4-96.9 at 8192x4096, 91.1-92.1 against 90.7-91.3
  // at 1024x32768; at 4 and 5 packs (1K, 5120) 94.1-94.4 / 93.1-93.4 against 95.0-96.2 /
  // 94.1-94.7, so not there, nor layernorm's w and b there (-1.0 to -2.2 at 1K, 5120 and 20480;
  // kernels/rmsnorm/NOTES.md, forty-first session).
  template <class Config>
  static constexpr bool kHeldInRegsIn = kFastMemory && sizeof(T) == 2 && Config::kCluster == 1 &&
                                        Config::kPacks == 8 && Config::kTeam >= 64;
  struct Stats {
    float rstd;
  };

  __device__ static const T* staged_row(const Params& p, int, int64_t row) { return p.x + row * p.cols; }
  __device__ static Held hold(const Params& p, int64_t col) { return load_vec(p.w + col); }
  __device__ static void add_sums(int, float2& sums, const Vec16<T> (&in)[1], const Held&,
                                  const Stats&) {
    add_squares(sums, in[0]);
  }
  // sums.x += the squares of the pack's elements.
  __device__ static void add_squares(float2& sums, const Vec16<T>& v) {
    rmsnorm_rows::add_squares(sums.x, v);
  }
  __device__ static void finish_round(int, float2 total, Stats& s, const Params& p) {
#if KBENCH_RMSNORM_FWD_RECIPROCAL
    const float mean_sq = total.x * (1.f / static_cast<float>(p.cols));  // 1 / N: out of the loop
#else
    const float mean_sq = total.x / static_cast<float>(p.cols);
#endif
    s.rstd = rsqrtf(mean_sq + p.eps);
  }
  template <class Acc>
  __device__ static void store_out(const Params& p, int64_t row, int64_t col, const Vec16<T> (&in)[1],
                                   const Held& w, const Stats& s, Acc&) {
    store_vec(p.y + row * p.cols + col, normalize(in[0], w, s.rstd));
  }
  static T* col_grad(const Params&, int) { return nullptr; }
};

template <class T>
void launch_staged(const FwdParams<T>& p, const LaunchArgs& a) {
  using Op = RmsnormFwdStaged<T>;
  using FastMemoryOp = RmsnormFwdStaged<T, true>;
  if (!staged_rows::launch_staged_for_memory<Op, FastMemoryOp>(p, fwd_rows_aligned(p), a)) {
    launch_regs<T, false>(p, 0, stream_of(a));
  }
}

}  // namespace kbench::rmsnorm_rows
