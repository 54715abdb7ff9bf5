// dtype names, parsing, and the host float <-> fp16/bf16 conversions. The conversions are
// checked against an independent oracle: the nearest value in a sorted table of every finite
// 16-bit value, ties to the even encoding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "harness/dtype.h"
#include "harness/errors.h"

namespace kbench {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtype_name(DType::f32), "fp32");
  EXPECT_EQ(dtype_name(DType::f16), "fp16");
  EXPECT_EQ(dtype_name(DType::bf16), "bf16");
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_epsilon(DType::f32), std::ldexp(1.0, -24));
  EXPECT_EQ(dtype_epsilon(DType::f16), std::ldexp(1.0, -11));
  EXPECT_EQ(dtype_epsilon(DType::bf16), std::ldexp(1.0, -8));
}

TEST(DType, ParseNamesAndAliases) {
  for (DType t : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("f32"), DType::f32);
  EXPECT_EQ(parse_dtype("float16"), DType::f16);
  EXPECT_EQ(parse_dtype("f16"), DType::f16);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
}

TEST(DType, ParseRejectsUnknownNamingIt) {
  try {
    parse_dtype("fp8");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown dtype 'fp8' (valid: fp32, fp16, bf16)");
  }
  EXPECT_THROW(parse_dtype(""), UsageError);
  EXPECT_THROW(parse_dtype("BF16"), UsageError);
  EXPECT_THROW(parse_dtype(" bf16"), UsageError);
}

TEST(DType, ParseList) {
  EXPECT_EQ(parse_dtype_list("bf16"), std::vector<DType>{DType::bf16});
  EXPECT_EQ(parse_dtype_list("bf16,fp16,fp32"),
            (std::vector<DType>{DType::bf16, DType::f16, DType::f32}));
  // Duplicates (also through aliases) collapse, first occurrence wins the position.
  EXPECT_EQ(parse_dtype_list("fp16,bf16,half,fp16"),
            (std::vector<DType>{DType::f16, DType::bf16}));
  EXPECT_THROW(parse_dtype_list(""), UsageError);
  EXPECT_THROW(parse_dtype_list("bf16,"), UsageError);
  EXPECT_THROW(parse_dtype_list(",bf16"), UsageError);
  EXPECT_THROW(parse_dtype_list("bf16,,fp16"), UsageError);
  try {
    parse_dtype_list("bf16,int8");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'int8'"), std::string::npos) << e.what();
  }
}

// ----- bf16 ----------------------------------------------------------------------------------

TEST(DType, Bf16KnownValues) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  // Ties to even: halfway between 0x3F80 and 0x3F81 goes down, between 0x3F81 and 0x3F82 up.
  EXPECT_EQ(float_to_bf16_bits(float_of(0x3F808000)), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x3F818000)), 0x3F82);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x3F808001)), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x3F807FFF)), 0x3F80);
  // Overflow rounds to infinity; infinities stay.
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xFF80);
  // Subnormals keep their top bits.
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00010000)), 0x0001);
  EXPECT_EQ(bf16_bits_to_float(0x0001), float_of(0x00010000));
}

TEST(DType, Bf16NanStaysNan) {
  // A NaN whose payload is only in the low bits must not truncate to infinity.
  for (uint32_t u : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    const uint16_t b = float_to_bf16_bits(float_of(u));
    EXPECT_TRUE(std::isnan(bf16_bits_to_float(b))) << std::hex << u << " -> " << b;
    EXPECT_EQ(b & 0x8000, (u >> 16) & 0x8000);
  }
}

TEST(DType, Bf16RoundTripAllBitPatterns) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_bits_to_float(static_cast<uint16_t>(b));
    EXPECT_EQ(bits_of(f), b << 16);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(f))));
    } else {
      ASSERT_EQ(float_to_bf16_bits(f), b);
    }
  }
}

// ----- fp16 ----------------------------------------------------------------------------------

TEST(DType, F16KnownValues) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7BFF);  // below the halfway point to 2^16
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);  // the tie rounds to even: infinity
  EXPECT_EQ(float_to_f16_bits(1e6f), 0x7C00);
  EXPECT_EQ(float_to_f16_bits(-1e6f), 0xFC00);
  EXPECT_EQ(float_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  // Ties to even in the normal range: ulp at 1.0 is 2^-10.
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Subnormals: units of 2^-24.
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(float_to_f16_bits(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie: 1.5 -> 2
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);      // smallest normal
  // Halfway between the largest subnormal and the smallest normal: rounds up to even 0x400.
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(float_to_f16_bits(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(f16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_float(0x03FF), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_bits_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_bits_to_float(0xFC00), -std::numeric_limits<float>::infinity());
}

TEST(DType, F16NanStaysNan) {
  for (uint32_t u : {0x7FC00000u, 0x7F800001u, 0xFFC00000u}) {
    const uint16_t h = float_to_f16_bits(float_of(u));
    EXPECT_TRUE(std::isnan(f16_bits_to_float(h))) << std::hex << u << " -> " << h;
  }
  EXPECT_TRUE(std::isnan(f16_bits_to_float(0x7C01)));
  EXPECT_TRUE(std::isnan(f16_bits_to_float(0x7E00)));
}

TEST(DType, F16RoundTripAllBitPatterns) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7C00, 0x7C00u);
      EXPECT_NE(h & 0x3FF, 0u);
    } else {
      ASSERT_EQ(float_to_f16_bits(f), h) << "value " << f;
    }
  }
}

