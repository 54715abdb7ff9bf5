// Test-only rmsnorm impls that must fail the check: they run the real v1_naive and then
// damage an output element, most the last (test_right_once only from its second launch on: a kernel
// broken by the state its earlier launches left, which only a check on a later launch sees;
// test_unsteady from its second launch on too, but by one ulp, within tolerance: a kernel
// whose bits change from launch to launch, which only the launches' bitwise comparison sees;
// test_stale writes its previous launch's outputs: right after launches on the same inputs,
// so seen only where the launch before the second check ran on other values; test_intermittent
// leaves it unwritten on one launch in seven, seen only by enough later checks;
// test_zeroed_workspace is right only on a zeroed workspace, seen because the harness poisons it;
// test_past_output_end, test_before_output_start, test_past_workspace_end and test_writes_input
// write where they must not, seen by the guards beside the buffers and the inputs' check;
// test_writes_input_on_second_launch too, but only on its second launch, which in `check` is
// the unchecked one on other values).
// Registered only in the GPU test program.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "harness/registry.h"
#include "kernels/common/compat.h"

namespace kbench {
namespace {

void run_real(const LaunchArgs& args) {
  for (const ImplDescriptor* impl : Registry::instance().impls_of("rmsnorm"))
    if (impl->name == "v1_naive") return impl->launch(args);
}

void* last_element(const LaunchArgs& args) {
  const size_t size = dtype_size(args.dtype);
  return static_cast<char*>(args.outputs[0]) + (args.shape.m * args.shape.n - 1) * size;
}

// Adds 1 to the last element: a wrong value, well outside any tolerance.
void off_by_one_last(const LaunchArgs& args) {
  run_real(args);
  std::vector<unsigned char> value(dtype_size(args.dtype));
  KB_GPU_CHECK(gpuMemcpy(value.data(), last_element(args), value.size(), gpuMemcpyDeviceToHost));
  store_from_double(value.data(), args.dtype, 0, load_as_double(value.data(), args.dtype, 0) + 1.0);
  KB_GPU_CHECK(gpuMemcpy(last_element(args), value.data(), value.size(), gpuMemcpyHostToDevice));
}

// Leaves the last element as the harness poisoned it (all-ones bytes are NaN in every dtype).
void unwritten_last(const LaunchArgs& args) {
  run_real(args);
  KB_GPU_CHECK(gpuMemset(last_element(args), 0xff, dtype_size(args.dtype)));
}

// Flips the lowest bit of y's last element in the upper half of its binade (|y| = f * 2^e with
// f in [1.5, 2)): one ulp, which there is at most 4/3 units of roundoff, so with the kernel's
// own rounding (at most 2/3 of a unit there) it stays within every rmsnorm tolerance (2.5
// units) and the value check passes it. In the lower half one ulp is up to 2 units, and the
// two together can pass 2.5: the GPU tests' fresh inputs once put the last element, fp16, at
// 1.094 against 1.0934.
void one_ulp_off(const LaunchArgs& args) {
  run_real(args);
  const size_t size = dtype_size(args.dtype);
  std::vector<unsigned char> y(args.shape.m * args.shape.n * size);
  KB_GPU_CHECK(gpuMemcpy(y.data(), args.outputs[0], y.size(), gpuMemcpyDeviceToHost));
  for (size_t i = y.size() / size; i-- > 0;) {
    int exponent = 0;
    if (std::frexp(std::fabs(load_as_double(y.data(), args.dtype, i)), &exponent) < 0.75) continue;
    unsigned char low = y[i * size] ^ 1;  // the element's lowest byte (little-endian)
    KB_GPU_CHECK(gpuMemcpy(static_cast<char*>(args.outputs[0]) + i * size, &low, 1,
                           gpuMemcpyHostToDevice));
    return;
  }
}

int later_launches = 0;  // launches of the impls below since reset_test_later_launches()

// Right on its first launch, then unwritten_last.
void right_once(const LaunchArgs& args) {
  if (later_launches++ == 0) return run_real(args);
  unwritten_last(args);
}

// Right on every launch, but not bitwise the first launch's from the second on.
void unsteady(const LaunchArgs& args) {
  if (later_launches++ == 0) return run_real(args);
  one_ulp_off(args);
}

// Its previous launch's y from its second launch on: what a kernel that reads an earlier
// launch's state (a stale sum, a partial row) in place of its own would write.
std::vector<unsigned char> previous_y;
void stale(const LaunchArgs& args) {
  run_real(args);
  std::vector<unsigned char> y(args.shape.m * args.shape.n * dtype_size(args.dtype));
  KB_GPU_CHECK(gpuMemcpy(y.data(), args.outputs[0], y.size(), gpuMemcpyDeviceToHost));
  if (later_launches++ > 0 && previous_y.size() == y.size())
    KB_GPU_CHECK(gpuMemcpy(args.outputs[0], previous_y.data(), y.size(), gpuMemcpyHostToDevice));
  previous_y = std::move(y);
}

// Right but on every seventh launch, where unwritten_last: a kernel wrong on one launch in many
// (a race that rarely loses).
void intermittent(const LaunchArgs& args) {
  if (++later_launches % 7 != 0) return run_real(args);
  unwritten_last(args);
}

// Right only where the first word of its workspace is zero, which it leaves zero: a kernel
// that counts in a workspace it assumes zeroed and zeroes again for its next launch. Every
// launch after its first finds a zero, so only a poisoned workspace on the first shows it.
void zeroed_workspace(const LaunchArgs& args) {
  uint32_t count = 0;
  KB_GPU_CHECK(gpuMemcpy(&count, args.workspace, sizeof count, gpuMemcpyDeviceToHost));
  if (count == 0)
    run_real(args);
  else
    unwritten_last(args);
  KB_GPU_CHECK(gpuMemset(args.workspace, 0, sizeof count));
}

// Right, but each writes where an impl must not, leaving its outputs right: one element past
// the end of y (a vector tail stored whole, a row index one too far), one before its start
// (row -1), the word past the end of its 4-byte workspace, or x's last element (an input used
// as scratch, zeroed once read).
void past_output_end(const LaunchArgs& args) {
  run_real(args);
  const size_t size = dtype_size(args.dtype);
  KB_GPU_CHECK(gpuMemset(static_cast<char*>(last_element(args)) + size, 0, size));
}

void before_output_start(const LaunchArgs& args) {
  run_real(args);
  const size_t size = dtype_size(args.dtype);
  KB_GPU_CHECK(gpuMemset(static_cast<char*>(args.outputs[0]) - size, 0, size));
}

void past_workspace_end(const LaunchArgs& args) {
  run_real(args);
  KB_GPU_CHECK(gpuMemset(static_cast<char*>(args.workspace) + args.workspace_bytes, 0, sizeof(uint32_t)));
}

void writes_input(const LaunchArgs& args) {
  run_real(args);
  const size_t size = dtype_size(args.dtype);
  char* x = static_cast<char*>(const_cast<void*>(args.inputs[0]));
  KB_GPU_CHECK(gpuMemset(x + (args.shape.m * args.shape.n - 1) * size, 0, size));
}

// writes_input on its second launch only: in `check` the launch on other values before the
// first later check, whose own inputs are right again.
void writes_input_on_second_launch(const LaunchArgs& args) {
  if (later_launches++ == 1) return writes_input(args);
  run_real(args);
}

// A test-only rmsnorm impl; `workspace`: it uses a 4-byte workspace.
void register_test_impl(const char* name, void (*launch)(const LaunchArgs&), bool workspace = false) {
  ImplBuilder impl = register_impl("rmsnorm", name).launch(launch).note("test only");
  if (workspace) impl.workspace([](const Shape&, DType, int) -> size_t { return sizeof(uint32_t); });
}

}  // namespace

void reset_test_later_launches() { later_launches = 0; }

KBENCH_REGISTER(broken_impls) {
  register_test_impl("test_off_by_one_last", off_by_one_last);
  register_test_impl("test_unwritten_last", unwritten_last);
  register_test_impl("test_right_once", right_once);
  register_test_impl("test_unsteady", unsteady);
  register_test_impl("test_stale", stale);
  register_test_impl("test_intermittent", intermittent);
  register_test_impl("test_zeroed_workspace", zeroed_workspace, true);
  register_test_impl("test_past_output_end", past_output_end);
  register_test_impl("test_before_output_start", before_output_start);
  register_test_impl("test_past_workspace_end", past_workspace_end, true);
  register_test_impl("test_writes_input", writes_input);
  register_test_impl("test_writes_input_on_second_launch", writes_input_on_second_launch);
}

}  // namespace kbench
