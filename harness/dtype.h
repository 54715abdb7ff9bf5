// Element types kbench knows, with host-side conversions. Device code has its own
// conversions in kernels/common/dtypes.h; both round to nearest even.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kbench {

enum class DType { f32, f16, bf16 };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16};

std::string_view dtype_name(DType t);            // "fp32", "fp16", "bf16"
DType parse_dtype(std::string_view name);        // throws UsageError naming the value
std::vector<DType> parse_dtype_list(std::string_view csv);  // "bf16,fp16"
size_t dtype_size(DType t);

// Unit roundoff (half an ulp at 1.0): 2^-24, 2^-11, 2^-8.
double dtype_epsilon(DType t);

// Host conversions between float and the 16-bit storage formats.
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t b);
uint16_t float_to_f16_bits(float f);
float f16_bits_to_float(uint16_t h);

// Reads element i of a buffer of type t as double.
double load_as_double(const void* data, DType t, size_t i);
// Writes v rounded to type t into element i.
void store_from_double(void* data, DType t, size_t i, double v);
// A quiet NaN in the given type, used to poison outputs.
void fill_nan(void* data, DType t, size_t count);

}  // namespace kbench
