// Correctness: compares one device output (in its dtype) with the float64 reference.
// An element passes when it is finite wherever the reference is finite and
// |out - ref| <= atol * scale + rtol * |ref| + step, scale 1 unless the op gives per-element
// scales (OpDescriptor::atol_scale), step the spacing of the output dtype's subnormals (fp16:
// 2^-24; what rounding a tiny value costs, beyond any relative tolerance). NaN never passes, so an output element the kernel did not write
// (the harness poisons outputs with NaN) fails.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "harness/dtype.h"
#include "harness/registry.h"

namespace kbench {

struct CheckResult {
  bool pass = true;
  size_t bad_count = 0;
  size_t first_bad = 0;      // index of the first failing element (when !pass)
  double first_bad_out = 0;  // its value
  double first_bad_ref = 0;  // and the reference's
  double max_abs_err = 0;
  double max_rel_err = 0;  // |out-ref| / |ref| over elements with ref != 0
  double rel_l2_err = 0;   // ||out-ref|| / ||ref|| (||out-ref|| if ||ref|| == 0)
};

CheckResult check_output(const void* out, DType t, const std::vector<double>& ref,
                         Tolerance tol, const std::vector<double>* atol_scale = nullptr);

// Combines several outputs' results: pass if all pass, errors are the maxima.
CheckResult combine(const std::vector<CheckResult>& parts);

// One line for a failed output: "y: 3 of 4096 elements out of tolerance, first at 17: got nan,
// want 0.25".
std::string describe_failure(const std::string& output_name, const CheckResult& r,
                             size_t numel);

// Where two launches' copies of one output (numel elements of dtype t each) differ bit for bit:
// how many elements, and the first. Bits, not values: -0 against +0, or NaNs of different
// payloads, differ too.
struct BitwiseDiff {
  size_t count = 0;
  size_t first = 0;  // index of the first differing element (when count > 0)
};
BitwiseDiff bitwise_diff(const void* first_launch, const void* later_launch, size_t numel, DType t);

// One line for an output that differs: "y: 1 of 4096 elements not bit for bit the first
// launch's, first at 17: 0.25, then 0.25390625" (values to 9 digits: floats told apart).
std::string describe_bitwise_diff(const std::string& output_name, const BitwiseDiff& d,
                                  size_t numel, const void* first_launch, const void* later_launch,
                                  DType t);

// One line for an input a launch changed: "x: 1 of 4096 elements changed by the launch, first
// at 17: 0.25, then 0" (an impl must leave its inputs as they were).
std::string describe_changed_input(const std::string& input_name, const BitwiseDiff& d,
                                   size_t numel, const void* before, const void* after, DType t);

// The bytes beside a buffer that a launch must leave as the harness filled them (each `fill`):
// how many it changed, the first and the last, as "y: 2 of the 4096 bytes after its end
// written, first at byte 0 after it" or "y: 1 of the 4096 bytes before its start written,
// nearest at byte 1 before it" (describe_guard; "" where none changed). Bytes after an end are
// counted from 0 (the one an overrun writes first), bytes before a start from 1 (start - 1).
struct GuardDiff {
  size_t count = 0;
  size_t first = 0;
  size_t last = 0;
};
enum class GuardSide { before, after };
GuardDiff guard_diff(const unsigned char* guard, size_t bytes, unsigned char fill);
std::string describe_guard(const std::string& buffer_name, const GuardDiff& d, size_t bytes,
                           GuardSide side);

}  // namespace kbench
