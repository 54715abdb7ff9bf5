// Shape text: "MxN" or "MxNxK". Parsed by hand (not std::stoll) so that signs, spaces,
// exponents and overflow are all rejected instead of silently accepted or wrapped.
#include "harness/shape.h"

#include <limits>

#include "harness/errors.h"

namespace kbench {

namespace {

[[noreturn]] void bad_shape(std::string_view text, const std::string& why) {
  throw UsageError("bad shape '" + std::string(text) + "': " + why);
}

constexpr const char* kExpected = "extents must be positive integers, as MxN or MxNxK";

// One extent: decimal digits only, 1..kMaxExtent. Checks the bound digit by digit, so a
// twenty-digit number is rejected before it can overflow.
int64_t parse_extent(std::string_view digits, std::string_view whole) {
  if (digits.empty()) bad_shape(whole, kExpected);
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') bad_shape(whole, kExpected);
    v = v * 10 + (c - '0');
    if (v > kMaxExtent) {
      bad_shape(whole, "extent " + std::string(digits) + " exceeds the maximum " +
                           std::to_string(kMaxExtent));
    }
  }
  if (v == 0) bad_shape(whole, kExpected);
  return v;
}

}  // namespace

std::string shape_to_string(const Shape& s) {
  std::string out = std::to_string(s.m) + "x" + std::to_string(s.n);
  if (s.k != 0) out += "x" + std::to_string(s.k);
  return out;
}

Shape parse_shape(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t x = text.find('x', start);
    parts.push_back(text.substr(start, x == std::string_view::npos ? x : x - start));
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  if (parts.size() != 2 && parts.size() != 3) bad_shape(text, kExpected);

  Shape s;
  s.m = parse_extent(parts[0], text);
  s.n = parse_extent(parts[1], text);
  if (parts.size() == 3) s.k = parse_extent(parts[2], text);
  return s;
}

std::vector<Shape> parse_shape_list(std::string_view csv) {
  std::vector<Shape> out;
  size_t start = 0;
  while (true) {
    const size_t comma = csv.find(',', start);
    const std::string_view item =
        csv.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (item.empty()) {
      throw UsageError("bad shape list '" + std::string(csv) +
                       "': empty item (expected e.g. 4096x8192,1024x1024)");
    }
    out.push_back(parse_shape(item));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

int64_t checked_mul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return -1;
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return -1;
  return a * b;
}

}  // namespace kbench
