// The correctness check: the tolerance rule at its boundary, NaN and poison detection,
// infinities, the error norms on closed-form cases, and the multi-threaded path. And the
// comparison of two launches' outputs bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "harness/check.h"

namespace kbench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Rounds ref into a buffer of type t (vector<uint32_t> is large enough for any dtype).
std::vector<uint32_t> device_like(const std::vector<double>& values, DType t) {
  std::vector<uint32_t> buf(values.size());
  for (size_t i = 0; i < values.size(); ++i) store_from_double(buf.data(), t, i, values[i]);
  return buf;
}

CheckResult check(const std::vector<double>& out, const std::vector<double>& ref,
                  Tolerance tol = {}, DType t = DType::f32) {
  const auto buf = device_like(out, t);
  return check_output(buf.data(), t, ref, tol);
}

TEST(Check, ExactMatchPasses) {
  const std::vector<double> ref = {0.5, -1.25, 3, 0};
  for (DType t : kAllDTypes) {
    const CheckResult r = check(ref, ref, {}, t);
    EXPECT_TRUE(r.pass) << dtype_name(t);
    EXPECT_EQ(r.bad_count, 0u);
    EXPECT_EQ(r.max_abs_err, 0);
    EXPECT_EQ(r.max_rel_err, 0);
    EXPECT_EQ(r.rel_l2_err, 0);
  }
}

TEST(Check, ToleranceBoundaryAbsolute) {
  // All values exact in fp32, so the comparison sits exactly on the boundary.
  EXPECT_TRUE(check({1.25}, {1.0}, {0.25, 0}).pass);
  EXPECT_FALSE(check({1.5}, {1.0}, {0.25, 0}).pass);
  EXPECT_TRUE(check({0.75}, {1.0}, {0.25, 0}).pass);
  EXPECT_FALSE(check({0.5}, {1.0}, {0.25, 0}).pass);
}

TEST(Check, PerElementAtolScale) {
  // Element 1's atol is scaled by 4 (an op's atol_scale): 1.0 off passes there, not at 0.
  const std::vector<float> out = {1.5f, 2.0f};
  const std::vector<double> ref = {1.0, 1.0}, scale = {1.0, 4.0};
  const CheckResult r = check_output(out.data(), DType::f32, ref, {0.25, 0}, &scale);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.bad_count, 1u);
  EXPECT_EQ(r.first_bad, 0u);
  const std::vector<double> tight = {1.0, 3.9};
  EXPECT_EQ(check_output(out.data(), DType::f32, ref, {0.25, 0}, &tight).bad_count, 2u);
}

TEST(Check, Fp16SubnormalStepIsAlwaysAllowed) {
  // 3 * 2^-24 stored, 3.4 * 2^-24 wanted: within one subnormal step of fp16 even at zero
  // tolerance; 5 steps off is not.
  const uint16_t three_steps = 3, eight_steps = 8;
  const std::vector<double> ref = {3.4 * 0x1p-24};
  EXPECT_TRUE(check_output(&three_steps, DType::f16, ref, {0, 0}).pass);
  EXPECT_FALSE(check_output(&eight_steps, DType::f16, ref, {0, 0}).pass);
}

TEST(Check, ToleranceBoundaryRelative) {
  EXPECT_TRUE(check({2.5}, {2.0}, {0, 0.25}).pass);
  EXPECT_FALSE(check({2.5625}, {2.0}, {0, 0.25}).pass);
  EXPECT_TRUE(check({-2.5}, {-2.0}, {0, 0.25}).pass);  // |ref|, not ref
  // atol + rtol*|ref| together: 0.125 + 0.25*2 = 0.625.
  EXPECT_TRUE(check({2.625}, {2.0}, {0.125, 0.25}).pass);
  EXPECT_FALSE(check({2.6875}, {2.0}, {0.125, 0.25}).pass);
  // With rtol only, a zero reference demands an exact zero.
  EXPECT_FALSE(check({1e-30}, {0.0}, {0, 0.5}).pass);
}

TEST(Check, NanOutputFails) {
  const CheckResult r = check({1, kNan, 3}, {1, 2, 3}, {1e9, 1e9});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.bad_count, 1u);
  EXPECT_EQ(r.first_bad, 1u);
  EXPECT_TRUE(std::isnan(r.first_bad_out));
  EXPECT_EQ(r.first_bad_ref, 2);
  EXPECT_EQ(r.max_abs_err, kInf);  // unbounded, and never NaN
}

