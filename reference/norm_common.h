// What the normalization references share: tolerance models and shape sweeps. Row-wise norms
// (rmsnorm, layernorm, polynorm and their fused variants) all take statistics of a row and
// write an output of the row's size, so they are measured over the same shapes.
#pragma once
#include <cmath>
#include <map>
#include <vector>

#include "harness/dtype.h"
#include "harness/registry.h"
#include "harness/shape.h"

namespace kbench::norm {

inline double mn(const Shape& s) { return static_cast<double>(s.m) * static_cast<double>(s.n); }

// Outputs of a row-wise op are computed in fp32 and rounded once to the dtype: allow 2.5
// units of roundoff (one for the final rounding, the rest for fp32 arithmetic and kernels
// that round an intermediate such as xhat), plus a small absolute floor for values near 0.
inline Tolerance rowwise_tolerance(DType t, double atol, double units = 2.5) {
  return Tolerance{atol, units * dtype_epsilon(t) + 1e-5};
}

// A weight or bias gradient sums `terms` products of unit size with random signs, so its
// magnitude grows like sqrt(terms); an fp32 accumulation errs by about 2^-24 * sqrt(terms) *
// |partial sum| for pairwise or blocked sums and more for a long sequential sum. The absolute
// tolerance therefore scales with sqrt(terms) (1e-4 per unit of typical magnitude, generous
// for fp32) while a wrong kernel (a dropped row, a missing block partial) errs by whole
// terms, far above it. Per-column gradients (dw[N]) sum M terms; scalar ones (polynorm's w
// and b) sum M * N.
inline Tolerance reduction_tolerance(DType t, double terms) {
  return Tolerance{1e-4 * std::sqrt(terms) + 1e-5, 2.5 * dtype_epsilon(t) + 1e-5};
}

// quick: M*N = 16M and 32M. default: M*N = 32M elements (64 MiB per bf16 tensor, above any
// current L2), N from 1K to 64K. full: default plus edge and larger shapes.
inline const std::map<SweepLevel, std::vector<Shape>> kSweeps = [] {
  const std::vector<Shape> standard = {{32768, 1024}, {16384, 2048}, {8192, 4096},
                                       {8192, 5120},  {4096, 8192},  {2048, 16384},
                                       {1024, 32768}, {512, 65536}};
  std::vector<Shape> full = standard;
  for (Shape s : {Shape{1, 4096}, Shape{7, 4097}, Shape{128, 4096}, Shape{1024, 4096},
                  Shape{4097, 4099}, Shape{16384, 12288}, Shape{32768, 8192},
                  Shape{65536, 4096}})
    full.push_back(s);
  return std::map<SweepLevel, std::vector<Shape>>{
      {SweepLevel::quick, {{4096, 4096}, {4096, 8192}}},
      {SweepLevel::standard, standard},
      {SweepLevel::full, full}};
}();

}  // namespace kbench::norm
