// layernorm and layernorm_bwd: float64 references, bytes/flops models, tolerances, sweeps.
//
//   forward:  y  = (x - mean) * rstd * w + b,   rstd = 1 / sqrt(var + eps)
//             mean = mean(x), var = mean((x - mean)^2) (biased), over each row of x[M, N]
//   backward: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * w,
//             xhat = (x - mean) * rstd
//             dw = sum over rows of dy * xhat,   db = sum over rows of dy
// eps = 1e-5 (PyTorch's nn.LayerNorm default). The references take the variance in two
// passes (mean first, then the mean of squared deviations), so rows with a large mean and a
// small spread are exact here too; the kernels must match them.
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

struct RowStats {
  double mean;
  double rstd;
};

RowStats row_stats(const double* x, int64_t n, double eps) {
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += x[j];
  const double mean = sum / static_cast<double>(n);
  double sum_sq = 0;
  for (int64_t j = 0; j < n; ++j) sum_sq += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps)};
}

void layernorm_reference(const ReferenceArgs& a) {
  const int64_t m = a.shape.m, n = a.shape.n;
  const double* x = a.inputs[0]->data();
  const double* w = a.inputs[1]->data();
  const double* b = a.inputs[2]->data();
  double* y = a.outputs[0]->data();
  parallel_for(m, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = x + i * n;
      const RowStats st = row_stats(xr, n, a.eps);
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = (xr[j] - st.mean) * st.rstd * w[j] + b[j];
    }
  });
}

void layernorm_bwd_reference(const ReferenceArgs& a) {
  const int64_t m = a.shape.m, n = a.shape.n;
  const double* dy = a.inputs[0]->data();
  const double* x = a.inputs[1]->data();
  const double* w = a.inputs[2]->data();
  double* dx = a.outputs[0]->data();
  std::vector<double>& dw = *a.outputs[1];
  std::vector<double>& db = *a.outputs[2];
  // dx row by row; dw and db as per-chunk partial sums added in chunk order (deterministic).
  struct Parts {
    std::vector<double> dw, db;
  };
  std::map<int64_t, Parts> parts;  // keyed by first row
  std::mutex parts_mutex;
  parallel_for(m, [&](int64_t begin, int64_t end) {
    Parts part{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = x + i * n;
      const double* dyr = dy + i * n;
      const RowStats st = row_stats(xr, n, a.eps);
      double mean_g = 0, mean_g_xhat = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double g = dyr[j] * w[j];
        mean_g += g;
        mean_g_xhat += g * (xr[j] - st.mean) * st.rstd;
      }
      mean_g /= static_cast<double>(n);
      mean_g_xhat /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j) {
        const double xhat = (xr[j] - st.mean) * st.rstd;
        dx[i * n + j] = st.rstd * (dyr[j] * w[j] - mean_g - xhat * mean_g_xhat);
        part.dw[j] += dyr[j] * xhat;
        part.db[j] += dyr[j];
      }
    }
    std::lock_guard<std::mutex> lock(parts_mutex);
    parts[begin] = std::move(part);
  });
  std::fill(dw.begin(), dw.end(), 0.0);
  std::fill(db.begin(), db.end(), 0.0);
  for (const auto& entry : parts) {
    for (int64_t j = 0; j < n; ++j) {
      dw[j] += entry.second.dw[j];
      db[j] += entry.second.db[j];
    }
  }
}

// y = (x - mean) * rstd * w + b: in fp32 the mean carries an error of ~2^-24 * |mean| (more
// over a long sum), and x - mean inherits it; rstd then magnifies it. In a row of nearly equal
// values (three random values a hair apart happen among 65537 rows of 3) rstd is in the
// hundreds: measured on H100, fp32, 65537x3, one y of -0.02721 came out 3.1e-5 off in the
// naive kernel and both optimized ones alike, 1e-3 relative. So y's absolute tolerance is
// taken per unit of max(1, rstd * |w| * (|x| + |mean|)): a few units for well-spread rows,
// never tighter than before, and as large as the row's conditioning where it is poor.
bool layernorm_atol_scale(const ReferenceArgs& a, size_t, std::vector<double>& scale) {
  const int64_t m = a.shape.m, n = a.shape.n;
  const double* x = a.inputs[0]->data();
  const double* w = a.inputs[1]->data();
  scale.assign(static_cast<size_t>(m * n), 1.0);
  parallel_for(m, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = x + i * n;
      const RowStats st = row_stats(xr, n, a.eps);
      for (int64_t j = 0; j < n; ++j) {
        scale[i * n + j] =
            std::max(1.0, st.rstd * std::fabs(w[j]) * (std::fabs(xr[j]) + std::fabs(st.mean)));
      }
    }
  });
  return true;
}