TEST(Check, PoisonedUnwrittenElementFails) {
  // The harness poisons with fill_nan; an element the kernel skipped stays poisoned.
  const std::vector<double> ref = {0.5, 0.25, 0.25, 1};
  for (DType t : kAllDTypes) {
    auto buf = device_like(ref, t);
    fill_nan(buf.data(), t, 1);              // element 0 unwritten
    store_from_double(buf.data(), t, 2, kNan);  // element 2 too
    const CheckResult r = check_output(buf.data(), t, ref, {1, 1});
    EXPECT_FALSE(r.pass) << dtype_name(t);
    EXPECT_EQ(r.bad_count, 2u);
    EXPECT_EQ(r.first_bad, 0u);
    EXPECT_EQ(r.first_bad_ref, 0.5);
  }
}

TEST(Check, DescribeFailure) {
  const CheckResult r = check({0.25, 0.25, kNan, 0.25}, {0.25, 0.25, 0.25, 0.25});
  EXPECT_EQ(describe_failure("y", r, 4),
            "y: 1 of 4 elements out of tolerance, first at 2: got nan, want 0.25");
}

// Two launches' outputs compared as bits: equal values are the same, and so never differ;
// values one ulp apart, -0 and +0, and NaNs of different payloads do, in every dtype.
TEST(Check, BitwiseDiffCountsElementsThatDifferInAnyBit) {
  for (DType t : kAllDTypes) {
    const std::vector<double> values = {0.25, -1.5, 0.0, 3.0, 7.0};
    const auto first = device_like(values, t);
    EXPECT_EQ(bitwise_diff(first.data(), first.data(), values.size(), t).count, 0u) << dtype_name(t);
    auto later = first;
    store_from_double(later.data(), t, 2, -0.0);  // -0 == +0 as values, not as bits
    const BitwiseDiff d = bitwise_diff(first.data(), later.data(), values.size(), t);
    EXPECT_EQ(d.count, 1u) << dtype_name(t);
    EXPECT_EQ(d.first, 2u) << dtype_name(t);
    // One ulp up at element 1 and element 4: two elements, the first still 1.
    store_from_double(later.data(), t, 2, 0.0);
    const size_t size = dtype_size(t);
    auto* bytes = reinterpret_cast<unsigned char*>(later.data());
    bytes[1 * size] ^= 1;  // the lowest bit (little-endian)
    bytes[4 * size] ^= 1;
    const BitwiseDiff two = bitwise_diff(first.data(), later.data(), values.size(), t);
    EXPECT_EQ(two.count, 2u) << dtype_name(t);
    EXPECT_EQ(two.first, 1u) << dtype_name(t);
    // Only the first numel elements count.
    EXPECT_EQ(bitwise_diff(first.data(), later.data(), 1, t).count, 0u) << dtype_name(t);
  }
  // NaNs of different payloads.
  const std::vector<uint32_t> nan_a = {0x7fc00000u}, nan_b = {0x7fc00001u};
  EXPECT_EQ(bitwise_diff(nan_a.data(), nan_b.data(), 1, DType::f32).count, 1u);
  EXPECT_EQ(bitwise_diff(nan_a.data(), nan_a.data(), 1, DType::f32).count, 0u);
  EXPECT_EQ(bitwise_diff(nan_a.data(), nan_b.data(), 0, DType::f32).count, 0u);
}

TEST(Check, DescribeBitwiseDiff) {
  const std::vector<float> first = {1.0f, 0.25f}, later = {1.0f, std::nextafter(0.25f, 1.0f)};
  const BitwiseDiff d = bitwise_diff(first.data(), later.data(), 2, DType::f32);
  // Nine digits tell the two floats apart.
  EXPECT_EQ(describe_bitwise_diff("dx", d, 2, first.data(), later.data(), DType::f32),
            "dx: 1 of 2 elements not bit for bit the first launch's, first at 1: 0.25, then "
            "0.25000003");
}

TEST(Check, DescribeChangedInput) {
  const std::vector<float> before = {1.0f, 0.25f, 2.0f}, after = {1.0f, 0.0f, 3.0f};
  const BitwiseDiff d = bitwise_diff(before.data(), after.data(), 3, DType::f32);
  EXPECT_EQ(describe_changed_input("x", d, 3, before.data(), after.data(), DType::f32),
            "x: 2 of 3 elements changed by the launch, first at 1: 0.25, then 0");
}

