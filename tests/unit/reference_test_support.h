// What the float64 reference tests (test_reference_*.cpp) share: an op's descriptor by name
// and reproducible normally distributed inputs.
#pragma once
#include <cstddef>
#include <random>
#include <vector>

#include "harness/registry.h"

namespace kbench::reference_tests {

inline const OpDescriptor& op(const char* name) { return *Registry::instance().find_op(name); }

inline std::vector<double> random_values(size_t n, unsigned seed, double mean = 0,
                                         double stddev = 1) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(mean, stddev);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

}  // namespace kbench::reference_tests
