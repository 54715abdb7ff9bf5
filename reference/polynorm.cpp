// polynorm, polynorm_bwd, fused_mul_polynorm, fused_mul_polynorm_bwd: float64 references,
// bytes/flops models, tolerances, sweeps.
//
// With N(u) = u * rsqrt(mean(u^2) + eps) over a row and w[3], b[1] scalars:
//   polynorm:            y = w0 * N(x^3) + w1 * N(x^2) + w2 * N(x) + b
//   fused_mul_polynorm:  y = polynorm(x) * m                       (m[M, N] elementwise)
// Backward, per row, with G = dy (fused: dy * m), u_k = x^p_k (p = 3, 2, 1 for w0, w1, w2),
// r_k = rsqrt(mean(u_k^2) + eps), n_k = u_k * r_k and g_k = G * w_k:
//   du_k = r_k * (g_k - n_k * mean(g_k * n_k))          (rmsnorm's backward, once per term)
//   dx   = sum_k du_k * p_k * x^(p_k - 1)
//   dw_k = sum over all rows and columns of G * n_k      db = sum of G   (fp32 outputs)
//   fused only: dm = dy * polynorm(x)
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "harness/parallel.h"
#include "harness/registry.h"
#include "reference/norm_common.h"

namespace kbench {
namespace {

using norm::mn;
using norm::reduction_tolerance;
using norm::rowwise_tolerance;

// Powers p_k of the three terms, in the order of w: w0 scales N(x^3), w1 N(x^2), w2 N(x).
constexpr int kPowers[3] = {3, 2, 1};

// r_k = 1 / sqrt(mean(x^(2 p_k)) + eps) for the three terms of one row.
struct RowNorms {
  double r[3];
};

RowNorms row_norms(const double* x, int64_t n, double eps) {
  double sums[3] = {0, 0, 0};
  for (int64_t j = 0; j < n; ++j) {
    const double x2 = x[j] * x[j];
    const double x4 = x2 * x2;
    sums[0] += x4 * x2;  // (x^3)^2
    sums[1] += x4;       // (x^2)^2
    sums[2] += x2;       // x^2
  }
  RowNorms r;
  for (int k = 0; k < 3; ++k) r.r[k] = 1.0 / std::sqrt(sums[k] / static_cast<double>(n) + eps);
  return r;
}

// x^p for p = 0..3.
double power(double x, int p) {
  double r = 1;
  for (int i = 0; i < p; ++i) r *= x;
  return r;
}

// polynorm(x) of one element, given its row's norms.
double poly_value(double x, const RowNorms& r, const double* w, double b) {
  double y = b;
  for (int k = 0; k < 3; ++k) y += w[k] * power(x, kPowers[k]) * r.r[k];
  return y;
}

// Forward of both ops: m == nullptr for plain polynorm.
void forward(const ReferenceArgs& a, const double* x, const double* m, const double* w,
             double b) {
  const int64_t rows = a.shape.m, n = a.shape.n;
  double* y = a.outputs[0]->data();
  parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = x + i * n;
      const RowNorms r = row_norms(xr, n, a.eps);
      for (int64_t j = 0; j < n; ++j) {
        const double p = poly_value(xr[j], r, w, b);
        y[i * n + j] = m ? p * m[i * n + j] : p;
      }
    }
  });
}

void polynorm_reference(const ReferenceArgs& a) {
  // inputs: x, w, b
  forward(a, a.inputs[0]->data(), nullptr, a.inputs[1]->data(), (*a.inputs[2])[0]);
}

void fused_mul_polynorm_reference(const ReferenceArgs& a) {
  // inputs: x, m, w, b
  forward(a, a.inputs[0]->data(), a.inputs[1]->data(), a.inputs[2]->data(), (*a.inputs[3])[0]);
}

// Backward of both ops. m == nullptr for plain polynorm (then dm == nullptr too and b is
// unused). dw (3) and db (1) are summed as per-chunk partials added in chunk order, so the
// result does not depend on how the rows were split among threads.
struct BwdTensors {
  const double* dy;
  const double* x;
  const double* m;
  const double* w;
  double b;
  double* dx;
  double* dm;
  std::vector<double>* dw;
  std::vector<double>* db;
};

