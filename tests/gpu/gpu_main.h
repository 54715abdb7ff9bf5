// GPU test programs exit 77 without a GPU: ctest reports them as skipped, not passed.
#pragma once
#include <gtest/gtest.h>

#include <iostream>

#include "harness/device.h"

inline constexpr int kSkipExitCode = 77;

inline int run_gpu_tests(int argc, char** argv) {
  if (kbench::device_count() == 0) {
    std::cout << "no GPU (" << kbench::no_device_reason() << "): skipped\n";
    return kSkipExitCode;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
