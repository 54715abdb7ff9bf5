// rmsnorm forward: y = x * rsqrt(mean(x^2) + eps) * w over each row of x[M, N], w[N];
// fp32 accumulation, result rounded once to the run's dtype.
//
// Minimum traffic: read x once, write y once, read w once: (2*M*N + N) * sizeof(T) bytes,
// about 4*M*N bytes in bf16. Every version below is memory bound; the question is how close
// it gets to the copy bandwidth.
//
// Versions (each one registered at the end of this file as an impl of op "rmsnorm"):
//   v1_naive       one 256-thread block per row, scalar loads: block_reduce_sum of x^2, then
//                  a second pass over x writing y. The obviously correct baseline.
//   v2_vec16       v1's design with 16-byte loads and stores (Vec16) when x, w and y rows
//                  are 16-byte aligned (v1's kernel otherwise); the block is sized to the row.
//                  Still two passes over x; the second mostly hits L2.
//   v3_vec16_regs  reads x exactly once: the row lives in registers, a compile-time number of
//                  Vec16 per thread chosen by N. Rows up to 1024 elements of bf16 take one
//                  warp each, up to 2048 two warps, several rows per block; longer rows take
//                  a whole block (two 512-thread blocks per SM up to 32768 bf16).
//                  Persistent grid, w kept in registers across rows, streaming loads for x.
//                  Unaligned rows use scalar accesses with the same layout; rows beyond
//                  register capacity (65536 bf16 / 32768 fp32) take v2's path.
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

// What every forward kernel takes. Row offsets are row * cols in int64: M * N can pass 2^31.
template <class T>
struct FwdParams {
  const T* x;
  const T* w;
  T* y;
  int64_t rows;
  int64_t cols;
  float eps;
};

template <class T>
FwdParams<T> fwd_params(const LaunchArgs& a) {
  return FwdParams<T>{static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[1]),
                      static_cast<T*>(a.outputs[0]), a.shape.m, a.shape.n, a.eps};
}

// 16-byte accesses are legal when every row of x, y and w starts 16-byte aligned.
template <class T>
bool fwd_rows_aligned(const FwdParams<T>& p) {
  return rows_are_vec16_aligned<T>(p.x, p.cols) && rows_are_vec16_aligned<T>(p.y, p.cols) &&
         rows_are_vec16_aligned<T>(p.w, p.cols);
}

gpuStream_t stream_of(const LaunchArgs& a) { return static_cast<gpuStream_t>(a.stream); }

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Block-per-row kernels loop over rows with a grid stride, so the grid never needs more than
// this many blocks (gridDim.x allows 2^31 - 1; this just keeps launches modest).
constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;

int row_blocks(int64_t rows) { return static_cast<int>(std::min(rows, kMaxRowBlocks)); }

// ---------------------------------------------------------------------------------------------
// v1_naive: one block per row, scalar loads, two passes over x.
// ---------------------------------------------------------------------------------------------

constexpr int kNaiveThreads = 256;

template <class T>
__global__ void __launch_bounds__(1024) rmsnorm_fwd_naive(FwdParams<T> p) {
  __shared__ float scratch[kMaxWarps];
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x_row = p.x + row * p.cols;
    T* y_row = p.y + row * p.cols;
    float sum_sq = 0.f;
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      const float v = to_float(x_row[j]);
      sum_sq += v * v;
    }
    sum_sq = block_reduce_sum(sum_sq, scratch);  // synchronizes before reusing scratch
    const float rstd = rsqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);
    for (int64_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
      y_row[j] = from_float<T>(to_float(x_row[j]) * rstd * to_float(p.w[j]));
    }
  }
}

