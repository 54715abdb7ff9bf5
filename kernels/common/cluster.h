// Device side of thread-block clusters (sm_90+): a block's rank in its cluster, a barrier over
// the cluster, and sums over the cluster through distributed shared memory. Kernels instantiated with kCluster = 1 never touch them; on other targets (sm_80, HIP)
// a cluster kernel traps, and launchers never pick one there (host: launch_in_clusters and
// max_active_clusters in compat.h).
#pragma once
#include <cstdint>

#include "kernels/common/compat.h"

namespace kbench {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KBENCH_CLUSTER_DEVICE 1
#else
#define KBENCH_CLUSTER_DEVICE 0
#endif

// Stops the kernel: a cluster function reached where clusters do not exist.
__device__ __forceinline__ void no_clusters_here() {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  __builtin_trap();
#else
  __trap();
#endif
}

template <int kCluster>
__device__ __forceinline__ int cluster_rank() {
  if constexpr (kCluster == 1) {
    return 0;
  } else {
#if KBENCH_CLUSTER_DEVICE
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return static_cast<int>(rank);
#else
    no_clusters_here();
    return 0;
#endif
  }
}

// Every thread of every block of the cluster: shared-memory writes before it (to any block of
// the cluster) are visible to all after it.
__device__ __forceinline__ void cluster_sync() {
#if KBENCH_CLUSTER_DEVICE
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  no_clusters_here();
#endif
}

// A shared-memory address of this block as the same variable's address in block `peer`.
__device__ __forceinline__ uint32_t peer_address(const void* local, int peer) {
#if KBENCH_CLUSTER_DEVICE
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(local));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(address), "r"(peer));
  return remote;
#else
  (void)local;
  (void)peer;
  no_clusters_here();
  return 0;
#endif
}

// Sums over the blocks of a cluster, one per call, without a cluster barrier per call.
//
// A cluster barrier (barrier.cluster.arrive.release) makes every thread's earlier global
// stores visible first: a row kernel that just stored its previous row waited for those
// stores at every row (measured on H100: a rmsnorm forward with a 2-block cluster per row at
// 80% of the copy ceiling, one block per row at 97%). Here each block instead sends its value
// to every block of the cluster with st.async, which counts the bytes on an mbarrier in the
// receiving block; a block waits on its own mbarrier until all kCluster values are in, and no
// fence touches global memory.
//
// Two buffers (value slots and mbarrier) alternate between calls. A buffer is written again
// two calls later, and a block can only get there after every block's next call's value has
// reached it, which each block sends after its threads finished reading this call's slots
// (the block reduction before it has a barrier). Ranks are added in a fixed order: every
// block gets bitwise the same sum.
template <int kCluster>
struct ClusterSums {
  float2 slots[2][kCluster];
  alignas(8) uint64_t arrived[2];  // mbarriers: one arrival (this block's) + kCluster values
};

// Every thread calls it once before the first sum, then the caller runs cluster_sync() so that
// no block sends to a peer whose mbarriers are not yet initialized.
template <int kCluster>
__device__ __forceinline__ void cluster_sums_init(ClusterSums<kCluster>& sums) {
#if KBENCH_CLUSTER_DEVICE
  if (threadIdx.x == 0) {
    for (int b = 0; b < 2; ++b) {
      const auto bar = static_cast<uint32_t>(__cvta_generic_to_shared(&sums.arrived[b]));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
#else
  (void)sums;
  no_clusters_here();
#endif
}

// The sum of v over the blocks of the cluster, where v is the same in every thread of a block.
// Every thread of every block calls it, `call` counting the calls from 0 the same in all.
template <int kCluster>
__device__ __forceinline__ float2 cluster_reduce_sum(float2 v, ClusterSums<kCluster>& sums,
                                                     int rank, uint32_t call) {
#if KBENCH_CLUSTER_DEVICE
  const int buf = static_cast<int>(call & 1);
  const uint32_t parity = (call >> 1) & 1;  // each buffer's mbarrier completes once per use
  const auto bar = static_cast<uint32_t>(__cvta_generic_to_shared(&sums.arrived[buf]));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "n"(kCluster * static_cast<int>(sizeof(float2)))
                 : "memory");
  }
  if (threadIdx.x < kCluster) {
    const int peer = static_cast<int>(threadIdx.x);
    asm volatile(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n" ::"r"(
            peer_address(&sums.slots[buf][rank], peer)),
        "f"(v.x), "f"(v.y), "r"(peer_address(&sums.arrived[buf], peer))
        : "memory");
  }
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
  float2 total = sums.slots[buf][0];
#pragma unroll
  for (int r = 1; r < kCluster; ++r) {
    total.x += sums.slots[buf][r].x;
    total.y += sums.slots[buf][r].y;
  }
  return total;
#else
  (void)v;
  (void)sums;
  (void)rank;
  (void)call;
  no_clusters_here();
  return v;
#endif
}

}  // namespace kbench
