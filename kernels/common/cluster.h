// Device side of thread-block clusters (sm_90+): a block's rank in its cluster, a barrier over
// the cluster, and sums over the cluster through distributed shared memory. Kernels instantiated with kCluster = 1 never touch them; on other targets (sm_80, HIP)
// a cluster kernel traps, and launchers never pick one there (host: launch_in_clusters and
// max_active_clusters in compat.h).
#pragma once
#include <cstdint>

#include "kernels/common/compat.h"
#include "kernels/common/reduce.h"

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

// cluster_sync for a barrier that only says this block is done with its shared memory, which
// a peer writes into next (fold_cluster's first): the release covers this block's
// shared-memory accesses alone (fence.release.sync_restrict::shared::cta.cluster, PTX ISA 8.6,
// then a relaxed arrive), so the barrier does not wait for the block's global stores (a
// backward's last dx rows) to land, as cluster_sync's release does. Same run, H200, bf16, % of
// the copy ceiling, means of four: fused_add_rmsnorm_bwd +0.6 / +0.3 at 2048x16384 / 4096x8192,
// rmsnorm_bwd +0.5 / +0.3 at 3072x8192 / 4096x8192, points without the fold level
// (kernels/rmsnorm/NOTES.md, sixty-ninth session). KBENCH_SHARED_ONLY_RELEASE=0, or a toolkit
// older than CUDA 12.8, makes it a cluster_sync.
#ifndef KBENCH_SHARED_ONLY_RELEASE
#define KBENCH_SHARED_ONLY_RELEASE 1
#endif
__device__ __forceinline__ void cluster_sync_shared_only() {
#if KBENCH_CLUSTER_DEVICE && KBENCH_SHARED_ONLY_RELEASE && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
  asm volatile("fence.release.sync_restrict::shared::cta.cluster;\n"
               "barrier.cluster.arrive.relaxed.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  cluster_sync();
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
// A block may hold several teams (kTeams), each on its own row: team t of every block of the
// cluster shares a row, and sums only with team t of the others, on its own slots and
// mbarriers, so the teams need not call together.
//
// kBuffers buffers (value slots and mbarrier) rotate over a team's calls. A buffer is written
// again kBuffers calls later, and a team can only get there after every block's later calls'
// values have reached it, which each block's team sends after its threads finished reading
// this call's slots (the team reduction before each send has a barrier). With one call in
// flight per team (a send, then its wait), a block has read every call up to c - 1 when it sends
// call c + 1, so 2 buffers do. With a second in flight (a row's sum sent while the one before
// is still awaited, and an extra round of a row in between: staged_rows.cuh's pipelined rows),
// a block sending call c has read every call up to c - 3 and every peer up to c - 6, so 8.
// Ranks are added in a fixed order: every block gets bitwise the same sum.
template <int kCluster, class V = float2, int kTeams = 1, int kBuffers = 2>
struct ClusterSums {
  V slots[kTeams][kBuffers][kCluster];
  alignas(8) uint64_t arrived[kTeams][kBuffers];  // mbarriers: one arrival (the team's) + kCluster values
};

// Every thread calls it once before the first sum, then the caller runs cluster_sync() so that
// no block sends to a peer whose mbarriers are not yet initialized.
template <int kCluster, class V, int kTeams, int kBuffers>
__device__ __forceinline__ void cluster_sums_init(ClusterSums<kCluster, V, kTeams, kBuffers>& sums) {
#if KBENCH_CLUSTER_DEVICE
  if (threadIdx.x == 0) {
    for (int t = 0; t < kTeams; ++t) {
      for (int b = 0; b < kBuffers; ++b) {
        const auto bar = static_cast<uint32_t>(__cvta_generic_to_shared(&sums.arrived[t][b]));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
      }
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
#else
  (void)sums;
  no_clusters_here();
#endif
}

// One value to a peer block's slot, counted on that block's mbarrier.
__device__ __forceinline__ void send_async(uint32_t slot, float2 v, uint32_t bar) {
#if KBENCH_CLUSTER_DEVICE
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n"
               ::"r"(slot), "f"(v.x), "f"(v.y), "r"(bar) : "memory");
#else
  (void)slot, (void)v, (void)bar;
  no_clusters_here();
#endif
}
__device__ __forceinline__ void send_async(uint32_t slot, float4 v, uint32_t bar) {
#if KBENCH_CLUSTER_DEVICE
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n"
      ::"r"(slot), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(bar) : "memory");
#else
  (void)slot, (void)v, (void)bar;
  no_clusters_here();
#endif
}

// A plain store to distributed shared memory (an address from peer_address); visible to the
// peer after the next cluster_sync().
__device__ __forceinline__ void store_to_peer(uint32_t address, float4 v) {
#if KBENCH_CLUSTER_DEVICE
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "f"(v.x),
               "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
#else
  (void)address, (void)v;
  no_clusters_here();
#endif
}

// Whole float4s of sums, 16 bytes per store (the mbarrier counts their bytes together).
template <int K>
__device__ __forceinline__ void send_async(uint32_t slot, const RowSums<K>& v, uint32_t bar) {
  static_assert(K % 4 == 0, "sent as float4s");
#pragma unroll
  for (int i = 0; i < K / 4; ++i) {
    send_async(slot + 16 * i, make_float4(v.v[4 * i], v.v[4 * i + 1], v.v[4 * i + 2], v.v[4 * i + 3]), bar);
  }
}

// The sum of v over the blocks of the cluster, where v is the same in every thread of a team
// (lane: the thread's index in its team, team: the team's index in its block), in two halves:
// cluster_send_sum sends this block's v for the team's call `call`, cluster_wait_sum waits for
// every block's and adds them. Every thread of the team, in every block of the cluster, makes
// the same calls, `call` counting the team's sends from 0 the same in all.
template <int kCluster, class V, int kTeams, int kBuffers>
__device__ __forceinline__ void cluster_send_sum(V v, ClusterSums<kCluster, V, kTeams, kBuffers>& sums,
                                                 int rank, int team, int lane, uint32_t call) {
#if KBENCH_CLUSTER_DEVICE
  const int buf = static_cast<int>(call % kBuffers);
  if (lane == 0) {
    const auto bar = static_cast<uint32_t>(__cvta_generic_to_shared(&sums.arrived[team][buf]));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "n"(kCluster * static_cast<int>(sizeof(V)))
                 : "memory");
  }
  if (lane < kCluster) {
    send_async(peer_address(&sums.slots[team][buf][rank], lane), v,
               peer_address(&sums.arrived[team][buf], lane));
  }
#else
  (void)v, (void)sums, (void)rank, (void)team, (void)lane, (void)call;
  no_clusters_here();
#endif
}

template <int kCluster, class V, int kTeams, int kBuffers>
__device__ __forceinline__ V cluster_wait_sum(ClusterSums<kCluster, V, kTeams, kBuffers>& sums, int team,
                                              uint32_t call) {
#if KBENCH_CLUSTER_DEVICE
  const int buf = static_cast<int>(call % kBuffers);
  const uint32_t parity = (call / kBuffers) & 1;  // each buffer's mbarrier completes once per use
  const auto bar = static_cast<uint32_t>(__cvta_generic_to_shared(&sums.arrived[team][buf]));
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
  V total = sums.slots[team][buf][0];
#pragma unroll
  for (int r = 1; r < kCluster; ++r) add_to(total, sums.slots[team][buf][r]);
  return total;
#else
  (void)sums, (void)team, (void)call;
  no_clusters_here();
  return V{};
#endif
}

}  // namespace kbench