template <class T>
void launch_v1(const FwdParams<T>& p, gpuStream_t stream) {
  rmsnorm_fwd_naive<T><<<row_blocks(p.rows), kNaiveThreads, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// v2_vec16: v1 with 16-byte accesses (8 bf16 / 4 fp32 per instruction).
// ---------------------------------------------------------------------------------------------

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

// Requires fwd_rows_aligned (so cols is a multiple of V).
template <class T>
__global__ void __launch_bounds__(1024) rmsnorm_fwd_vec16(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  __shared__ float scratch[kMaxWarps];
  const int64_t packs = p.cols / V;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x_row = p.x + row * p.cols;
    T* y_row = p.y + row * p.cols;
    float sum_sq = 0.f;
    for (int64_t k = threadIdx.x; k < packs; k += blockDim.x) {
      const Vec16<T> xv = load_vec(x_row + k * V);
#pragma unroll
      for (int j = 0; j < V / 2; ++j) {
        const float2 v = get_pair(xv, j);
        sum_sq = fmaf(v.x, v.x, sum_sq);
        sum_sq = fmaf(v.y, v.y, sum_sq);
      }
    }
    sum_sq = block_reduce_sum(sum_sq, scratch);
    const float rstd = rsqrtf(sum_sq / static_cast<float>(p.cols) + p.eps);
    // Second pass: this block read the same bytes microseconds ago, so x mostly comes from L2.
    for (int64_t k = threadIdx.x; k < packs; k += blockDim.x) {
      const Vec16<T> xv = load_vec(x_row + k * V);
      const Vec16<T> wv = load_vec(p.w + k * V);
      store_vec(y_row + k * V, normalize(xv, wv, rstd));
    }
  }
}

