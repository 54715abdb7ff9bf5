// layernorm's float64 references against closed forms, and the backward against central
// finite differences of the forward (the definition of a gradient).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "harness/check.h"
#include "harness/registry.h"
#include "tests/unit/reference_test_support.h"

namespace kbench {
namespace {

using reference_tests::op;
using reference_tests::random_values;

std::vector<double> forward(const Shape& s, const std::vector<double>& x,
                            const std::vector<double>& w, const std::vector<double>& b,
                            double eps) {
  std::vector<double> y(x.size());
  ReferenceArgs a{s, eps, {&x, &w, &b}, {&y}};
  op("layernorm").reference(a);
  return y;
}

struct Grads {
  std::vector<double> dx, dw, db;
};

Grads backward(const Shape& s, const std::vector<double>& dy, const std::vector<double>& x,
               const std::vector<double>& w, double eps) {
  Grads g{std::vector<double>(x.size()), std::vector<double>(w.size()),
          std::vector<double>(w.size())};
  ReferenceArgs a{s, eps, {&dy, &x, &w}, {&g.dx, &g.dw, &g.db}};
  op("layernorm_bwd").reference(a);
  return g;
}

TEST(LayernormReference, OpsAreRegisteredWithTheirTensors) {
  const OpDescriptor& fwd = op("layernorm");
  ASSERT_EQ(fwd.inputs.size(), 3u);
  EXPECT_EQ(fwd.inputs[0].name, "x");
  EXPECT_TRUE(fwd.inputs[0].edge_values);
  EXPECT_EQ(fwd.inputs[1].init, Init::around_one);
  EXPECT_EQ(fwd.inputs[2].name, "b");
  ASSERT_EQ(fwd.outputs.size(), 1u);
  EXPECT_DOUBLE_EQ(fwd.eps, 1e-5);
  const OpDescriptor& bwd = op("layernorm_bwd");
  ASSERT_EQ(bwd.inputs.size(), 3u);
  EXPECT_TRUE(bwd.inputs[1].edge_values);
  ASSERT_EQ(bwd.outputs.size(), 3u);
  EXPECT_EQ(bwd.outputs[1].name, "dw");
  EXPECT_EQ(bwd.outputs[2].name, "db");
}

TEST(LayernormReference, ForwardAtolScaleFollowsTheRowsConditioning) {
  // Row 0 is well spread: no element's atol grows past a few units. Row 1's values lie 1e-4
  // apart around 1: rstd = 1 / sqrt(var + eps) ~ 316 (eps dominates), so an fp32 mean's
  // rounding is magnified that much, and so is the atol (rstd * |w| * (|x| + |mean|) ~ 632).
  const Shape s{2, 3};
  std::vector<double> x = {-1.0, 0.5, 1.5, 1.0, 1.0001, 0.9999};
  std::vector<double> w = {1, 1, 1}, b = {0, 0, 0};
  std::vector<double> y(x.size());
  ReferenceArgs a{s, 1e-5, {&x, &w, &b}, {&y}};
  std::vector<double> scale;
  ASSERT_TRUE(op("layernorm").atol_scale(a, 0, scale));
  ASSERT_EQ(scale.size(), x.size());
  for (int j = 0; j < 3; ++j) {
    EXPECT_GE(scale[j], 1.0);
    EXPECT_LT(scale[j], 4.0);
    EXPECT_GT(scale[3 + j], 600.0);
  }
}

TEST(LayernormReference, ConstantRowGivesTheBias) {
  // x = c everywhere: x - mean = 0, so y = b whatever c, w and eps are.
  const Shape s{2, 5};
  std::vector<double> x = {3, 3, 3, 3, 3, -7, -7, -7, -7, -7};
  std::vector<double> w = {1, 2, 3, 4, 5}, b = {0.5, -1, 2, 0, 9};
  const std::vector<double> y = forward(s, x, w, b, 1e-5);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(y[i], b[i % 5]) << i;
}

TEST(LayernormReference, HandComputedRow) {
  // x = (1, 2, 3, 6): mean 3, deviations (-2, -1, 0, 3), var = 14 / 4 = 3.5; with eps = 0.5
  // rstd = 1 / sqrt(4) = 1/2, so xhat = (-1, -0.5, 0, 1.5).
  const Shape s{1, 4};
  std::vector<double> x = {1, 2, 3, 6}, w = {1, 2, 3, 4}, b = {0, 1, 0, -1};
  const std::vector<double> y = forward(s, x, w, b, 0.5);
  EXPECT_DOUBLE_EQ(y[0], -1.0);
  EXPECT_DOUBLE_EQ(y[1], 0.0);
  EXPECT_DOUBLE_EQ(y[2], 0.0);
  EXPECT_DOUBLE_EQ(y[3], 5.0);
}

TEST(LayernormReference, LargeMeanSmallSpreadIsExact) {
  // A shifted row normalizes like the unshifted one: the variance is taken around the mean,
  // not as E[x^2] - mean^2 (which would lose the spread of 1 next to 1e16).
  const Shape s{1, 4};
  std::vector<double> x = {1, 2, 3, 6}, shifted = {1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 6};
  std::vector<double> w(4, 1.0), b(4, 0.0);
  const std::vector<double> y = forward(s, x, w, b, 1e-5);
  const std::vector<double> ys = forward(s, shifted, w, b, 1e-5);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(ys[j], y[j], 1e-12) << j;
}

TEST(LayernormReference, OutputHasZeroMeanAndUnitVarianceBeforeTheAffine) {
  const Shape s{3, 64};
  std::vector<double> x = random_values(192, 7, 5.0, 3.0), w(64, 1.0), b(64, 0.0);
  const std::vector<double> y = forward(s, x, w, b, 0.0);
  for (int i = 0; i < 3; ++i) {
    double sum = 0, sum_sq = 0;
    for (int j = 0; j < 64; ++j) sum += y[i * 64 + j];
    for (int j = 0; j < 64; ++j) sum_sq += y[i * 64 + j] * y[i * 64 + j];
    EXPECT_NEAR(sum / 64, 0.0, 1e-12);
    EXPECT_NEAR(sum_sq / 64, 1.0, 1e-12);
  }
}

TEST(LayernormBwdReference, ClosedFormsForOneColumnAndConstantRows) {
  // N = 1: y = b whatever x, so dx = 0, dw = sum dy * 0 = 0 and db = sum dy.
  {
    const Shape s{3, 1};
    std::vector<double> dy = {1, -2, 4}, x = {5, 6, 7}, w = {2};
    const Grads g = backward(s, dy, x, w, 1e-5);
    for (double v : g.dx) EXPECT_EQ(v, 0.0);
    EXPECT_EQ(g.dw[0], 0.0);
    EXPECT_DOUBLE_EQ(g.db[0], 3.0);
  }
  // Constant rows (xhat = 0, rstd = 1/sqrt(eps)): dx = rstd * (g - mean(g)), dw = 0.
  {
    const Shape s{1, 2};
    std::vector<double> dy = {1, 3}, x = {4, 4}, w = {1, 1};
    const Grads g = backward(s, dy, x, w, 0.25);
    EXPECT_DOUBLE_EQ(g.dx[0], 2.0 * (1.0 - 2.0));
    EXPECT_DOUBLE_EQ(g.dx[1], 2.0 * (3.0 - 2.0));
    EXPECT_EQ(g.dw[0], 0.0);
    EXPECT_EQ(g.dw[1], 0.0);
    EXPECT_DOUBLE_EQ(g.db[0], 1.0);
    EXPECT_DOUBLE_EQ(g.db[1], 3.0);
  }
}

// L = sum(dy * y(x, w, b)): dL/dx, dL/dw and dL/db by central differences match the backward
// reference.
TEST(LayernormBwdReference, MatchesFiniteDifferencesOfTheForward) {
  const Shape s{3, 7};
  const double eps = 1e-3;
  std::vector<double> x = random_values(21, 1, 0.5, 2.0), w = random_values(7, 2, 1.0),
                      b = random_values(7, 8), dy = random_values(21, 3);
  const Grads g = backward(s, dy, x, w, eps);

  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv,
                  const std::vector<double>& bv) {
    const std::vector<double> y = forward(s, xv, wv, bv, eps);
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
    return l;
  };
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    EXPECT_NEAR(g.dx[i], (loss(xp, w, b) - loss(xm, w, b)) / (2 * h), 1e-7) << "dx[" << i << "]";
  }
  for (size_t j = 0; j < w.size(); ++j) {
    auto wp = w, wm = w;
    wp[j] += h;
    wm[j] -= h;
    EXPECT_NEAR(g.dw[j], (loss(x, wp, b) - loss(x, wm, b)) / (2 * h), 1e-7) << "dw[" << j << "]";
    auto bp = b, bm = b;
    bp[j] += h;
    bm[j] -= h;
    EXPECT_NEAR(g.db[j], (loss(x, w, bp) - loss(x, w, bm)) / (2 * h), 1e-7) << "db[" << j << "]";
  }
}