// The bytes beside a buffer: any byte not the fill counts, wherever it is, and none is "".
// After an end the first changed byte is named (from 0), before a start the nearest (from 1).
TEST(Check, GuardDiffCountsEveryChangedByte) {
  std::vector<unsigned char> guard(4096, 0xa5);
  EXPECT_EQ(guard_diff(guard.data(), guard.size(), 0xa5).count, 0u);
  for (GuardSide side : {GuardSide::before, GuardSide::after})
    EXPECT_EQ(describe_guard("y", guard_diff(guard.data(), guard.size(), 0xa5), guard.size(), side), "");
  guard[0] = 0;      // after an end, the byte right after it: the usual overrun
  guard[4095] = 0xa4;  // one bit; before a start, the byte right before it (index -1)
  const GuardDiff d = guard_diff(guard.data(), guard.size(), 0xa5);
  EXPECT_EQ(d.count, 2u);
  EXPECT_EQ(d.first, 0u);
  EXPECT_EQ(d.last, 4095u);
  EXPECT_EQ(describe_guard("workspace", d, guard.size(), GuardSide::after),
            "workspace: 2 of the 4096 bytes after its end written, first at byte 0 after it");
  EXPECT_EQ(describe_guard("workspace", d, guard.size(), GuardSide::before),
            "workspace: 2 of the 4096 bytes before its start written, nearest at byte 1 before it");
  guard[0] = 0xa5;
  guard[4095] = 0xa5;
  guard[4000] = 0;
  EXPECT_EQ(describe_guard("y", guard_diff(guard.data(), guard.size(), 0xa5), guard.size(), GuardSide::before),
            "y: 1 of the 4096 bytes before its start written, nearest at byte 96 before it");
  EXPECT_EQ(describe_guard("y", guard_diff(guard.data(), guard.size(), 0xa5), guard.size(), GuardSide::after),
            "y: 1 of the 4096 bytes after its end written, first at byte 4000 after it");
}

TEST(Check, InfinityHandling) {
  // An infinite reference must be matched exactly.
  EXPECT_TRUE(check({kInf, -kInf, 1}, {kInf, -kInf, 1}).pass);
  EXPECT_FALSE(check({-kInf}, {kInf}, {1e300, 1e300}).pass);
  EXPECT_FALSE(check({3e38}, {kInf}, {1e300, 1e300}).pass);
  EXPECT_FALSE(check({kNan}, {kInf}, {1e300, 1e300}).pass);
  // An infinite output where the reference is finite fails even with a huge tolerance.
  const CheckResult r = check({kInf, 1}, {1, 1}, {1e300, 1e300});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.first_bad, 0u);
  EXPECT_EQ(r.max_abs_err, kInf);
  EXPECT_EQ(r.rel_l2_err, kInf);
  // Matched infinities do not poison the norms of the finite elements.
  const CheckResult m = check({kInf, 3, 0}, {kInf, 3, 4});
  EXPECT_DOUBLE_EQ(m.rel_l2_err, 4.0 / 5.0);
  // fp16 overflow: a value beyond 65504 stored as fp16 is inf, which fails a finite ref.
  EXPECT_FALSE(check({1e5}, {1e5}, {1e9, 1e9}, DType::f16).pass);
}

TEST(Check, NanReferenceIsDefined) {
  EXPECT_TRUE(check({kNan}, {kNan}).pass);
  EXPECT_FALSE(check({1}, {kNan}, {1e9, 1e9}).pass);
}

TEST(Check, ErrorNormsClosedForm) {
  // ||out - ref|| = ||(3,4)|| = 5, ||ref|| = 5.
  CheckResult r = check({0, 0}, {3, 4}, {10, 0});
  EXPECT_TRUE(r.pass);
  EXPECT_DOUBLE_EQ(r.rel_l2_err, 1.0);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 4.0);
  EXPECT_DOUBLE_EQ(r.max_rel_err, 1.0);

  // max_rel_err ignores ref == 0; rel_l2 = 2 / 1.
  r = check({1, 2}, {1, 0}, {2, 0});
  EXPECT_TRUE(r.pass);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 2.0);
  EXPECT_EQ(r.max_rel_err, 0.0);
  EXPECT_DOUBLE_EQ(r.rel_l2_err, 2.0);

  // ||ref|| == 0: plain ||out - ref||.
  r = check({3, -4}, {0, 0}, {10, 0});
  EXPECT_DOUBLE_EQ(r.rel_l2_err, 5.0);

  // Relative error per element: 0.5/2 and 1/4 -> 0.25; 0.25/0.5 -> 0.5.
  r = check({2.5, 5, 0.75}, {2, 4, 0.5}, {10, 0});
  EXPECT_DOUBLE_EQ(r.max_rel_err, 0.5);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 1.0);
  EXPECT_DOUBLE_EQ(r.rel_l2_err, std::sqrt((0.25 + 1 + 0.0625) / (4 + 16 + 0.25)));
}

