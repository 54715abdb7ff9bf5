// polynorm's and fused_mul_polynorm's float64 references against closed forms, and both
// backwards against central finite differences of their forwards (the definition of a
// gradient).
#include <gtest/gtest.h>

#include <cmath>

#include "harness/registry.h"
#include "tests/unit/reference_test_support.h"

namespace kbench {
namespace {

using reference_tests::op;
using reference_tests::random_values;
using Vec = std::vector<double>;

Vec polynorm(const Shape& s, const Vec& x, const Vec& w, const Vec& b, double eps) {
  Vec y(x.size());
  op("polynorm").reference(ReferenceArgs{s, eps, {&x, &w, &b}, {&y}});
  return y;
}

Vec fused_mul_polynorm(const Shape& s, const Vec& x, const Vec& m, const Vec& w, const Vec& b,
                       double eps) {
  Vec y(x.size());
  op("fused_mul_polynorm").reference(ReferenceArgs{s, eps, {&x, &m, &w, &b}, {&y}});
  return y;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central difference of f at v[i].
template <class F>
double central_difference(F f, Vec v, size_t i, double h) {
  const double v0 = v[i];
  v[i] = v0 + h;
  const double up = f(v);
  v[i] = v0 - h;
  const double down = f(v);
  return (up - down) / (2 * h);
}

TEST(PolynormReference, ConstantPositiveRowGivesSumOfWeightsPlusBias) {
  // x = c > 0: every u_k = c^p is constant, so N(u_k) = c^p / sqrt(c^2p + eps) ~ 1.
  const Shape s{2, 5};
  const Vec x(10, 3.0), w = {0.5, 2.0, -1.5}, b = {0.25};
  const double eps = 1e-6;
  const double exact = w[0] * 27 / std::sqrt(729 + eps) + w[1] * 9 / std::sqrt(81 + eps) +
                       w[2] * 3 / std::sqrt(9 + eps) + b[0];
  for (double y : polynorm(s, x, w, b, eps)) {
    EXPECT_NEAR(y, exact, 1e-12);
    EXPECT_NEAR(y, w[0] + w[1] + w[2] + b[0], 1e-6);
  }
}

TEST(PolynormReference, ConstantNegativeRowFlipsOddTerms) {
  // x = -c: N(x^3) = N(x) = -1, N(x^2) = +1.
  const Shape s{1, 4};
  const Vec x(4, -2.0), w = {0.5, 2.0, -1.5}, b = {0.25};
  for (double y : polynorm(s, x, w, b, 1e-6)) EXPECT_NEAR(y, -w[0] + w[1] - w[2] + b[0], 1e-6);
}

TEST(PolynormReference, ZeroRowGivesBiasThanksToEps) {
  const Shape s{1, 4};
  const Vec x(4, 0.0), w = {1, 2, 3}, b = {-0.75};
  for (double y : polynorm(s, x, w, b, 1e-6)) EXPECT_EQ(y, -0.75);
}

TEST(PolynormReference, HandComputedRows) {
  const Vec w = {0.5, 2.0, -1.5}, b = {0.25};
  {
    // x = (1, -1), eps = 3: mean(x^2) = mean(x^4) = mean(x^6) = 1, every r_k = 1/2.
    const Vec y = polynorm({1, 2}, {1, -1}, w, b, 3.0);
    EXPECT_DOUBLE_EQ(y[0], (w[0] + w[1] + w[2]) / 2 + b[0]);
    EXPECT_DOUBLE_EQ(y[1], (-w[0] + w[1] - w[2]) / 2 + b[0]);
  }
  {
    // x = (0, 2), eps = 0: mean x^2 = 2, x^4 = 8, x^6 = 32, so at x = 2:
    // 8/sqrt(32) = 4/sqrt(8) = 2/sqrt(2) = sqrt(2); at x = 0 only b remains.
    const Vec y = polynorm({1, 2}, {0, 2}, w, b, 0.0);
    EXPECT_DOUBLE_EQ(y[0], b[0]);
    EXPECT_NEAR(y[1], std::sqrt(2.0) * (w[0] + w[1] + w[2]) + b[0], 1e-14);
  }
}

TEST(PolynormReference, RowsAreIndependent) {
  // Each row is normalized by its own statistics: scaling one row leaves the other alone.
  const Shape s{2, 6};
  Vec x = random_values(12, 7), w = {1.1, 0.9, 1.0}, b = {0.3};
  const Vec y1 = polynorm(s, x, w, b, 0.0);
  for (int j = 6; j < 12; ++j) x[j] *= 100;
  const Vec y2 = polynorm(s, x, w, b, 0.0);
  for (int j = 0; j < 6; ++j) EXPECT_EQ(y1[j], y2[j]);
  for (int j = 6; j < 12; ++j) EXPECT_NEAR(y1[j], y2[j], 1e-12);  // scale-invariant (eps = 0)
}

TEST(FusedMulPolynormReference, IsPolynormTimesM) {
  const Shape s{3, 7};
  const Vec x = random_values(21, 11), m = random_values(21, 12), w = {1.1, 0.9, 1.05},
            b = {-0.4};
  const Vec p = polynorm(s, x, w, b, 1e-6);
  const Vec y = fused_mul_polynorm(s, x, m, w, b, 1e-6);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_DOUBLE_EQ(y[i], p[i] * m[i]);
}

// L = sum(dy * y(x, w, b)): dL/dx, dL/dw, dL/db by central differences match the backward.
// eps = 1e-3 keeps the norms smooth at the finite-difference step.
TEST(PolynormBwdReference, MatchesFiniteDifferencesOfTheForward) {
  const Shape s{3, 7};
  const double eps = 1e-3, h = 1e-6;
  const Vec x = random_values(21, 1), dy = random_values(21, 3), w = {1.1, 0.8, -1.2},
            b = {0.3};
  Vec dx(21), dw(3), db(1);
  op("polynorm_bwd").reference(ReferenceArgs{s, eps, {&dy, &x, &w}, {&dx, &dw, &db}});

  const auto loss_x = [&](const Vec& xv) { return dot(dy, polynorm(s, xv, w, b, eps)); };
  const auto loss_w = [&](const Vec& wv) { return dot(dy, polynorm(s, x, wv, b, eps)); };
  const auto loss_b = [&](const Vec& bv) { return dot(dy, polynorm(s, x, w, bv, eps)); };
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(dx[i], central_difference(loss_x, x, i, h), 1e-6) << "dx[" << i << "]";
  for (size_t k = 0; k < 3; ++k)
    EXPECT_NEAR(dw[k], central_difference(loss_w, w, k, h), 1e-6) << "dw[" << k << "]";
  EXPECT_NEAR(db[0], central_difference(loss_b, b, 0, h), 1e-6);
}

TEST(PolynormBwdReference, SingleColumnRowsAndZeroRows) {
  // N = 1 (each norm is sign(x) up to eps: dx nearly cancels) and an all-zero row.
  const Shape s{4, 1};
  const double eps = 1e-3, h = 1e-7;
  const Vec x = {0.7, -0.05, 0.0, 1.9}, dy = {1.0, -2.0, 0.5, 0.3}, w = {1.0, 1.2, 0.9},
            b = {0.0};
  Vec dx(4), dw(3), db(1);
  op("polynorm_bwd").reference(ReferenceArgs{s, eps, {&dy, &x, &w}, {&dx, &dw, &db}});
  const auto loss_x = [&](const Vec& xv) { return dot(dy, polynorm(s, xv, w, b, eps)); };
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(dx[i], central_difference(loss_x, x, i, h), 1e-5) << "dx[" << i << "]";
  // At x = 0 only N(x) has a slope: dx = dy * w2 / sqrt(eps).
  EXPECT_NEAR(dx[2], dy[2] * w[2] / std::sqrt(eps), 1e-12);
  EXPECT_DOUBLE_EQ(db[0], dy[0] + dy[1] + dy[2] + dy[3]);
}

TEST(FusedMulPolynormBwdReference, MatchesFiniteDifferencesOfTheForward) {
  const Shape s{3, 5};
  const double eps = 1e-3, h = 1e-6;
  const Vec x = random_values(15, 21), m = random_values(15, 22), dy = random_values(15, 23),
            w = {0.9, 1.3, -0.7}, b = {-0.2};
  Vec dx(15), dm(15), dw(3), db(1);
  op("fused_mul_polynorm_bwd")
      .reference(ReferenceArgs{s, eps, {&dy, &x, &m, &w, &b}, {&dx, &dm, &dw, &db}});

  const auto loss = [&](const Vec& xv, const Vec& mv, const Vec& wv, const Vec& bv) {
    return dot(dy, fused_mul_polynorm(s, xv, mv, wv, bv, eps));
  };
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(dx[i], central_difference([&](const Vec& v) { return loss(v, m, w, b); }, x, i, h),
                1e-6)
        << "dx[" << i << "]";
    EXPECT_NEAR(dm[i], central_difference([&](const Vec& v) { return loss(x, v, w, b); }, m, i, h),
                1e-6)
        << "dm[" << i << "]";
  }
  for (size_t k = 0; k < 3; ++k)
    EXPECT_NEAR(dw[k], central_difference([&](const Vec& v) { return loss(x, m, v, b); }, w, k, h),
                1e-6)
        << "dw[" << k << "]";
  EXPECT_NEAR(db[0], central_difference([&](const Vec& v) { return loss(x, m, w, v); }, b, 0, h),
              1e-6);
}

TEST(FusedMulPolynormBwdReference, DxIsPolynormBwdOfDyTimesM) {
  const Shape s{2, 9};
  const Vec x = random_values(18, 31), m = random_values(18, 32), dy = random_values(18, 33),
            w = {1.0, 1.1, 0.9}, b = {0.5};
  Vec dym(18);
  for (size_t i = 0; i < dym.size(); ++i) dym[i] = dy[i] * m[i];
  Vec dx1(18), dw1(3), db1(1), dx2(18), dm2(18), dw2(3), db2(1);
  op("polynorm_bwd").reference(ReferenceArgs{s, 1e-6, {&dym, &x, &w}, {&dx1, &dw1, &db1}});
  op("fused_mul_polynorm_bwd")
      .reference(ReferenceArgs{s, 1e-6, {&dy, &x, &m, &w, &b}, {&dx2, &dm2, &dw2, &db2}});
  for (size_t i = 0; i < 18; ++i) EXPECT_NEAR(dx1[i], dx2[i], 1e-12);
  for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(dw1[k], dw2[k], 1e-12);
  EXPECT_NEAR(db1[0], db2[0], 1e-12);
}

TEST(PolynormBwdReference, ScalarGradientsAreDeterministicAcrossRuns) {
  const Shape s{1000, 3};
  const Vec x = random_values(3000, 4), dy = random_values(3000, 6), w = {1.0, 0.9, 1.1};
  Vec dx1(3000), dw1(3), db1(1), dx2(3000), dw2(3), db2(1);
  op("polynorm_bwd").reference(ReferenceArgs{s, 1e-6, {&dy, &x, &w}, {&dx1, &dw1, &db1}});
  op("polynorm_bwd").reference(ReferenceArgs{s, 1e-6, {&dy, &x, &w}, {&dx2, &dw2, &db2}});
  EXPECT_EQ(dw1, dw2);
  EXPECT_EQ(db1, db2);
}

TEST(PolynormModels, BytesCountEachTensorOnceAndTolerancesScale) {
  const Shape s{4096, 8192};
  const double mn = 4096.0 * 8192;
  EXPECT_DOUBLE_EQ(op("polynorm").bytes(s, DType::bf16), (2 * mn + 4) * 2);
  EXPECT_DOUBLE_EQ(op("fused_mul_polynorm").bytes(s, DType::bf16), (3 * mn + 4) * 2);
  // dw and db are fp32 whatever the run's dtype.
  EXPECT_DOUBLE_EQ(op("polynorm_bwd").bytes(s, DType::bf16), (3 * mn + 3) * 2 + 16);
  EXPECT_DOUBLE_EQ(op("fused_mul_polynorm_bwd").bytes(s, DType::f32), (5 * mn + 8) * 4);
  for (const char* name : {"polynorm_bwd", "fused_mul_polynorm_bwd"}) {
    const auto& outs = op(name).outputs;
    EXPECT_EQ(outs[outs.size() - 2].type, TensorType::f32);
    EXPECT_EQ(outs[outs.size() - 1].type, TensorType::f32);
    EXPECT_EQ(outs[0].type, TensorType::activation);
  }
  // Looser for narrower types; the scalar-gradient tolerances grow with M * N, dx's does not.
  for (const char* name : {"polynorm", "fused_mul_polynorm"}) {
    EXPECT_LT(op(name).tolerance(0, DType::f32, s).rtol, op(name).tolerance(0, DType::f16, s).rtol);
    EXPECT_LT(op(name).tolerance(0, DType::f16, s).rtol, op(name).tolerance(0, DType::bf16, s).rtol);
  }
  const OpDescriptor& bwd = op("polynorm_bwd");
  EXPECT_LT(bwd.tolerance(1, DType::f32, {16, 8}).atol, bwd.tolerance(1, DType::f32, {16, 8192}).atol);
  EXPECT_LT(bwd.tolerance(2, DType::f32, {16, 8}).atol, bwd.tolerance(2, DType::f32, {4096, 8}).atol);
  EXPECT_EQ(bwd.tolerance(0, DType::f32, {16, 8}).atol, bwd.tolerance(0, DType::f32, {4096, 8192}).atol);
  const OpDescriptor& fbwd = op("fused_mul_polynorm_bwd");
  EXPECT_LT(fbwd.tolerance(3, DType::f32, {16, 8}).atol, fbwd.tolerance(3, DType::f32, {16, 8192}).atol);
  // Output and input lists as the kernels index them.
  EXPECT_EQ(op("polynorm").inputs.size(), 3u);
  EXPECT_EQ(op("fused_mul_polynorm").inputs.size(), 4u);
  EXPECT_EQ(bwd.inputs.size(), 3u);
  EXPECT_EQ(bwd.outputs.size(), 3u);
  EXPECT_EQ(fbwd.inputs.size(), 5u);
  EXPECT_EQ(fbwd.outputs.size(), 4u);
}

}  // namespace
}  // namespace kbench