TEST(LayernormBwdReference, DxOfEveryRowSumsToZero) {
  // y is invariant to adding a constant to a row of x, so each row of dx sums to 0.
  const Shape s{4, 33};
  std::vector<double> x = random_values(132, 11, -3.0), w = random_values(33, 12, 1.0),
                      dy = random_values(132, 13);
  const Grads g = backward(s, dy, x, w, 1e-5);
  for (int i = 0; i < 4; ++i) {
    double sum = 0;
    for (int j = 0; j < 33; ++j) sum += g.dx[i * 33 + j];
    EXPECT_NEAR(sum, 0.0, 1e-10) << "row " << i;
  }
}

// dx of one row as a kernel computes it: fp32 sums in column order (drop_last leaves the last
// column out of them, a kernel bug), dx = rstd * ((g - mean(g)) - (x - mean) * c).
void fp32_dx_row(const double* x, const double* dy, const double* w, int n, double eps,
                 bool drop_last, float* dx, float* mean_g_out = nullptr) {
  const int summed = drop_last ? n - 1 : n;
  float sum_x = 0;
  for (int j = 0; j < summed; ++j) sum_x += static_cast<float>(x[j]);
  const float mean = sum_x / n;
  float sum_sq = 0, sum_g = 0, sum_gxc = 0;
  for (int j = 0; j < summed; ++j) {
    const float xc = static_cast<float>(x[j]) - mean;
    const float g = static_cast<float>(dy[j]) * static_cast<float>(w[j]);
    sum_sq += xc * xc;
    sum_g += g;
    sum_gxc += g * xc;
  }
  const float rstd = 1.f / std::sqrt(sum_sq / n + static_cast<float>(eps));
  const float mean_g = sum_g / n, c = rstd * rstd * (sum_gxc / n);
  for (int j = 0; j < n; ++j) {
    const float xc = static_cast<float>(x[j]) - mean;
    const float g = static_cast<float>(dy[j]) * static_cast<float>(w[j]);
    dx[j] = rstd * ((g - mean_g) - xc * c);
  }
  if (mean_g_out) *mean_g_out = mean_g;
}

