// Planted bugs for scripts/sanitize.sh: before it reads "0 hazards" in kbench's kernels as a
// result, it checks that compute-sanitizer reports each bug here, made with the same copy
// primitives the kernels use (kernels/common/async_copy.h, bulk_copy.h, cluster.h), and passes
// their correct forms. One probe per run (`sanitizer_probe` alone lists them). Each block stages
// 256 float4s, one per thread, and a thread reads its neighbour's, so a missing wait or barrier
// is a hazard between threads on shared memory; the cluster probes do the same across the two
// blocks of a cluster, with stores into the peer block. sm_90 (bulk copies, clusters).
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

#include "kernels/common/async_copy.h"
#include "kernels/common/bulk_copy.h"
#include "kernels/common/cluster.h"

namespace {

constexpr int kThreads = 256;
constexpr unsigned kStageBytes = kThreads * sizeof(float4);

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

// A cluster of two blocks. Each thread writes its own slot, then stores into its neighbour's
// slot in the other block (store_to_peer, as fold_cluster does); racy_cluster_store leaves out
// the cluster barrier between the peer's own write and that store, which fold_cluster has.
template <bool kBarrierBeforeStore>
__global__ void __cluster_dims__(2, 1, 1) cluster_stores(const float4* in, float* out) {
#if KBENCH_CLUSTER_DEVICE
  __shared__ float4 stage[kThreads];
  const int rank = kbench::cluster_rank<2>();
  stage[threadIdx.x] = in[rank * kThreads + threadIdx.x];
  if (kBarrierBeforeStore) kbench::cluster_sync();
  kbench::store_to_peer(kbench::peer_address(&stage[neighbour()], 1 - rank), in[threadIdx.x]);
  kbench::cluster_sync();
  out[rank * kThreads + threadIdx.x] = stage[threadIdx.x].x;
#endif
}

// A cluster of two blocks summing one value each by st.async into both (cluster_send_sum, as
// the cluster row sums do); racy_cluster_async reads the values before the mbarrier says they
// arrived (then waits, so the barrier's phase still turns).
template <bool kWaitForValues>
__global__ void __cluster_dims__(2, 1, 1) cluster_sums(const float4* in, float* out) {
#if KBENCH_CLUSTER_DEVICE
  __shared__ kbench::ClusterSums<2, float4> sums;
  const int rank = kbench::cluster_rank<2>();
  kbench::cluster_sums_init(sums);
  kbench::cluster_sync();
  kbench::cluster_send_sum(in[rank], sums, rank, 0, static_cast<int>(threadIdx.x), 0);
  float4 total;
  if (kWaitForValues) {
    total = kbench::cluster_wait_sum(sums, 0, 0);
  } else {
    total = sums.slots[0][0][0];
    kbench::add_to(total, sums.slots[0][0][1]);
    kbench::cluster_wait_sum(sums, 0, 0);
  }
  out[rank * kThreads + threadIdx.x] = total.x;
  kbench::cluster_sync();  // no block leaves while its peer may still send to it
#endif
}

__global__ void out_of_bounds(const float4* in, float* out) {
  out[threadIdx.x + 2 * kThreads] = in[threadIdx.x].x;  // out holds 2 * kThreads floats
}

using Kernel = void (*)(const float4*, float*);
struct Probe {
  const char* name;
  Kernel kernel;
  int blocks;
};
constexpr Probe kProbes[] = {
    {"racy_plain", racy_plain, 1},
    {"racy_async_read", async_rows<false, true>, 1},
    {"racy_async_refill", async_rows<true, false>, 1},
    {"racy_bulk_read", bulk_rows<false, true>, 1},
    {"racy_bulk_refill", bulk_rows<true, false>, 1},
    {"racy_cluster_store", cluster_stores<false>, 2},
    {"racy_cluster_async", cluster_sums<false>, 2},
    {"out_of_bounds", out_of_bounds, 1},
    {"clean_async", async_rows<true, true>, 1},
    {"clean_bulk", bulk_rows<true, true>, 1},
    {"clean_cluster_store", cluster_stores<true>, 2},
    {"clean_cluster_async", cluster_sums<true>, 2},
};

}  // namespace

int main(int argc, char** argv) {
  const Probe* probe = nullptr;
  for (const Probe& p : kProbes)
    if (argc == 2 && std::strcmp(argv[1], p.name) == 0) probe = &p;
  if (probe == nullptr) {
    std::fprintf(stderr, "usage: sanitizer_probe PROBE, one of:");
    for (const Probe& p : kProbes) std::fprintf(stderr, " %s", p.name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  // Distinct values everywhere: a hazard that rewrites the same value may count as a warning.
  float values[2 * kThreads * 4];
  for (int i = 0; i < 2 * kThreads * 4; ++i) values[i] = static_cast<float>(i + 1);
  float4* in = nullptr;
  float* out = nullptr;
  if (cudaMalloc(&in, 2 * kStageBytes) != cudaSuccess ||
      cudaMalloc(&out, 2 * kThreads * sizeof(float)) != cudaSuccess ||
      cudaMemcpy(in, values, sizeof(values), cudaMemcpyHostToDevice) != cudaSuccess) {
    std::fprintf(stderr, "sanitizer_probe: no GPU memory\n");
    return 3;
  }
  probe->kernel<<<probe->blocks, kThreads>>>(in, out);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s: %s\n", probe->name, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 3;
}
