// One source, two runtimes: the host runtime API under a `gpu` spelling that maps to CUDA or
// HIP, and KB_GPU_CHECK, which throws kbench::RuntimeFailure with file, line and call text.
// Host code outside this header never names cuda* or hip* directly.
#pragma once
#include <cstdint>
#include <sstream>
#include <utility>

#include "harness/errors.h"

#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define KBENCH_RUNTIME_NAME "HIP"
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp = hipDeviceProp_t;
inline constexpr gpuError_t gpuSuccess = hipSuccess;
inline constexpr gpuError_t gpuErrorMemoryAllocation = hipErrorOutOfMemory;
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetPCIBusId hipDeviceGetPCIBusId
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMemoryClockRate hipDeviceAttributeMemoryClockRate
#define gpuDevAttrClockRate hipDeviceAttributeClockRate
#define gpuDevAttrGlobalMemoryBusWidth hipDeviceAttributeMemoryBusWidth
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemGetInfo hipMemGetInfo
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuStreamCreate hipStreamCreate
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttribute hipFuncAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define gpuFuncAttributePreferredSharedMemoryCarveout hipFuncAttributePreferredSharedMemoryCarveout
#define gpuDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor
// HIP has no opt-in above the per-block limit (64 KB of LDS on CDNA).
#define gpuDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeMaxSharedMemoryPerBlock
#define KBENCH_HAS_CLUSTERS 0
#else
#include <cuda_runtime.h>
#define KBENCH_RUNTIME_NAME "CUDA"
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp = cudaDeviceProp;
inline constexpr gpuError_t gpuSuccess = cudaSuccess;
inline constexpr gpuError_t gpuErrorMemoryAllocation = cudaErrorMemoryAllocation;
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMemoryClockRate cudaDevAttrMemoryClockRate
#define gpuDevAttrClockRate cudaDevAttrClockRate
#define gpuDevAttrGlobalMemoryBusWidth cudaDevAttrGlobalMemoryBusWidth
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttribute cudaFuncAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define gpuFuncAttributePreferredSharedMemoryCarveout cudaFuncAttributePreferredSharedMemoryCarveout
#define gpuDevAttrComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
// Thread-block clusters (sm_90+): launched through launch_in_clusters below.
#define KBENCH_HAS_CLUSTERS 1
#endif

namespace kbench {

[[noreturn]] inline void throw_gpu_error(gpuError_t err, const char* call, const char* file,
                                         int line) {
  std::ostringstream msg;
  msg << KBENCH_RUNTIME_NAME << " error " << gpuGetErrorString(err) << " in " << call << " at "
      << file << ":" << line;
  throw RuntimeFailure(msg.str());
}

}  // namespace kbench