TEST(LayernormBwdReference, DxToleranceAdmitsFp32SumsThatCancel) {
  // Row 0 is all zero (rstd = 1 / sqrt(eps) ~ 316) and its dy pairs each value with its
  // negation, so mean(g) is 0 and dy[0] = 0 gives dx[0] = 0; an fp32 sum of the pairs still
  // errs by ~2^-24 of its terms, which rstd magnifies. The tolerance must admit that (it did not
  // when dx's unit counted |mean(g)| rather than mean(|g|): kbench check failed a correct kernel
  // on H200 so). Row 1 is random; a kernel that leaves a column out of its sums must fail.
  const int n = 256;
  const Shape s{2, n};
  std::vector<double> x(2 * n, 0.0), w(n, 1.0), dy(2 * n, 0.0);
  const std::vector<double> v = random_values(n / 2 - 1, 21);
  for (int k = 0; k < n / 2 - 1; ++k) {
    dy[1 + 2 * k] = v[k];
    dy[2 + 2 * k] = -v[k];
  }
  std::shuffle(dy.begin() + 1, dy.begin() + n, std::mt19937_64(22));
  const std::vector<double> x1 = random_values(n, 23), dy1 = random_values(n, 24);
  std::copy(x1.begin(), x1.end(), x.begin() + n);
  std::copy(dy1.begin(), dy1.end(), dy.begin() + n);

  const Grads g = backward(s, dy, x, w, 1e-5);
  const OpDescriptor& bwd = op("layernorm_bwd");
  std::vector<double> scale;
  ReferenceArgs a{s, 1e-5, {&dy, &x, &w}, {}};
  ASSERT_TRUE(bwd.atol_scale(a, 0, scale));
  const Tolerance tol = bwd.tolerance(0, DType::f32, s);

  std::vector<float> dx(2 * n);
  float mean_g0 = 0;
  fp32_dx_row(x.data(), dy.data(), w.data(), n, 1e-5, false, dx.data(), &mean_g0);
  fp32_dx_row(x.data() + n, dy.data() + n, w.data(), n, 1e-5, false, dx.data() + n);
  ASSERT_NE(mean_g0, 0.f) << "the fp32 sum of row 0 came out exact: nothing to admit";
  EXPECT_NE(dx[0], 0.f);
  EXPECT_TRUE(check_output(dx.data(), DType::f32, g.dx, tol, &scale).pass);

  fp32_dx_row(x.data() + n, dy.data() + n, w.data(), n, 1e-5, true, dx.data() + n);
  EXPECT_FALSE(check_output(dx.data(), DType::f32, g.dx, tol, &scale).pass);
}

