// Problem shapes and the parsing of `--shape 4096x8192,...`.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kbench {

// m rows by n columns (row-major, n innermost); k for ops with a third extent (GEMM).
// k == 0 means the op has no third extent.
struct Shape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  friend bool operator==(const Shape&, const Shape&) = default;
};

std::string shape_to_string(const Shape& s);    // "4096x8192" or "4096x8192x1024"

// Parses "MxN" or "MxNxK": positive decimal integers, each at most kMaxExtent.
// Throws UsageError naming the bad text ("0x4", "4x", "-1x4", "abc", overflow).
Shape parse_shape(std::string_view text);
std::vector<Shape> parse_shape_list(std::string_view csv);

inline constexpr int64_t kMaxExtent = int64_t{1} << 40;

// a*b, or -1 when the product overflows int64.
int64_t checked_mul(int64_t a, int64_t b);

}  // namespace kbench
