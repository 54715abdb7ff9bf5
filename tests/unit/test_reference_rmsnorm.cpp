// rmsnorm's float64 references against closed forms, and the backward against central finite
// differences of the forward (the definition of a gradient).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/check.h"
#include "harness/dtype.h"
#include "harness/registry.h"
#include "tests/unit/reference_test_support.h"

namespace kbench {
namespace {

using reference_tests::op;
using reference_tests::random_values;

std::vector<double> forward(const Shape& s, const std::vector<double>& x,
                            const std::vector<double>& w, double eps) {
  std::vector<double> y(x.size());
  ReferenceArgs a{s, eps, {&x, &w}, {&y}};
  op("rmsnorm").reference(a);
  return y;
}

TEST(RmsnormReference, ConstantRowNormalizesToOneTimesWeight) {
  // x = c everywhere: mean(x^2) = c^2, so y = c / sqrt(c^2 + eps) * w.
  const Shape s{2, 5};
  std::vector<double> x(10, 3.0), w = {1, 2, 3, 4, 5};
  const std::vector<double> y = forward(s, x, w, 1e-6);
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(y[i], 3.0 / std::sqrt(9.0 + 1e-6) * w[i % 5], 1e-12);
}

TEST(RmsnormReference, ZeroRowStaysFiniteThanksToEps) {
  const Shape s{1, 4};
  std::vector<double> x(4, 0.0), w(4, 1.0);
  for (double v : forward(s, x, w, 1e-6)) EXPECT_EQ(v, 0.0);
}

TEST(RmsnormReference, HandComputedRow) {
  // x = (1, 2, 2): mean(x^2) = 3, rstd = 1/sqrt(3 + 1).
  const Shape s{1, 3};
  std::vector<double> x = {1, 2, 2}, w = {1, 1, 2};
  const std::vector<double> y = forward(s, x, w, 1.0);
  EXPECT_DOUBLE_EQ(y[0], 0.5);
  EXPECT_DOUBLE_EQ(y[1], 1.0);
  EXPECT_DOUBLE_EQ(y[2], 2.0);
}

// L = sum(dy * y(x, w)): dL/dx and dL/dw by central differences match the backward reference.
TEST(RmsnormBwdReference, MatchesFiniteDifferencesOfTheForward) {
  const Shape s{3, 7};
  const double eps = 1e-3;
  std::vector<double> x = random_values(21, 1), w = random_values(7, 2, 1.0), dy = random_values(21, 3);
  std::vector<double> dx(21), dw(7);
  ReferenceArgs a{s, eps, {&dy, &x, &w}, {&dx, &dw}};
  op("rmsnorm_bwd").reference(a);

  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv) {
    const std::vector<double> y = forward(s, xv, wv, eps);
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
    return l;
  };
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    EXPECT_NEAR(dx[i], (loss(xp, w) - loss(xm, w)) / (2 * h), 1e-7) << "dx[" << i << "]";
  }
  for (size_t j = 0; j < w.size(); ++j) {
    auto wp = w, wm = w;
    wp[j] += h;
    wm[j] -= h;
    EXPECT_NEAR(dw[j], (loss(x, wp) - loss(x, wm)) / (2 * h), 1e-7) << "dw[" << j << "]";
  }
}

TEST(RmsnormBwdReference, DwIsDeterministicAcrossRuns) {
  const Shape s{1000, 3};
  std::vector<double> x = random_values(3000, 4), w = random_values(3, 5, 1.0), dy = random_values(3000, 6);
  std::vector<double> dx1(3000), dw1(3), dx2(3000), dw2(3);
  op("rmsnorm_bwd").reference(ReferenceArgs{s, 1e-6, {&dy, &x, &w}, {&dx1, &dw1}});
  op("rmsnorm_bwd").reference(ReferenceArgs{s, 1e-6, {&dy, &x, &w}, {&dx2, &dw2}});
  EXPECT_EQ(dw1, dw2);
}

TEST(RmsnormModels, BytesCountEachTensorOnceAndTolerancesScale) {
  const Shape s{4096, 8192};
  EXPECT_DOUBLE_EQ(op("rmsnorm").bytes(s, DType::bf16), (2.0 * 4096 * 8192 + 8192) * 2);
  EXPECT_DOUBLE_EQ(op("rmsnorm_bwd").bytes(s, DType::f32), (3.0 * 4096 * 8192 + 2 * 8192) * 4);
  // Looser for narrower types; the dw tolerance grows with M.
  EXPECT_LT(op("rmsnorm").tolerance(0, DType::f32, s).rtol, op("rmsnorm").tolerance(0, DType::f16, s).rtol);
  EXPECT_LT(op("rmsnorm").tolerance(0, DType::f16, s).rtol, op("rmsnorm").tolerance(0, DType::bf16, s).rtol);
  EXPECT_LT(op("rmsnorm_bwd").tolerance(1, DType::f32, {16, 8}).atol,
            op("rmsnorm_bwd").tolerance(1, DType::f32, {65536, 8}).atol);
}

// The GPU test of the launches' bitwise comparison needs an output one ulp off that the value
// check passes: test_unsteady (tests/gpu/broken_impls.cpp) flips the lowest bit of an element
// in the upper half of its binade (|y| = f * 2^e, f in [1.5, 2)), where one ulp is at most 4/3
// units of roundoff and, with the rounding to the dtype, within rmsnorm's 2.5 units in every
// dtype. In the lower half one ulp is up to 2 units, and fp16 and bf16 elements fail there.
TEST(RmsnormModels, OneUlpInTheUpperHalfOfABinadeIsWithinTheTolerance) {
  const std::vector<double> ref = random_values(200000, 5);
  for (DType t : kAllDTypes) {
    const size_t size = dtype_size(t);
    std::vector<uint32_t> upper(ref.size()), lower(ref.size());  // ref rounded, then flipped
    for (size_t i = 0; i < ref.size(); ++i) {
      store_from_double(upper.data(), t, i, ref[i]);
      store_from_double(lower.data(), t, i, ref[i]);
      int exponent = 0;
      const bool in_upper_half = std::frexp(std::fabs(load_as_double(upper.data(), t, i)), &exponent) >= 0.75;
      reinterpret_cast<unsigned char*>(in_upper_half ? upper.data() : lower.data())[i * size] ^= 1;
    }
    const Tolerance tol = op("rmsnorm").tolerance(0, t, Shape{7, 4097});
    EXPECT_TRUE(check_output(upper.data(), t, ref, tol).pass) << dtype_name(t);
    if (t != DType::f32)  // fp32's 1e-5 relative floor is many ulps
      EXPECT_FALSE(check_output(lower.data(), t, ref, tol).pass) << dtype_name(t);
  }
}

}  // namespace
}  // namespace kbench