#define KB_GPU_CHECK(call)                                                   \
  do {                                                                       \
    gpuError_t kb_err_ = (call);                                             \
    if (kb_err_ != gpuSuccess) kbench::throw_gpu_error(kb_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: catches bad launch configurations at the launch site.
#define KB_GPU_CHECK_LAUNCH() KB_GPU_CHECK(gpuGetLastError())

namespace kbench {

// Returns every L2 line loaded under an evict_last policy (a "persisting" line) to normal
// status, so a later flush evicts it; nothing on HIP, which has no such lines. Best effort: a
// GPU without persisting lines may report it unsupported, which is not an error here.
inline void reset_persisting_l2() {
#if !(defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__))
  if (cudaCtxResetPersistingL2Cache() != cudaSuccess) (void)cudaGetLastError();
#endif
}

// The 64-bit operand of PTX's `.L2::cache_hint` that loads a line under an L2 evict_last
// policy for the whole access: the value `createpolicy.fractional.L2::evict_last.b64 p, 1.0`
// returns (a GPU test checks it; CUTLASS names it CacheHintSm90::EVICT_LAST). The bulk copies
// and calibrate's evict-last copy load with it (on one H200, fused_add_rmsnorm's bulk rows
// gained 0.8-2.8 points of the ceiling), and so do the async copies (async_copy.h, which says
// how a loop's copies keep the policy ptxas 13.0 otherwise dropped).
// KBENCH_L2_EVICT_LAST=0 builds the bulk copies without the hint (for A/B).
#ifndef KBENCH_L2_EVICT_LAST
#define KBENCH_L2_EVICT_LAST 1
#endif
inline constexpr uint64_t kL2EvictLastPolicy = 0x14F0000000000000ull;

#if KBENCH_HAS_CLUSTERS
// A launch of `grid` blocks in clusters of `cluster` consecutive blocks (grid a multiple of
// it); `attribute` must outlive the config.
inline cudaLaunchConfig_t cluster_launch_config(int grid, int block, size_t shared_bytes,
                                                gpuStream_t stream, int cluster,
                                                cudaLaunchAttribute& attribute) {
  attribute = cudaLaunchAttribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(static_cast<unsigned>(block));
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

template <class... Params, class... Args>
void launch_in_clusters(void (*kernel)(Params...), int grid, int block, size_t shared_bytes,
                        gpuStream_t stream, int cluster, Args&&... args) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config =
      cluster_launch_config(grid, block, shared_bytes, stream, cluster, attribute);
  KB_GPU_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

// How many clusters of the kernel can be resident at once (0: none, e.g. before sm_90).
template <class... Params>
int max_active_clusters(void (*kernel)(Params...), int block, size_t shared_bytes, int cluster) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config =
      cluster_launch_config(cluster, block, shared_bytes, nullptr, cluster, attribute);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, reinterpret_cast<const void*>(kernel), &config) !=
      cudaSuccess) {
    (void)cudaGetLastError();  // not an error of the next call
    return 0;
  }
  return clusters;
}

// A launch that may begin while the stream's previous kernel is still finishing (programmatic
// dependent launch, sm_90+; callers pass `overlap` false before sm_90: an ordinary launch). The kernel
// must call wait_for_previous_grid() before it reads what that kernel wrote. This hides the
// gap between a kernel and a short one that consumes its results (a backward's finalize).
template <class... Params, class... Args>
void launch_overlapping_previous(void (*kernel)(Params...), dim3 grid, int block,
                                 gpuStream_t stream, bool overlap, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(static_cast<unsigned>(block));
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = overlap ? 1 : 0;
  KB_GPU_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}
#else
#if defined(__HIP__)  // only HIP sources launch kernels (plain C++ cannot parse <<< >>>)
template <class... Params, class... Args>
void launch_overlapping_previous(void (*kernel)(Params...), dim3 grid, int block,
                                 gpuStream_t stream, bool, Args&&... args) {
  kernel<<<grid, block, 0, stream>>>(std::forward<Args>(args)...);
  KB_GPU_CHECK_LAUNCH();
}
#endif
template <class... Params, class... Args>
void launch_in_clusters(void (*)(Params...), int, int, size_t, gpuStream_t, int, Args&&...) {
  throw RuntimeFailure("thread-block clusters need CUDA on sm_90 or newer");
}
template <class... Params>
int max_active_clusters(void (*)(Params...), int, size_t, int) {
  return 0;
}
#endif

// The two sides of launch_overlapping_previous. A kernel launched that way waits here until the
// previous kernel has finished and its writes are visible (no-op otherwise, and before sm_90).
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// The kernel before it lets it start early: once every block has called this (or exited).
__device__ __forceinline__ void allow_next_grid_to_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// A load of data no kernel writes while this one runs (weights): the read-only path on CUDA
// (__ldg, which the compiler may hoist out of a loop that stores elsewhere), a plain load on HIP
// (whose __ldg takes only built-in types).
template <class T>
__device__ __forceinline__ T load_invariant(const T* p) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  return *p;
#else
  return __ldg(p);
#endif
}

}  // namespace kbench