// dx = rstd * (g - mean(g) - xhat * c) is a difference of terms that can each be far larger
// than dx: in a row of nearly equal values (three random values a hair apart happen among
// 65537 rows) rstd is in the hundreds, and fp32 arithmetic errs by ~1e-7 of the terms, not
// of dx (measured on H100: 1.4e-4 off on a dx of 1.6, both kernels and the naive one alike).
// So dx's absolute tolerance is taken per unit of rstd * (|g| + mean(|g|) + |xhat| *
// mean(|g * xhat|)): a few for well-spread rows. The row means count by the size of what they
// sum, not by their own: an fp32 sum errs by ~2^-24 of its terms however much they cancel. (With
// |mean(g)| in the unit, an all-zero row, rstd = 316, whose mean(g) came out near 0 failed on
// H200, fp16, --values zero-rows: one dx 3.8e-7 off in both staged kernels, where g and mean(g)
// were under 1.2e-5 together; a CPU model of the kernels' fp32 sums with mean(g) forced near 0
// failed 6 rows of 3000 that way, none with mean(|g|), worst at 0.19 of the tolerance.) And
// x - mean inherits the fp32 mean's error, ~2^-24 * |mean|, which dx takes times rstd * c: a
// row offset far from zero (--values offset-rows, mean 256 times the spread) put v1_naive and v3
// on H100 1e-3 relative off on dx ~ 1e-3 in fp32, so the unit also counts rstd * mean(|g *
// xhat|) * |mean|.
bool layernorm_bwd_atol_scale(const ReferenceArgs& a, size_t output, std::vector<double>& scale) {
  if (output != 0) return false;
  const int64_t m = a.shape.m, n = a.shape.n;
  const double* dy = a.inputs[0]->data();
  const double* x = a.inputs[1]->data();
  const double* w = a.inputs[2]->data();
  scale.assign(static_cast<size_t>(m * n), 1.0);
  parallel_for(m, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = x + i * n;
      const double* dyr = dy + i * n;
      const RowStats st = row_stats(xr, n, a.eps);
      double mean_abs_g = 0, mean_abs_g_xhat = 0;
      for (int64_t j = 0; j < n; ++j) {
        mean_abs_g += std::fabs(dyr[j] * w[j]);
        mean_abs_g_xhat += std::fabs(dyr[j] * w[j] * (xr[j] - st.mean) * st.rstd);
      }
      mean_abs_g /= static_cast<double>(n);
      mean_abs_g_xhat /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j) {
        const double xhat = (xr[j] - st.mean) * st.rstd;
        scale[i * n + j] = st.rstd * (std::fabs(dyr[j] * w[j]) + mean_abs_g +
                                      std::fabs(xhat) * mean_abs_g_xhat +
                                      st.rstd * mean_abs_g_xhat * std::fabs(st.mean));
      }
    }
  });
  return true;
}

}  // namespace

KBENCH_REGISTER(layernorm_op) {
  register_op("layernorm")
      .summary("y = (x - mean) * rsqrt(var + eps) * w + b, row-wise over x[M,N]")
      .input(with_edge_values(rows_by_cols("x")))
      .input(cols("w", Init::around_one))
      .input(cols("b", Init::normal))
      .output(rows_by_cols("y"))
      .eps(1e-5)
      .reference(layernorm_reference)
      // reads x (M*N), w and b (2*N), writes y (M*N): (2*M*N + 2*N) elements
      .bytes([](const Shape& s, DType t) { return (2 * mn(s) + 2.0 * s.n) * dtype_size(t); })
      // per element: sum for the mean (1), deviation and its square summed (3), scale by rstd
      // (1), times w plus b (2)
      .flops([](const Shape& s, DType) { return 7 * mn(s); })
      .tolerance([](size_t, DType t, const Shape&) { return rowwise_tolerance(t, 1e-5); })
      .atol_scale(layernorm_atol_scale)
      .sweeps(norm::kSweeps);
}

KBENCH_REGISTER(layernorm_bwd_op) {
  register_op("layernorm_bwd")
      .summary("dx, dw, db of layernorm given dy, x, w (mean and rstd recomputed)")
      .input(rows_by_cols("dy"))
      .input(with_edge_values(rows_by_cols("x")))
      .input(cols("w", Init::around_one))
      .output(rows_by_cols("dx"))
      .output(cols("dw"))
      .output(cols("db"))
      .eps(1e-5)
      .reference(layernorm_bwd_reference)
      .atol_scale(layernorm_bwd_atol_scale)
      // reads dy, x (2*M*N) and w (N), writes dx (M*N), dw and db (2*N): (3*M*N + 3*N)
      .bytes([](const Shape& s, DType t) { return (3 * mn(s) + 3.0 * s.n) * dtype_size(t); })
      // per element: mean and variance (4), g and its two row sums (4), dx from g, mean(g),
      // xhat and mean(g * xhat) (4), xhat (1), dw accumulate (2), db accumulate (1)
      .flops([](const Shape& s, DType) { return 16 * mn(s); })
      .tolerance([](size_t output, DType t, const Shape& s) {
        // dx = rstd * (g - mean(g) - xhat * c) cancels: the absolute floor covers fp32
        // arithmetic, per unit of the terms' size (layernorm_bwd_atol_scale).
        if (output == 0) return rowwise_tolerance(t, 1e-4);
        // dw and db are reductions over the M rows: their error and magnitude grow like
        // sqrt(M), while a dropped row or block partial errs by whole terms (see
        // reduction_tolerance in norm_common.h).
        return reduction_tolerance(t, static_cast<double>(s.m));
      })
      .sweeps(norm::kSweeps);
}

}  // namespace kbench
