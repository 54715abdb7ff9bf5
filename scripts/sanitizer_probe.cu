// Planted bugs for scripts/sanitize.sh: before it reads "0 hazards" in kbench's kernels as a
// result, it checks that compute-sanitizer reports each bug here, made with the same copy
// primitives the staged and bulk kernels use (kernels/common/async_copy.h, bulk_copy.h), and
// passes their correct forms. One probe per run:
//   sanitizer_probe PROBE      PROBE: racy_plain, racy_async_read, racy_async_refill,
//                              racy_bulk_read, racy_bulk_refill, out_of_bounds (memcheck),
//                              or a correct form: clean_async, clean_bulk
// Each block stages 256 float4s (one per thread) and writes a thread's neighbour's value out, so
// a missing wait or barrier is a cross-thread hazard on shared memory. sm_90 (bulk copies).
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

#include "kernels/common/async_copy.h"
#include "kernels/common/bulk_copy.h"

namespace {

constexpr int kThreads = 256;
constexpr unsigned kStageBytes = kThreads * sizeof(float4);

enum class Probe { racy_plain, racy_async_read, racy_async_refill, racy_bulk_read, racy_bulk_refill,
                   out_of_bounds, clean_async, clean_bulk };

__device__ int neighbour() { return (threadIdx.x + 1) % kThreads; }

// st.shared by one thread, read by another with no barrier between.
__global__ void racy_plain(const float4* in, float* out) {
  __shared__ float4 stage[kThreads];
  stage[threadIdx.x] = in[threadIdx.x];
  out[threadIdx.x] = stage[neighbour()].x;
}

// Each thread's async copy, waited for by that thread only (the barrier after the wait, which
// makes it visible to the others, is what racy_async_read leaves out); racy_async_refill then
// copies into the stage again while the neighbour may still be reading it.
template <bool kBarrierAfterWait, bool kBarrierBeforeRefill>
__global__ void async_rows(const float4* in, float* out) {
  __shared__ float4 stage[kThreads];
  const kbench::SharedSlot slot = kbench::shared_slot(&stage[threadIdx.x]);
  for (int row = 0; row < 2; ++row) {
    kbench::async_copy16(slot, in + row * kThreads + threadIdx.x);
    kbench::async_commit();
    kbench::async_wait<0>();
    if (kBarrierAfterWait) __syncthreads();
    out[row * kThreads + threadIdx.x] = stage[neighbour()].x;
    if (kBarrierBeforeRefill) __syncthreads();
  }
}

// One bulk copy per row into the stage, completion counted on an mbarrier; readers wait on it
// (racy_bulk_read does not), and the next copy waits for every reader (racy_bulk_refill does
// not).
template <bool kWaitForCopy, bool kBarrierBeforeRefill>
__global__ void bulk_rows(const float4* in, float* out) {
#if KBENCH_BULK_COPY
  __shared__ alignas(128) float4 stage[kThreads];
  __shared__ alignas(8) uint64_t full;
  if (threadIdx.x == 0) {
    kbench::barrier_init(&full, 1);
    kbench::barrier_init_fence();
  }
  __syncthreads();
  for (int row = 0; row < 2; ++row) {
    if (threadIdx.x == 0) {
      kbench::barrier_expect_bytes(&full, kStageBytes);
      kbench::bulk_copy(stage, in + row * kThreads, kStageBytes, &full);
    }
    if (kWaitForCopy) kbench::barrier_wait(&full, row & 1);
    out[row * kThreads + threadIdx.x] = stage[neighbour()].x;
    if (!kWaitForCopy) kbench::barrier_wait(&full, row & 1);  // the barrier's phase still turns
    if (kBarrierBeforeRefill) __syncthreads();
  }
#endif
}

__global__ void out_of_bounds(const float4* in, float* out) {
  out[threadIdx.x + 2 * kThreads] = in[threadIdx.x].x;  // out holds 2 * kThreads floats
}

bool parse(const char* name, Probe& p) {
  const char* names[] = {"racy_plain",    "racy_async_read", "racy_async_refill", "racy_bulk_read",
                         "racy_bulk_refill", "out_of_bounds", "clean_async",       "clean_bulk"};
  for (int i = 0; i < 8; ++i)
    if (std::strcmp(name, names[i]) == 0) {
      p = static_cast<Probe>(i);
      return true;
    }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Probe probe;
  if (argc != 2 || !parse(argv[1], probe)) {
    std::fprintf(stderr, "usage: sanitizer_probe racy_plain|racy_async_read|racy_async_refill|"
                         "racy_bulk_read|racy_bulk_refill|out_of_bounds|clean_async|clean_bulk\n");
    return 2;
  }
  float4* in = nullptr;
  float* out = nullptr;
  // Distinct values everywhere: a hazard that rewrites the same value may count as a warning.
  float values[2 * kThreads * 4];
  for (int i = 0; i < 2 * kThreads * 4; ++i) values[i] = static_cast<float>(i + 1);
  if (cudaMalloc(&in, 2 * kStageBytes) != cudaSuccess ||
      cudaMalloc(&out, 2 * kThreads * sizeof(float)) != cudaSuccess ||
      cudaMemcpy(in, values, sizeof(values), cudaMemcpyHostToDevice) != cudaSuccess) {
    std::fprintf(stderr, "sanitizer_probe: no GPU memory\n");
    return 3;
  }
  switch (probe) {
    case Probe::racy_plain: racy_plain<<<1, kThreads>>>(in, out); break;
    case Probe::racy_async_read: async_rows<false, true><<<1, kThreads>>>(in, out); break;
    case Probe::racy_async_refill: async_rows<true, false><<<1, kThreads>>>(in, out); break;
    case Probe::clean_async: async_rows<true, true><<<1, kThreads>>>(in, out); break;
    case Probe::racy_bulk_read: bulk_rows<false, true><<<1, kThreads>>>(in, out); break;
    case Probe::racy_bulk_refill: bulk_rows<true, false><<<1, kThreads>>>(in, out); break;
    case Probe::clean_bulk: bulk_rows<true, true><<<1, kThreads>>>(in, out); break;
    case Probe::out_of_bounds: out_of_bounds<<<1, kThreads>>>(in, out); break;
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s: %s\n", argv[1], cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 3;
}