template <class T>
void launch_v2(const FwdParams<T>& p, gpuStream_t stream) {
  if (!fwd_rows_aligned(p)) return launch_v1(p, stream);  // scalar variant of the same design
  // About one Vec16 per thread per pass, between 128 and 1024 threads.
  const int64_t packs = p.cols / Vec16<T>::kSize;
  const int threads = static_cast<int>(
      std::clamp<int64_t>(ceil_div(packs, kWarpSize) * kWarpSize, 128, 1024));
  rmsnorm_fwd_vec16<T><<<row_blocks(p.rows), threads, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// v3_vec16_regs: x read once, the row held in registers.
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
// ---------------------------------------------------------------------------------------------

// Pack k of a thread covers columns [col, col + V). Columns at or past `cols` read as 0 and
// are not written; cols = 0 turns a whole row off.
template <class T, bool kVector, bool kStream>
__device__ __forceinline__ Vec16<T> load_pack(const T* row, int64_t col, int64_t cols) {
  if constexpr (kVector) {
    if (col >= cols) return zero_vec<T>();
    return kStream ? load_vec_stream(row + col) : load_vec(row + col);
  } else {
    return load_vec_partial(row + col, cols - col);
  }
}

template <class T, bool kVector>
__device__ __forceinline__ void store_pack(T* row, int64_t col, int64_t cols, const Vec16<T>& v) {
  if constexpr (kVector) {
    if (col < cols) store_vec(row + col, v);
  } else {
    store_vec_partial(row + col, v, cols - col);
  }
}

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector>
__global__ void __launch_bounds__(kBlock, kMinBlocks) rmsnorm_fwd_regs(FwdParams<T> p) {
  constexpr int V = Vec16<T>::kSize;
  constexpr int kTeams = kBlock / kTeam;
  // w for up to 4 packs costs 16 registers and is reused for every row. At 8 packs x alone
  // takes 32 registers of the 64 a 1024-thread block may have, so w is re-read per row
  // (from L2: N * sizeof(T) per row next to 2 * N * sizeof(T) of HBM traffic).
  constexpr bool kHoldW = kPacks <= 4;
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
    const T* x_row = p.x + row * p.cols;
    T* y_row = p.y + row * p.cols;

    Vec16<T> xv[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) xv[k] = load_pack<T, kVector, true>(x_row, pack_col(k), cols);

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

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks, bool kVector>
void launch_fwd_regs_variant(const FwdParams<T>& p, int sm_count, gpuStream_t stream) {
  constexpr int kTeams = kBlock / kTeam;
  const int64_t resident = static_cast<int64_t>(std::max(sm_count, 1)) * kMinBlocks;
  const int grid = static_cast<int>(std::min(ceil_div(p.rows, kTeams), resident));
  rmsnorm_fwd_regs<T, kBlock, kTeam, kPacks, kMinBlocks, kVector><<<grid, kBlock, 0, stream>>>(p);
  KB_GPU_CHECK_LAUNCH();
}

template <class T, int kBlock, int kTeam, int kPacks, int kMinBlocks>
void launch_fwd_regs(const FwdParams<T>& p, bool vector, int sm_count, gpuStream_t stream) {
  if constexpr (kPacks <= 4) {
    if (!vector) return launch_fwd_regs_variant<T, kBlock, kTeam, kPacks, kMinBlocks, false>(p, sm_count, stream);
  }
  launch_fwd_regs_variant<T, kBlock, kTeam, kPacks, kMinBlocks, true>(p, sm_count, stream);
}

template <class T>
void launch_v3(const FwdParams<T>& p, int sm_count, gpuStream_t stream) {
  constexpr int V = Vec16<T>::kSize;
  const bool vector = fwd_rows_aligned(p);
  const int64_t packs = ceil_div(p.cols, V);  // Vec16 slots a row needs
  // Smallest configuration whose capacity (kTeam x kPacks packs) holds the row. Warp teams
  // first (rows up to 8 packs per lane: 2048 bf16 on a 32-wide warp), 8 rows per 256-thread
  // block; then one block per row. kMinBlocks keeps >= 768 threads per SM within the
  // register budget ptxas reports (x and w in registers: 8 x kPacks + ~20 per thread).
  if (packs <= kWarpSize * 1) return launch_fwd_regs<T, 256, kWarpSize, 1, 4>(p, vector, sm_count, stream);
  if (packs <= kWarpSize * 2) return launch_fwd_regs<T, 256, kWarpSize, 2, 4>(p, vector, sm_count, stream);
  if (packs <= kWarpSize * 4) return launch_fwd_regs<T, 256, kWarpSize, 4, 4>(p, vector, sm_count, stream);
  // Two-warp teams rather than 8 packs per lane: 4 blocks (1024 threads) per SM instead of 3
  // (measured on H100, bf16 16384x2048: 95% of the copy ceiling with 8 packs per lane).
  if (packs <= 2 * kWarpSize * 4) return launch_fwd_regs<T, 256, 2 * kWarpSize, 4, 4>(p, vector, sm_count, stream);
  if (packs <= 128 * 4) return launch_fwd_regs<T, 128, 128, 4, 8>(p, vector, sm_count, stream);
  if (packs <= 256 * 4) return launch_fwd_regs<T, 256, 256, 4, 4>(p, vector, sm_count, stream);
  if (packs <= 512 * 4) return launch_fwd_regs<T, 512, 512, 4, 2>(p, vector, sm_count, stream);
  // Rows of up to 4096 packs (32768 bf16): two 512-thread blocks per SM, so one block streams
  // while the other reduces (one 1024-thread block per SM left the memory idle between rows:
  // 88% of the copy ceiling on H100 at 1024x32768). The scalar variant needs more registers
  // for per-element addresses and bounds, so it skips the 8-pack configurations.
  if (packs <= 512 * 8 && vector) return launch_fwd_regs<T, 512, 512, 8, 2>(p, vector, sm_count, stream);
  if (packs <= 1024 * 4) return launch_fwd_regs<T, 1024, 1024, 4, 1>(p, vector, sm_count, stream);
  if (packs <= 1024 * 8 && vector) return launch_fwd_regs<T, 1024, 1024, 8, 1>(p, vector, sm_count, stream);
  launch_v2(p, stream);  // beyond register capacity: two passes, the second from L2
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

std::optional<std::string> accepts_any_shape(const Shape&, DType) { return std::nullopt; }
size_t no_workspace(const Shape&, DType, int) { return 0; }

}  // namespace

KBENCH_REGISTER(rmsnorm_v1_naive) {
  register_impl("rmsnorm", "v1_naive")
      .note("one 256-thread block per row, scalar loads, two passes over x")
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

KBENCH_REGISTER(rmsnorm_v2_vec16) {
  register_impl("rmsnorm", "v2_vec16")
      .note("block per row, 16-byte loads/stores, two passes over x (second from L2)")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v2(fwd_params<T>(a), stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

KBENCH_REGISTER(rmsnorm_v3_vec16_regs) {
  register_impl("rmsnorm", "v3_vec16_regs")
      .note("x read once into registers; warp per row (small N) or block per row, persistent")
      .dtypes({DType::f32, DType::f16, DType::bf16})
      .launch([](const LaunchArgs& a) {
        dispatch_dtype(a.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_v3(fwd_params<T>(a), a.sm_count, stream_of(a));
        });
      })
      .rejects(accepts_any_shape)
      .workspace(no_workspace);
}

}  // namespace kbench