// Nearest finite 16-bit encoding by search in the table of all positive finite values
// (monotonic in their bits), ties to the even encoding; past max + half an ulp: infinity.
uint16_t oracle_round(float x, float (*decode)(uint16_t), uint16_t max_finite, uint16_t inf) {
  const double v = std::fabs(static_cast<double>(x));
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double max = decode(max_finite);
  const double overflow = max + (max - decode(max_finite - 1)) / 2;
  if (v > overflow || (v == overflow && (max_finite & 1))) return sign | inf;
  uint32_t lo = 0, hi = max_finite;  // find the largest code with value <= v
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (decode(static_cast<uint16_t>(mid)) <= v) lo = mid; else hi = mid - 1;
  }
  if (lo == max_finite) return static_cast<uint16_t>(sign | lo);
  const double below = decode(static_cast<uint16_t>(lo));
  const double above = decode(static_cast<uint16_t>(lo + 1));
  uint32_t pick = lo;
  if (v - below > above - v || (v - below == above - v && (lo & 1))) pick = lo + 1;
  return static_cast<uint16_t>(sign | pick);
}

TEST(DType, ConversionsMatchOracleOverManyFloats) {
  // A prime stride walks every exponent and many low-bit patterns (ties included below).
  for (uint64_t u = 0; u < 0x80000000ull; u += 7919) {
    for (uint32_t s : {0u, 0x80000000u}) {
      const float f = float_of(static_cast<uint32_t>(u) | s);
      if (std::isnan(f)) continue;
      ASSERT_EQ(float_to_f16_bits(f), oracle_round(f, f16_bits_to_float, 0x7BFF, 0x7C00))
          << std::hex << (u | s);
      ASSERT_EQ(float_to_bf16_bits(f), oracle_round(f, bf16_bits_to_float, 0x7F7F, 0x7F80))
          << std::hex << (u | s);
    }
  }
  // Exact ties and their neighbours around every fp16 value of a few binades.
  for (uint32_t h = 0; h < 0x7BFF; h += 3) {
    const float mid = static_cast<float>(
        (static_cast<double>(f16_bits_to_float(static_cast<uint16_t>(h))) +
         f16_bits_to_float(static_cast<uint16_t>(h + 1))) / 2);
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      ASSERT_EQ(float_to_f16_bits(f), oracle_round(f, f16_bits_to_float, 0x7BFF, 0x7C00))
          << "near code " << h;
    }
  }
}

// ----- buffers -------------------------------------------------------------------------------

TEST(DType, LoadStoreRoundTrip) {
  float f32[3];
  uint16_t h[3];
  store_from_double(f32, DType::f32, 1, 0.1);
  EXPECT_EQ(load_as_double(f32, DType::f32, 1), static_cast<double>(0.1f));
  store_from_double(h, DType::f16, 2, 0.1);
  EXPECT_EQ(h[2], float_to_f16_bits(0.1f));
  EXPECT_EQ(load_as_double(h, DType::f16, 2), f16_bits_to_float(h[2]));
  store_from_double(h, DType::bf16, 0, -3.0);
  EXPECT_EQ(h[0], 0xC040);
  EXPECT_EQ(load_as_double(h, DType::bf16, 0), -3.0);
  store_from_double(h, DType::f16, 0, 1e10);
  EXPECT_EQ(h[0], 0x7C00);
}

TEST(DType, StoreFromDoubleRoundsOnce) {
  // Just above an fp16 tie. Rounding to float first would land exactly on the tie and then
  // round down to even; rounding once correctly goes up.
  uint16_t h = 0;
  store_from_double(&h, DType::f16, 0, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40));
  EXPECT_EQ(h, 0x3C01);
  store_from_double(&h, DType::f16, 0, 1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40));
  EXPECT_EQ(h, 0x3C00);
  store_from_double(&h, DType::bf16, 0, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40));
  EXPECT_EQ(h, 0x3F81);
  store_from_double(&h, DType::bf16, 0, -(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)));
  EXPECT_EQ(h, 0xBF81);
  // An exact tie still goes to even.
  store_from_double(&h, DType::bf16, 0, 1.0 + std::ldexp(1.0, -8));
  EXPECT_EQ(h, 0x3F80);
  store_from_double(&h, DType::f16, 0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(f16_bits_to_float(h)));
}

TEST(DType, FillNanPatterns) {
  float f[4] = {1, 2, 3, 4};
  fill_nan(f, DType::f32, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bits_of(f[i]), 0x7FC00000u);
  EXPECT_EQ(f[3], 4.0f);  // count respected
  uint16_t h[3] = {1, 1, 1};
  fill_nan(h, DType::f16, 2);
  EXPECT_EQ(h[0], 0x7E00);
  EXPECT_EQ(h[1], 0x7E00);
  EXPECT_EQ(h[2], 1);
  fill_nan(h, DType::bf16, 3);
  for (uint16_t b : h) EXPECT_EQ(b, 0x7FC0);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(load_as_double(h, DType::bf16, i)));
}

}  // namespace
}  // namespace kbench
