#include "harness/inputs.h"

#include <cmath>

#include "harness/errors.h"
#include "harness/parallel.h"

namespace kbench {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& text, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Uniform in (0, 1]: never 0, so log() below is finite.
double uniform01(uint64_t& state) { return ((splitmix64(state) >> 11) + 1) * 0x1.0p-53; }

// Standard normal by Box-Muller.
double normal(uint64_t& state) {
  const double u1 = uniform01(state), u2 = uniform01(state);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

constexpr int64_t kChunk = 1 << 16;

}  // namespace

DType tensor_dtype(const TensorSpec& spec, DType run_dtype) {
  return spec.type == TensorType::f32 ? DType::f32 : run_dtype;
}

uint64_t tensor_seed(uint64_t run_seed, const std::string& op, DType t, const Shape& s,
                     size_t tensor_index) {
  const std::string key = op + "/" + std::string(dtype_name(t)) + "/" + shape_to_string(s) +
                          "/" + std::to_string(tensor_index);
  uint64_t state = run_seed ^ fnv1a(key);
  return splitmix64(state);
}

InputValues parse_input_values(const std::string& name) {
  if (name == "normal") return InputValues::normal;
  if (name == "large") return InputValues::large;
  if (name == "zero-rows") return InputValues::zero_rows;
  if (name == "offset-rows") return InputValues::offset_rows;
  throw UsageError("unknown --values '" + name + "' (valid: normal, large, zero-rows, offset-rows)");
}

const char* input_values_name(InputValues v) {
  switch (v) {
    case InputValues::large: return "large";
    case InputValues::zero_rows: return "zero-rows";
    case InputValues::offset_rows: return "offset-rows";
    case InputValues::normal: break;
  }
  return "normal";
}

HostTensor make_input(const TensorSpec& spec, DType run_dtype, const Shape& shape,
                      uint64_t seed, InputValues values) {
  const bool edge = spec.edge_values;
  const double scale = edge && values == InputValues::large ? kLargeValueScale : 1.0;
  // Zero rows only where the tensor has rows: an M x N tensor.
  const bool has_rows = spec.numel(shape) == shape.m * shape.n;
  const bool zero_rows = edge && values == InputValues::zero_rows && has_rows;
  const bool offset_rows = edge && values == InputValues::offset_rows && has_rows;
  HostTensor t;
  t.dtype = tensor_dtype(spec, run_dtype);
  t.numel = spec.numel(shape);
  t.bytes.resize(static_cast<size_t>(t.numel) * dtype_size(t.dtype));
  t.values.resize(static_cast<size_t>(t.numel));
  const int64_t chunks = (t.numel + kChunk - 1) / kChunk;
  parallel_for(chunks, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      uint64_t state = seed ^ (static_cast<uint64_t>(c) * 0xd1b54a32d192ed03ull);
      const int64_t end = std::min(t.numel, (c + 1) * kChunk);
      for (int64_t i = c * kChunk; i < end; ++i) {
        const double z = normal(state);
        double v = spec.init == Init::around_one ? 1.0 + 0.1 * z : z * scale;
        if (zero_rows && (i / shape.n) % 4 == 0) v = 0;
        if (offset_rows) v += std::ldexp(1.0, 2 * static_cast<int>((i / shape.n) % 5));
        store_from_double(t.bytes.data(), t.dtype, static_cast<size_t>(i), v);
        t.values[i] = load_as_double(t.bytes.data(), t.dtype, static_cast<size_t>(i));
      }
    }
  });
  return t;
}

double host_bytes_per_element(DType t) {
  return sizeof(double) + static_cast<double>(dtype_size(t));
}

}  // namespace kbench
