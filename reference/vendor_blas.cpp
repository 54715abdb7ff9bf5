#include "reference/vendor_blas.h"

#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)

namespace kbench {
GemmRate measure_bf16_gemm_rate(const DeviceInfo&, int) {
  return {0, "no vendor BLAS in this build (hipBLAS is not packaged on Debian)"};
}
}  // namespace kbench

#else

#include <cublas_v2.h>

#include <vector>

#include "harness/buffer.h"
#include "harness/inputs.h"
#include "harness/stats.h"
#include "harness/timing.h"

namespace kbench {
namespace {

#define KB_CUBLAS_CHECK(call)                                                            \
  do {                                                                                   \
    cublasStatus_t kb_st_ = (call);                                                      \
    if (kb_st_ != CUBLAS_STATUS_SUCCESS)                                                 \
      throw RuntimeFailure(std::string("cuBLAS error ") + cublasGetStatusString(kb_st_) + \
                           " in " #call " at " __FILE__ ":" + std::to_string(__LINE__)); \
  } while (0)

DeviceBuffer random_bf16_matrix(int size, uint64_t seed) {
  const Shape s{size, size};
  HostTensor h = make_input(rows_by_cols("a"), DType::bf16, s, seed);
  DeviceBuffer d(h.bytes.size());
  d.upload(h.bytes.data(), h.bytes.size());
  return d;
}

}  // namespace

GemmRate measure_bf16_gemm_rate(const DeviceInfo& device, int size) {
  KB_GPU_CHECK(gpuSetDevice(device.index));
  DeviceBuffer a = random_bf16_matrix(size, 1), b = random_bf16_matrix(size, 2);
  DeviceBuffer c(size_t(size) * size * sizeof(float));
  cublasHandle_t handle;
  KB_CUBLAS_CHECK(cublasCreate(&handle));
  EventPair events(nullptr);  // the default stream, where cuBLAS runs without a stream set
  const float alpha = 1, beta = 0;
  auto gemm = [&] {
    KB_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha,
                                 a.get(), CUDA_R_16BF, size, b.get(), CUDA_R_16BF, size, &beta,
                                 c.get(), CUDA_R_32F, size, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
  };
  std::vector<double> tflops;
  try {
    for (int i = 0; i < 13; ++i) {  // 3 warm-ups, 10 timed
      const double ms = events.time_ms(gemm);
      if (i >= 3) tflops.push_back(2.0 * size * size * double(size) / (ms * 1e-3) / 1e12);
    }
  } catch (...) {
    cublasDestroy(handle);
    throw;
  }
  cublasDestroy(handle);
  return {summarize(tflops).median,
          "cuBLAS bf16 GEMM " + std::to_string(size) + "^3, fp32 accumulate, median of 10"};
}

}  // namespace kbench

#endif
