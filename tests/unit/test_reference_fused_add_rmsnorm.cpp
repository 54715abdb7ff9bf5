// fused_add_rmsnorm's float64 references: the forward is rmsnorm of x + r and returns x + r;
// the backward matches central finite differences of the forward, for both of its outputs.
#include <gtest/gtest.h>

#include "harness/registry.h"
#include "tests/unit/reference_test_support.h"

namespace kbench {
namespace {

using reference_tests::op;
using reference_tests::random_values;

struct Forward {
  std::vector<double> y, h;
};

Forward forward(const Shape& s, const std::vector<double>& x, const std::vector<double>& r,
                const std::vector<double>& w, double eps) {
  Forward f{std::vector<double>(x.size()), std::vector<double>(x.size())};
  op("fused_add_rmsnorm").reference(ReferenceArgs{s, eps, {&x, &r, &w}, {&f.y, &f.h}});
  return f;
}

TEST(FusedAddRmsnormReference, IsRmsnormOfTheSumAndReturnsTheSum) {
  const Shape s{3, 5};
  const std::vector<double> x = random_values(15, 1), r = random_values(15, 2),
                            w = random_values(5, 3, 1.0);
  const Forward f = forward(s, x, r, w, 1e-6);
  std::vector<double> sum(15), y(15);
  for (size_t i = 0; i < 15; ++i) sum[i] = x[i] + r[i];
  op("rmsnorm").reference(ReferenceArgs{s, 1e-6, {&sum, &w}, {&y}});
  EXPECT_EQ(f.h, sum);
  EXPECT_EQ(f.y, y);
}

TEST(FusedAddRmsnormReference, CancellingInputsGiveAZeroRow) {
  const Shape s{1, 4};
  const std::vector<double> x = {1, -2, 3, -4}, r = {-1, 2, -3, 4}, w(4, 1.0);
  for (double v : forward(s, x, r, w, 1e-6).y) EXPECT_EQ(v, 0.0);
}

// L = sum(dy * y) + sum(dh * h): dL/dx = dL/dr = dx and dL/dw = dw.
TEST(FusedAddRmsnormBwdReference, MatchesFiniteDifferencesOfTheForward) {
  const Shape s{3, 7};
  const double eps = 1e-3;
  const std::vector<double> x = random_values(21, 4), r = random_values(21, 5),
                            w = random_values(7, 6, 1.0), dy = random_values(21, 7),
                            dh = random_values(21, 8);
  std::vector<double> h(21), dx(21), dw(7);
  for (size_t i = 0; i < 21; ++i) h[i] = x[i] + r[i];
  op("fused_add_rmsnorm_bwd").reference(ReferenceArgs{s, eps, {&dy, &dh, &h, &w}, {&dx, &dw}});

  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& rv,
                  const std::vector<double>& wv) {
    const Forward f = forward(s, xv, rv, wv, eps);
    double l = 0;
    for (size_t i = 0; i < f.y.size(); ++i) l += dy[i] * f.y[i] + dh[i] * f.h[i];
    return l;
  };
  const double step = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    auto xp = x, xm = x, rp = r, rm = r;
    xp[i] += step;
    xm[i] -= step;
    rp[i] += step;
    rm[i] -= step;
    EXPECT_NEAR(dx[i], (loss(xp, r, w) - loss(xm, r, w)) / (2 * step), 1e-7) << "dx[" << i << "]";
    EXPECT_NEAR(dx[i], (loss(x, rp, w) - loss(x, rm, w)) / (2 * step), 1e-7) << "dr[" << i << "]";
  }
  for (size_t j = 0; j < w.size(); ++j) {
    auto wp = w, wm = w;
    wp[j] += step;
    wm[j] -= step;
    EXPECT_NEAR(dw[j], (loss(x, r, wp) - loss(x, r, wm)) / (2 * step), 1e-7) << "dw[" << j << "]";
  }
}

TEST(FusedAddRmsnormModels, BytesCountEachTensorOnce) {
  const Shape s{4096, 8192};
  EXPECT_DOUBLE_EQ(op("fused_add_rmsnorm").bytes(s, DType::bf16), (4.0 * 4096 * 8192 + 8192) * 2);
  EXPECT_DOUBLE_EQ(op("fused_add_rmsnorm_bwd").bytes(s, DType::f32),
                   (4.0 * 4096 * 8192 + 2 * 8192) * 4);
}

}  // namespace
}  // namespace kbench