void backward(const ReferenceArgs& a, const BwdTensors& t) {
  const int64_t rows = a.shape.m, n = a.shape.n;
  std::map<int64_t, std::array<double, 4>> parts;  // keyed by first row: dw0, dw1, dw2, db
  std::mutex parts_mutex;
  parallel_for(rows, [&](int64_t begin, int64_t end) {
    std::array<double, 4> part = {0, 0, 0, 0};
    std::vector<double> g(static_cast<size_t>(n));
    for (int64_t i = begin; i < end; ++i) {
      const double* xr = t.x + i * n;
      const double* dyr = t.dy + i * n;
      const RowNorms r = row_norms(xr, n, a.eps);
      for (int64_t j = 0; j < n; ++j) g[j] = t.m ? dyr[j] * t.m[i * n + j] : dyr[j];
      // mean(g_k * n_k) = w_k * r_k * mean(G * x^p_k), and dw_k's share of this row.
      double mean_gn[3];
      for (int k = 0; k < 3; ++k) {
        double sum_gu = 0;
        for (int64_t j = 0; j < n; ++j) sum_gu += g[j] * power(xr[j], kPowers[k]);
        mean_gn[k] = t.w[k] * r.r[k] * sum_gu / static_cast<double>(n);
        part[k] += r.r[k] * sum_gu;
      }
      for (int64_t j = 0; j < n; ++j) {
        double dx = 0;
        for (int k = 0; k < 3; ++k) {
          const int p = kPowers[k];
          const double n_k = power(xr[j], p) * r.r[k];
          const double du = r.r[k] * (g[j] * t.w[k] - n_k * mean_gn[k]);
          dx += du * p * power(xr[j], p - 1);
        }
        t.dx[i * n + j] = dx;
        if (t.dm) t.dm[i * n + j] = dyr[j] * poly_value(xr[j], r, t.w, t.b);
        part[3] += g[j];
      }
    }
    std::lock_guard<std::mutex> lock(parts_mutex);
    parts[begin] = part;
  });
  std::array<double, 4> total = {0, 0, 0, 0};
  for (const auto& entry : parts)
    for (int k = 0; k < 4; ++k) total[k] += entry.second[k];
  for (int k = 0; k < 3; ++k) (*t.dw)[k] = total[k];
  (*t.db)[0] = total[3];
}

void polynorm_bwd_reference(const ReferenceArgs& a) {
  // inputs: dy, x, w; outputs: dx, dw, db
  backward(a, BwdTensors{a.inputs[0]->data(), a.inputs[1]->data(), nullptr, a.inputs[2]->data(),
                         0.0, a.outputs[0]->data(), nullptr, a.outputs[1], a.outputs[2]});
}

void fused_mul_polynorm_bwd_reference(const ReferenceArgs& a) {
  // inputs: dy, x, m, w, b; outputs: dx, dm, dw, db
  backward(a, BwdTensors{a.inputs[0]->data(), a.inputs[1]->data(), a.inputs[2]->data(),
                         a.inputs[3]->data(), (*a.inputs[4])[0], a.outputs[0]->data(),
                         a.outputs[1]->data(), a.outputs[2], a.outputs[3]});
}

// Forward outputs (and dm = dy * polynorm(x)): fp32 arithmetic rounded once. y's terms are
// normalized, but |N(x^3)| reaches ~30 for a 5-sigma x and each norm carries rsqrt's 2 ulp,
// so where the terms cancel (or dy, m scale y up) fp32 errs by up to ~1e-5 in absolute
// terms: an absolute floor of 2e-5 (a host emulation of the kernels' fp32 math with tree
// sums and 2-ulp rsqrt stayed under a third of this tolerance). A wrong norm, power or
// missing term errs by 1e-2 or more.
Tolerance forward_tolerance(DType t) { return rowwise_tolerance(t, 2e-5); }

// dx = sum_k p_k w_k r_k x^(p_k-1) (G - x^p_k rho_k) cancels inside each bracket (N = 1 rows
// cancel almost fully); the kernels form the x rho_1 bracket with one FMA (and expand the
// other two, which cancel only where their weights are small: polynorm_math.h), so the
// absolute error stays ~1e-7 of the bracket's terms (<= ~300 for |x| ~ 0.01 in an N = 1 row):
// the same absolute floor as rmsnorm_bwd's dx covers it.
Tolerance dx_tolerance(DType t) { return rowwise_tolerance(t, 1e-4); }

// dw_k and db each sum M * N products of unit size (n_k is normalized per row, G is dy or
// dy * m with unit variance) over ALL rows and columns: a scalar gradient, so its magnitude
// and the fp32 error of its sum grow like sqrt(M * N) (see norm_common.h). A dropped row or
// block partial errs by whole terms, far above the tolerance. The outputs are fp32 whatever
// the run's dtype (see scalar_grad), so their relative tolerance is fp32's.
Tolerance scalar_grad_tolerance(DType, const Shape& s) {
  return reduction_tolerance(DType::f32, mn(s));
}

// dw and db are fp32 outputs: their magnitude grows like sqrt(M * N), about 2.3e4 at the GPU
// tests' 65537 x 8193, where a 3-sigma value would overflow fp16 (65504); fp32 also keeps the
// sum's bits instead of rounding a 5e8-term reduction to 8 or 11 of them. (Weight gradients
// of 16-bit models are usually accumulated in fp32 for the same reasons.)
TensorSpec scalar_grad(std::string name, int64_t count) {
  TensorSpec t = scalars(std::move(name), count);
  t.type = TensorType::f32;
  return t;
}

}  // namespace