TEST(Check, Bf16ErrorsAreMeasuredOnStoredValues) {
  // 1 + 2^-8 rounds to 1.0 in bf16 (tie to even): abs error 2^-8 against the exact ref.
  const double ref = 1.0 + std::ldexp(1.0, -8);
  const CheckResult r = check({ref}, {ref}, {0, 0}, DType::bf16);
  EXPECT_FALSE(r.pass);
  EXPECT_DOUBLE_EQ(r.max_abs_err, std::ldexp(1.0, -8));
  EXPECT_TRUE(check({ref}, {ref}, {0, dtype_epsilon(DType::bf16)}, DType::bf16).pass);
}

TEST(Check, LargeMultiChunk) {
  // Several million elements: spans many chunks, so the threaded path and the ordered merge
  // are exercised. out = ref + 0.5 everywhere except a few planted bad elements.
  const size_t n = 5'000'000;
  std::vector<double> ref(n);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    ref[i] = 1.0 + static_cast<double>(i % 7);
    out[i] = static_cast<float>(ref[i] + 0.5);
  }
  const size_t bad[] = {4'999'999, 1'048'577, 3'000'000, 2'100'000};
  for (size_t i : bad) out[i] = std::numeric_limits<float>::quiet_NaN();
  out[4'000'000] = static_cast<float>(ref[4'000'000] + 2);  // out of tolerance, not NaN

  const CheckResult r = check_output(out.data(), DType::f32, ref, {1.0, 0});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.bad_count, 5u);
  EXPECT_EQ(r.first_bad, 1'048'577u);
  EXPECT_EQ(r.first_bad_ref, ref[1'048'577]);
  EXPECT_EQ(r.max_abs_err, kInf);

  // Without the planted failures the norms have a closed form: every diff is 0.5.
  for (size_t i : bad) out[i] = static_cast<float>(ref[i] + 0.5);
  out[4'000'000] = static_cast<float>(ref[4'000'000] + 0.5);
  const CheckResult ok = check_output(out.data(), DType::f32, ref, {1.0, 0});
  EXPECT_TRUE(ok.pass);
  EXPECT_DOUBLE_EQ(ok.max_abs_err, 0.5);
  EXPECT_DOUBLE_EQ(ok.max_rel_err, 0.5);  // at ref == 1
  double sum_sq_ref = 0;
  for (double v : ref) sum_sq_ref += v * v;
  EXPECT_NEAR(ok.rel_l2_err, std::sqrt(0.25 * n / sum_sq_ref), 1e-12);
  // Deterministic: the same input gives the same bits.
  EXPECT_EQ(check_output(out.data(), DType::f32, ref, {1.0, 0}).rel_l2_err, ok.rel_l2_err);
}

TEST(Check, EmptyOutputPasses) {
  const CheckResult r = check({}, {});
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.rel_l2_err, 0);
}

TEST(Check, Combine) {
  CheckResult a;  // passes
  a.max_abs_err = 0.5;
  a.max_rel_err = 0.1;
  a.rel_l2_err = 0.01;
  CheckResult b;
  b.pass = false;
  b.bad_count = 3;
  b.first_bad = 7;
  b.first_bad_out = 9;
  b.first_bad_ref = 1;
  b.max_abs_err = 0.25;
  b.max_rel_err = 0.2;
  b.rel_l2_err = 0.001;
  CheckResult c;
  c.pass = false;
  c.bad_count = 2;
  c.first_bad = 1;

  const CheckResult r = combine({a, b, c});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.bad_count, 5u);
  EXPECT_EQ(r.first_bad, 7u);  // the first failing output's first element
  EXPECT_EQ(r.first_bad_out, 9);
  EXPECT_EQ(r.max_abs_err, 0.5);
  EXPECT_EQ(r.max_rel_err, 0.2);
  EXPECT_EQ(r.rel_l2_err, 0.01);

  EXPECT_TRUE(combine({a, a}).pass);
  EXPECT_TRUE(combine({}).pass);
}

}  // namespace
}  // namespace kbench
