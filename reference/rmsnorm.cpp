// rmsnorm and rmsnorm_bwd: float64 references, bytes/flops models, tolerances, sweeps.
//
//   forward:  y  = x * rstd * w,            rstd = 1 / sqrt(mean(x^2) + eps)
//   backward: dx = rstd * (g - xhat * mean(g * xhat)),  g = dy * w, xhat = x * rstd
//             dw = sum over rows of dy * xhat
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "harness/parallel.h"
#include "harness/registry.h"

namespace kbench {
namespace {

double row_rstd(const double* x, int64_t n, double eps) {
  double sum_sq = 0;
  for (int64_t j = 0; j < n; ++j) sum_sq += x[j] * x[j];
  return 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps);
}

void rmsnorm_reference(const ReferenceArgs& a) {
  const int64_t m = a.shape.m, n = a.shape.n;
  const double* x = a.inputs[0]->data();
  const double* w = a.inputs[1]->data();
  double* y = a.outputs[0]->data();
  parallel_for(m, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = x + i * n;
      const double rstd = row_rstd(xr, n, a.eps);
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = xr[j] * rstd * w[j];
    }
  });
}

void rmsnorm_bwd_reference(const ReferenceArgs& a) {
  const int64_t m = a.shape.m, n = a.shape.n;
  const double* dy = a.inputs[0]->data();
  const double* x = a.inputs[1]->data();
  const double* w = a.inputs[2]->data();
  double* dx = a.outputs[0]->data();
  std::vector<double>& dw = *a.outputs[1];
  // dx row by row; dw as per-chunk partial sums added in chunk order (deterministic).
  std::map<int64_t, std::vector<double>> dw_parts;  // keyed by first row
  std::mutex parts_mutex;
  parallel_for(m, [&](int64_t begin, int64_t end) {
    std::vector<double> dw_part(n, 0.0);
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = x + i * n;
      const double* dyr = dy + i * n;
      const double rstd = row_rstd(xr, n, a.eps);
      double mean_g_xhat = 0;
      for (int64_t j = 0; j < n; ++j) mean_g_xhat += dyr[j] * w[j] * xr[j] * rstd;
      mean_g_xhat /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j) {
        const double xhat = xr[j] * rstd;
        dx[i * n + j] = rstd * (dyr[j] * w[j] - xhat * mean_g_xhat);
        dw_part[j] += dyr[j] * xhat;
      }
    }
    std::lock_guard<std::mutex> lock(parts_mutex);
    dw_parts[begin] = std::move(dw_part);
  });
  std::fill(dw.begin(), dw.end(), 0.0);
  for (const auto& [first_row, part] : dw_parts)
    for (int64_t j = 0; j < n; ++j) dw[j] += part[j];
}

double mn(const Shape& s) { return static_cast<double>(s.m) * static_cast<double>(s.n); }

// Outputs of a row-wise op are computed in fp32 and rounded once to the dtype: allow 2.5
// units of roundoff (one for the final rounding, the rest for fp32 arithmetic and kernels
// that round an intermediate such as xhat), plus a small absolute floor for values near 0.
Tolerance rowwise_tolerance(DType t, double atol) {
  return Tolerance{atol, 2.5 * dtype_epsilon(t) + 1e-5};
}

// dw sums M terms of unit size with random signs, so its magnitude grows like sqrt(M); an
// fp32 accumulation over M terms errs by about 2^-24 * sqrt(M) * |partial sum| for pairwise
// or blocked sums and more for a long sequential sum. The absolute tolerance therefore
// scales with sqrt(M) (1e-4 per unit of typical magnitude, generous for fp32) while a wrong
// kernel (a dropped row, a missing block partial) errs by whole terms, far above it.
Tolerance weight_grad_tolerance(DType t, const Shape& s) {
  return Tolerance{1e-4 * std::sqrt(static_cast<double>(s.m)) + 1e-5,
                   2.5 * dtype_epsilon(t) + 1e-5};
}

const std::vector<Shape> kQuick = {{4096, 4096}, {4096, 8192}};
// M*N = 32M elements (64 MiB per bf16 tensor, above any current L2), N from 1K to 64K.
const std::vector<Shape> kDefault = {{32768, 1024}, {16384, 2048}, {8192, 4096},
                                     {8192, 5120},  {4096, 8192},  {2048, 16384},
                                     {1024, 32768}, {512, 65536}};
const std::vector<Shape> kFull = [] {
  std::vector<Shape> shapes = kDefault;
  for (Shape s : {Shape{1, 4096}, Shape{7, 4097}, Shape{128, 4096}, Shape{1024, 4096},
                  Shape{4097, 4099}, Shape{16384, 12288}, Shape{32768, 8192},
                  Shape{65536, 4096}})
    shapes.push_back(s);
  return shapes;
}();

}  // namespace

KBENCH_REGISTER(rmsnorm_op) {
  register_op("rmsnorm")
      .summary("y = x * rsqrt(mean(x^2) + eps) * w, row-wise over x[M,N]")
      .input(rows_by_cols("x"))
      .input(cols("w", Init::around_one))
      .output(rows_by_cols("y"))
      .eps(1e-6)
      .reference(rmsnorm_reference)
      // reads x (M*N) and w (N), writes y (M*N): (2*M*N + N) elements
      .bytes([](const Shape& s, DType t) { return (2 * mn(s) + s.n) * dtype_size(t); })
      // x^2 and its sum (2), scale by rstd and w (2) per element
      .flops([](const Shape& s, DType) { return 4 * mn(s); })
      .tolerance([](size_t, DType t, const Shape&) { return rowwise_tolerance(t, 1e-5); })
      .sweep(SweepLevel::quick, kQuick)
      .sweep(SweepLevel::standard, kDefault)
      .sweep(SweepLevel::full, kFull);
}

KBENCH_REGISTER(rmsnorm_bwd_op) {
  register_op("rmsnorm_bwd")
      .summary("dx, dw of rmsnorm given dy, x, w (rstd recomputed)")
      .input(rows_by_cols("dy"))
      .input(rows_by_cols("x"))
      .input(cols("w", Init::around_one))
      .output(rows_by_cols("dx"))
      .output(cols("dw"))
      .eps(1e-6)
      .reference(rmsnorm_bwd_reference)
      // reads dy, x (2*M*N) and w (N), writes dx (M*N) and dw (N)
      .bytes([](const Shape& s, DType t) { return (3 * mn(s) + 2 * s.n) * dtype_size(t); })
      // rstd (2), g and g*xhat sum (3), dx (3), dw accumulate (2) per element
      .flops([](const Shape& s, DType) { return 10 * mn(s); })
      .tolerance([](size_t output, DType t, const Shape& s) {
        // dx = rstd * (g - xhat * c) cancels: the absolute floor covers fp32 arithmetic on
        // terms of unit size.
        return output == 0 ? rowwise_tolerance(t, 1e-4) : weight_grad_tolerance(t, s);
      })
      .sweep(SweepLevel::quick, kQuick)
      .sweep(SweepLevel::standard, kDefault)
      .sweep(SweepLevel::full, kFull);
}

}  // namespace kbench
