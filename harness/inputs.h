// Seeded random inputs: the bytes a kernel reads and, element for element, the same values
// as float64 for the reference (rounded to the tensor's dtype first, so both see one input).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/dtype.h"
#include "harness/registry.h"

namespace kbench {

struct HostTensor {
  DType dtype = DType::f32;
  int64_t numel = 0;
  std::vector<unsigned char> bytes;  // device layout
  std::vector<double> values;        // the same values, exactly, as double
};

DType tensor_dtype(const TensorSpec& spec, DType run_dtype);

// What the tensors marked edge_values hold (`--values`): the normal random draw, the same
// scaled to |x| ~ 1e3 (overflow in fp16 intermediates, x^3 in polynorm), or the normal draw
// with every fourth row (rows 0, 4, 8, ...) all zero (eps alone keeps rstd finite), or the
// normal draw plus a row offset of 4^(row % 5) (1 to 256: a mean up to 256 times the spread,
// where a variance taken as E[x^2] - mean^2 in fp32 would lose its digits).
enum class InputValues { normal, large, zero_rows, offset_rows };
constexpr double kLargeValueScale = 1e3;

InputValues parse_input_values(const std::string& name);  // UsageError naming a bad one
const char* input_values_name(InputValues v);             // normal | large | zero-rows | offset-rows

// A seed for one tensor of one point, derived from the run's seed, so every point's inputs
// are reproducible on their own (a point does not depend on which points ran before it).
uint64_t tensor_seed(uint64_t run_seed, const std::string& op, DType t, const Shape& s,
                     size_t tensor_index);

// Values from spec.init, never exactly zero for Init::normal's bulk (zeros hide unwritten
// outputs). Generated in parallel chunks with per-chunk generators: deterministic for a seed.
HostTensor make_input(const TensorSpec& spec, DType run_dtype, const Shape& shape,
                      uint64_t seed, InputValues values = InputValues::normal);

// Host bytes per element a point needs for its inputs and reference outputs (to refuse
// points that would not fit in host memory before allocating anything).
double host_bytes_per_element(DType t);

}  // namespace kbench