TEST(LayernormBwdReference, GradientsAreDeterministicAcrossRuns) {
  const Shape s{1000, 3};
  std::vector<double> x = random_values(3000, 4), w = random_values(3, 5, 1.0),
                      dy = random_values(3000, 6);
  const Grads g1 = backward(s, dy, x, w, 1e-5);
  const Grads g2 = backward(s, dy, x, w, 1e-5);
  EXPECT_EQ(g1.dw, g2.dw);
  EXPECT_EQ(g1.db, g2.db);
}

TEST(LayernormModels, BytesCountEachTensorOnceAndTolerancesScale) {
  const Shape s{4096, 8192};
  EXPECT_DOUBLE_EQ(op("layernorm").bytes(s, DType::bf16), (2.0 * 4096 * 8192 + 2 * 8192) * 2);
  EXPECT_DOUBLE_EQ(op("layernorm_bwd").bytes(s, DType::f32), (3.0 * 4096 * 8192 + 3 * 8192) * 4);
  EXPECT_GT(op("layernorm").flops(s, DType::bf16), 0);
  EXPECT_GT(op("layernorm_bwd").flops(s, DType::bf16), op("layernorm").flops(s, DType::bf16));
  // Looser for narrower types; the dw and db tolerances grow with M, dx's does not.
  const OpDescriptor& bwd = op("layernorm_bwd");
  const OpDescriptor& fwd = op("layernorm");
  EXPECT_LT(fwd.tolerance(0, DType::f32, s).rtol, fwd.tolerance(0, DType::f16, s).rtol);
  EXPECT_LT(fwd.tolerance(0, DType::f16, s).rtol, fwd.tolerance(0, DType::bf16, s).rtol);
  const Shape few_rows{16, 8}, many_rows{65536, 8};
  for (size_t out : {1u, 2u})
    EXPECT_LT(bwd.tolerance(out, DType::f32, few_rows).atol,
              bwd.tolerance(out, DType::f32, many_rows).atol);
  EXPECT_EQ(bwd.tolerance(0, DType::f32, few_rows).atol,
            bwd.tolerance(0, DType::f32, many_rows).atol);
}

}  // namespace
}  // namespace kbench
