// Exceptions that carry kbench's exit codes. Library code throws; apps/main.cpp maps them:
// UsageError -> 2 (bad usage or bad input), RuntimeFailure -> 3 (no GPU, GPU error, OOM).
// A failed correctness check or a regression is not an exception: commands return 1.
#pragma once
#include <stdexcept>
#include <string>

namespace kbench {

enum ExitCode : int { kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitRuntime = 3 };

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RuntimeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kbench