KBENCH_REGISTER(polynorm_op) {
  register_op("polynorm")
      .summary("y = w0*N(x^3) + w1*N(x^2) + w2*N(x) + b, N(u) = u*rsqrt(mean(u^2)+eps) per row")
      .input(with_edge_values(rows_by_cols("x")))
      .input(scalars("w", 3, Init::around_one))
      .input(scalars("b", 1))
      .output(rows_by_cols("y"))
      .eps(1e-6)
      .reference(polynorm_reference)
      // reads x (M*N), w (3), b (1); writes y (M*N): (2*M*N + 4) elements
      .bytes([](const Shape& s, DType t) { return (2 * mn(s) + 4) * dtype_size(t); })
      // per element: x^2, x^3 (2); sums of x^2, x^4, x^6 (1 + 2 + 2); y by Horner, 3 FMAs (6)
      .flops([](const Shape& s, DType) { return 13 * mn(s); })
      .tolerance([](size_t, DType t, const Shape&) { return forward_tolerance(t); })
      .sweeps(norm::kSweeps);
}

KBENCH_REGISTER(fused_mul_polynorm_op) {
  register_op("fused_mul_polynorm")
      .summary("y = polynorm(x) * m, elementwise m[M,N]")
      .input(with_edge_values(rows_by_cols("x")))
      .input(rows_by_cols("m"))
      .input(scalars("w", 3, Init::around_one))
      .input(scalars("b", 1))
      .output(rows_by_cols("y"))
      .eps(1e-6)
      .reference(fused_mul_polynorm_reference)
      // reads x, m (2*M*N), w (3), b (1); writes y (M*N): (3*M*N + 4) elements
      .bytes([](const Shape& s, DType t) { return (3 * mn(s) + 4) * dtype_size(t); })
      // polynorm's 13 per element, and the product with m
      .flops([](const Shape& s, DType) { return 14 * mn(s); })
      .tolerance([](size_t, DType t, const Shape&) { return forward_tolerance(t); })
      .sweeps(norm::kSweeps);
}

KBENCH_REGISTER(polynorm_bwd_op) {
  register_op("polynorm_bwd")
      .summary("dx, dw, db of polynorm given dy, x, w (row norms recomputed)")
      .input(rows_by_cols("dy"))
      .input(with_edge_values(rows_by_cols("x")))
      .input(scalars("w", 3, Init::around_one))
      .output(rows_by_cols("dx"))
      .output(scalar_grad("dw", 3))
      .output(scalar_grad("db", 1))
      .eps(1e-6)
      .reference(polynorm_bwd_reference)
      // reads dy, x (2*M*N) and w (3); writes dx (M*N); writes dw, db (4 fp32)
      .bytes([](const Shape& s, DType t) { return (3 * mn(s) + 3) * dtype_size(t) + 4 * 4; })
      // per element: x^2, x^3 (2); sums of x^2, x^4, x^6 (5), of G*x^p (6) and of G (1);
      // dx: x^2, x^3 (2), three brackets G - x^p*rho (6), their weights and sum (7)
      .flops([](const Shape& s, DType) { return 29 * mn(s); })
      .tolerance([](size_t output, DType t, const Shape& s) {
        return output == 0 ? dx_tolerance(t) : scalar_grad_tolerance(t, s);
      })
      .sweeps(norm::kSweeps);
}

KBENCH_REGISTER(fused_mul_polynorm_bwd_op) {
  register_op("fused_mul_polynorm_bwd")
      .summary("dx, dm, dw, db of fused_mul_polynorm given dy, x, m, w, b")
      .input(rows_by_cols("dy"))
      .input(with_edge_values(rows_by_cols("x")))
      .input(rows_by_cols("m"))
      .input(scalars("w", 3, Init::around_one))
      .input(scalars("b", 1))  // dm = dy * polynorm(x) needs b
      .output(rows_by_cols("dx"))
      .output(rows_by_cols("dm"))
      .output(scalar_grad("dw", 3))
      .output(scalar_grad("db", 1))
      .eps(1e-6)
      .reference(fused_mul_polynorm_bwd_reference)
      // reads dy, x, m (3*M*N), w (3), b (1); writes dx, dm (2*M*N); writes dw, db (4 fp32)
      .bytes([](const Shape& s, DType t) { return (5 * mn(s) + 4) * dtype_size(t) + 4 * 4; })
      // polynorm_bwd's 29 per element, G = dy * m (1), dm = dy * polynorm(x) (7)
      .flops([](const Shape& s, DType) { return 37 * mn(s); })
      .tolerance([](size_t output, DType t, const Shape& s) {
        if (output == 0) return dx_tolerance(t);
        if (output == 1) return forward_tolerance(t);  // dm = dy * polynorm(x): as the forward
        return scalar_grad_tolerance(t, s);
      })
      .sweeps(norm::kSweeps);
}

}  // namespace kbench
