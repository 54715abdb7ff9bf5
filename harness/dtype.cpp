// Host-side dtype names, parsing and conversions. The 16-bit conversions are written out bit
// by bit (no compiler half types) so they behave the same with every host compiler nvcc or
// hipcc may use; all round to nearest even, like the device helpers.
#include "harness/dtype.h"

#include <cmath>
#include <limits>

#include "harness/errors.h"

namespace kbench {

namespace {

struct NamedDType {
  std::string_view name;
  DType type;
};

// Canonical names first; the rest are aliases people type.
constexpr NamedDType kNames[] = {
    {"fp32", DType::f32},     {"fp16", DType::f16},    {"bf16", DType::bf16},
    {"float32", DType::f32},  {"f32", DType::f32},     {"float16", DType::f16},
    {"f16", DType::f16},      {"half", DType::f16},    {"bfloat16", DType::bf16},
};

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds x right by `shift` bits (1..31) to nearest, ties to even.
uint32_t shift_round_even(uint32_t x, int shift) {
  const uint32_t kept = x >> shift;
  const uint32_t rest = x & ((uint32_t{1} << shift) - 1);
  const uint32_t half = uint32_t{1} << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
}

// double -> float rounding to odd. Rounding to odd first and then to nearest-even in a format
// with at least two fewer significand bits gives the same result as rounding once, so
// store_from_double does not double-round (float has 24 bits; fp16 11, bf16 8).
float double_to_float_round_odd(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || std::isinf(f) || static_cast<double>(f) == v) return f;
  // The two floats around v: one has an even significand, one odd. Pick the odd one.
  if ((float_bits(f) & 1) == 0) {
    f = std::nextafter(f, v > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                     : -std::numeric_limits<float>::infinity());
  }
  return f;
}

}  // namespace

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (const auto& n : kNames) {
    if (n.name == name) return n.type;
  }
  throw UsageError("unknown dtype '" + std::string(name) + "' (valid: fp32, fp16, bf16)");
}

std::vector<DType> parse_dtype_list(std::string_view csv) {
  std::vector<DType> out;
  size_t start = 0;
  while (true) {
    const size_t comma = csv.find(',', start);
    const std::string_view item = csv.substr(start, comma == std::string_view::npos
                                                        ? std::string_view::npos
                                                        : comma - start);
    if (item.empty()) {
      throw UsageError("bad dtype list '" + std::string(csv) +
                       "': empty item (expected e.g. bf16,fp16)");
    }
    const DType t = parse_dtype(item);
    bool seen = false;
    for (DType d : out) seen = seen || d == t;
    if (!seen) out.push_back(t);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

double dtype_epsilon(DType t) {
  switch (t) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
  }
  return 0;
}

uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = float_bits(f);
  // NaN: keep the sign, force a quiet NaN (truncating could turn a NaN into an infinity).
  if ((u & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((u >> 16) | 0x0040);
  // bf16 is the top half of a float: round the low 16 bits away. A carry out of the
  // significand bumps the exponent, which is exactly right (and overflows to inf at the top).
  const uint32_t rounding = 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float bf16_bits_to_float(uint16_t b) { return bits_float(uint32_t{b} << 16); }

uint16_t float_to_f16_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFF;

  if (abs > 0x7F800000) return sign | 0x7E00;  // NaN -> quiet NaN
  if (abs == 0x7F800000) return sign | 0x7C00;  // inf

  const int exp16 = static_cast<int>(abs >> 23) - 127 + 15;
  if (exp16 >= 31) return sign | 0x7C00;  // >= 2^16: beyond fp16's range even before rounding

  if (exp16 >= 1) {
    // Normal: keep 10 of the 23 significand bits. A carry from rounding ripples into the
    // exponent; from exponent 30 it becomes 0x7C00 = inf, the correct overflow.
    const uint32_t h = ((static_cast<uint32_t>(exp16) << 10) | ((abs & 0x7FFFFF) >> 13));
    const uint32_t rest = abs & 0x1FFF;
    const uint32_t up = (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ? 1 : 0;
    return static_cast<uint16_t>(sign | (h + up));
  }

  // Subnormal fp16 (units of 2^-24) or zero. Below 2^-25 everything rounds to zero, and
  // 2^-25 itself is a tie that goes to the even value 0.
  if (abs <= 0x33000000) return sign;
  // Value = significand * 2^(exp - 23) with the implicit bit, i.e. significand * 2^(exp16 - 14)
  // units of 2^-24: shift right by 14 - exp16 (14..24). Rounding up to 0x400 yields the
  // smallest normal, which is again the right encoding.
  const uint32_t significand = (abs & 0x7FFFFF) | 0x800000;
  return static_cast<uint16_t>(sign | shift_round_even(significand, 14 - exp16));
}

float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7F800000 | (mant << 13));  // inf / NaN
  return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

double load_as_double(const void* data, DType t, size_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(data)[i];
    case DType::f16: return f16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::bf16: return bf16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void store_from_double(void* data, DType t, size_t i, double v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      break;
    case DType::f16:
      static_cast<uint16_t*>(data)[i] = float_to_f16_bits(double_to_float_round_odd(v));
      break;
    case DType::bf16:
      static_cast<uint16_t*>(data)[i] = float_to_bf16_bits(double_to_float_round_odd(v));
      break;
  }
}

void fill_nan(void* data, DType t, size_t count) {
  if (t == DType::f32) {
    const float nan = bits_float(0x7FC00000);
    auto* p = static_cast<float*>(data);
    for (size_t i = 0; i < count; ++i) p[i] = nan;
    return;
  }
  const uint16_t nan = t == DType::f16 ? 0x7E00 : 0x7FC0;
  auto* p = static_cast<uint16_t*>(data);
  for (size_t i = 0; i < count; ++i) p[i] = nan;
}

}  // namespace kbench
