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
#include "reference/norm_common.h"

namespace kbench {
namespace {

using norm::mn;
using norm::reduction_tolerance;
using norm::rowwise_tolerance;

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

}  // namespace

KBENCH_REGISTER(rmsnorm_op) {
  register_op("rmsnorm")
      .summary("y = x * rsqrt(mean(x^2) + eps) * w, row-wise over x[M,N]")
      .input(with_edge_values(rows_by_cols("x")))
      .input(cols("w", Init::around_one))
      .output(rows_by_cols("y"))
      .eps(1e-6)
      .reference(rmsnorm_reference)
      // reads x (M*N) and w (N), writes y (M*N): (2*M*N + N) elements
      .bytes([](const Shape& s, DType t) { return (2 * mn(s) + s.n) * dtype_size(t); })
      // x^2 and its sum (2), scale by rstd and w (2) per element
      .flops([](const Shape& s, DType) { return 4 * mn(s); })
      .tolerance([](size_t, DType t, const Shape&) { return rowwise_tolerance(t, 1e-5); })
      .sweeps(norm::kSweeps);
}

KBENCH_REGISTER(rmsnorm_bwd_op) {
  register_op("rmsnorm_bwd")
      .summary("dx, dw of rmsnorm given dy, x, w (rstd recomputed)")
      .input(rows_by_cols("dy"))
      .input(with_edge_values(rows_by_cols("x")))
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
        // dw sums M terms (see norm_common.h).
        return output == 0 ? rowwise_tolerance(t, 1e-4)
                           : reduction_tolerance(t, static_cast<double>(s.m));
      })
      .sweeps(norm::kSweeps);
}

}  // namespace kbench
