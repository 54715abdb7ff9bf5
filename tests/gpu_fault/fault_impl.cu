// The faulting impl for fault_test.cpp, in its own file: device code is compiled apart from
// GoogleTest (hipcc's clang 15 crashes compiling gtest.h for the GPU).
#include "harness/registry.h"
#include "kernels/common/compat.h"

namespace kbench {
namespace {

__global__ void write_to_null(int* p) { p[threadIdx.x] = 1; }

void faulting_launch(const LaunchArgs& args) {
  write_to_null<<<1, 1, 0, static_cast<gpuStream_t>(args.stream)>>>(nullptr);
  KB_GPU_CHECK_LAUNCH();
}

}  // namespace

KBENCH_REGISTER(fault_impl) {
  register_impl("rmsnorm", "x_faults_on_second_shape")
      .launch([](const LaunchArgs& args) {
        if (args.shape.m == 128) return faulting_launch(args);
        for (const ImplDescriptor* impl : Registry::instance().impls_of("rmsnorm"))
          if (impl->name == "v1_naive") return impl->launch(args);
      })
      .note("test only: faults at 128xN");
}

}  // namespace kbench
