// Every registered impl x dtype x edge shape against its float64 reference (or skipped, where
// the impl's rejects() says it takes no such rows), through the same
// runner `kbench check` uses: fresh random inputs each run (the seed is printed, and each failure
// prints the `kbench check` command that reruns it on the same inputs), outputs
// poisoned with NaN before the launch. A new impl is tested without a new test.
#include <gtest/gtest.h>

#include <random>
#include <utility>

#include "harness/runner.h"
#include "tests/gpu/gpu_main.h"

namespace kbench {

void reset_test_later_launches();  // tests/gpu/broken_impls.cpp

namespace {

uint64_t fresh_seed() {
  static const uint64_t seed = [] {
    const uint64_t s = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    std::cout << "input seed: " << s << " (pass --seed to kbench check to reproduce)\n";
    return s;
  }();
  return seed;
}

struct Collect : Reporter {
  std::vector<ResultRow> rows;
  void add(const ResultRow& r) override { rows.push_back(r); }
};

// N = 1, 3 (not a vector width), 127, 4097, 8193 (odd, past a power of two), 65536 and
// 131072 (register capacity and beyond); M = 1, 7 and 65537 (more rows than a grid's y).
// M = 65537 goes with the narrow rows, where rows per block and grid limits matter; with
// 4097 or 8193 columns it cost minutes of host time per op (float64 references of 0.5 G
// elements). 4099 x 4097 keeps the case of wide, unaligned rows with many rows per block.
// Aligned rows a little past each staged-row capacity (kernels/common/staged_rows.cuh: a
// 512-thread block with 1, 2 or 4 packs per thread, clusters of 2, 4, 8 blocks) with several
// rows per block or cluster: 2000 x 1032, 64 x 5128, 7 x 8200, 300 x 16392, 70 x 65536; and
// rows between (layernorm's forward on one block at 5 packs, layernorm_bwd over groups of 5,
// 8 and 10 blocks, polynorm_bwd over 10, and the forwards over 4 or 8 blocks at 5/8 of their
// packs, in bf16 each block's slice ending inside a warp: staged_config.h): 9 x 18440,
// 5 x 24584, 40 x 40000 (and fused_mul_polynorm_bwd over 10 blocks at 2 packs), 3 x 80000;
// a forward's rows over a cluster at 3/4 of its packs (with_cluster_packs) and the backwards'
// over 12 blocks (layernorm_bwd, polynorm_bwd; fused_mul_polynorm_bwd at 2 packs): 11 x 49152.
// Pipelined rows over several blocks read into registers two at a time (staged_rows.cuh's
// KBENCH_PIPELINED_ROW_IN_REGS), with more rows than a step holds, so each team passes its
// registers on from row to row: 130 x 32768 (layernorm over 4 blocks; with fast memory on one
// block at 8 packs, w and b in registers), 125 x 40000 (rmsnorm's 5/8 rows over 4 blocks);
// 70 x 65536 does polynorm's.
// Rows one block's teams of 32 to 256 threads hold at 8 packs per thread (the one-tensor
// forwards at 2K-16K bf16; layernorm's w and b in registers there with fast memory): 17 x 2048,
// 5 x 16384.
// Rows a warp holds whole (layernorm v5: N <= 1024, a multiple of the pack), full and not:
// 7 x 1024, 33 x 1000, 65537 x 8.
// Full rows of the bulk-rows skeleton (kernels/common/bulk_rows.cuh: 4 packs per thread of a
// 128-thread team in bf16, 256 in fp32; 8 packs of a 128-thread team in bf16, polynorm v5 and
// fused_mul_polynorm v5) with more rows per block than it has stages, so each stage is refilled
// and its barrier's phase turns: 4099 x 4096, 2000 x 8192; and of its fitted teams (5 warps in
// 16-bit, 10 in fp32; fused_add_rmsnorm, layernorm, fused_mul_polynorm), 2400 x 5120; and of
// 512-thread teams whose last rows are claimed, with more rows than their stages hold
// (fused_add_rmsnorm; fused_mul_polynorm with fast memory), and polynorm's claimed 256-thread
// teams there (two a SM: fewer rows than their stages): 500 x 16384; and polynorm's fitted
// register-row teams of 3, 5 and 6 warps (16-bit; polynorm_math.h): 9 x 3072, 2400 x 5120,
// 5 x 6144, with 3 x 7168 beside them (7 warps: the power-of-two team).
std::vector<Shape> edge_shapes() {
  std::vector<Shape> shapes;
  for (int64_t m : {1, 7})
    for (int64_t n : {1, 3, 127, 4097, 8193}) shapes.push_back({m, n});
  for (int64_t n : {1, 3, 127}) shapes.push_back({65537, n});
  shapes.push_back({4099, 4097});
  for (int64_t m : {1, 7}) shapes.push_back({m, 65536});
  shapes.push_back({3, 131072});
  for (Shape s : {Shape{2000, 1032}, Shape{64, 5128}, Shape{7, 8200}, Shape{300, 16392},
                  Shape{70, 65536}, Shape{9, 18440}, Shape{5, 24584}, Shape{40, 40000},
                  Shape{3, 80000}, Shape{11, 49152}, Shape{130, 32768}, Shape{125, 40000},
                  Shape{17, 2048}, Shape{5, 16384}, Shape{7, 1024}, Shape{33, 1000},
                  Shape{65537, 8}, Shape{4099, 4096}, Shape{2000, 8192},
                  Shape{2400, 5120}, Shape{500, 16384}, Shape{9, 3072}, Shape{5, 6144},
                  Shape{3, 7168}}) {
    shapes.push_back(s);
  }
  return shapes;
}

bool is_test_only(const ImplDescriptor& impl) { return impl.name.rfind("test_", 0) == 0; }

// Inputs at the edges of the value range (--values): |x| ~ 1e3, all-zero rows and rows offset
// far from zero (layernorm's one-round variance must step aside there), on shapes
// that cover every kernel path (warp teams, block teams, two-pass rows, M = 1, a whole block's
// 8 packs: layernorm's 32768 with fast memory; a 128-thread team's 8 packs: 8192; the
// bulk-rows skeleton's full rows in a team of several warps, with layernorm's second round: 2048).
std::vector<Shape> edge_value_shapes() {
  return {{1, 1},     {7, 127},    {7, 4097},   {3, 8193},    {5, 8192},   {3, 32768},
          {3, 65536}, {1, 131072}, {4096, 256}, {300, 16392}, {33, 2048}};
}

struct Point {
  std::string op;
  DType dtype;
  Shape shape;
  InputValues values = InputValues::normal;
};

std::vector<Point> all_points() {
  std::vector<Point> points;
  for (const OpDescriptor* op : Registry::instance().ops())
    for (DType t : op->dtypes) {
      for (const Shape& s : edge_shapes()) points.push_back({op->name, t, s});
      for (InputValues v : {InputValues::large, InputValues::zero_rows, InputValues::offset_rows})
        for (const Shape& s : edge_value_shapes()) points.push_back({op->name, t, s, v});
    }
  return points;
}

std::vector<RunOptions> options_for(const Point& p, std::vector<std::string> impls) {
  RunOptions o;
  o.ops = {Registry::instance().find_op(p.op)};
  o.impls = std::move(impls);
  o.dtypes = {p.dtype};
  o.shapes = {p.shape};
  o.measure = false;
  o.seed = fresh_seed();
  o.values = p.values;
  return {o};
}

// The `kbench check` command that runs a point again on the same inputs (the same seed).
std::string reproduce_command(const Point& p, const std::string& impl) {
  return "kbench check " + p.op + " --impl " + impl + " --dtype " +
         std::string(dtype_name(p.dtype)) + " --shape " + shape_to_string(p.shape) +
         " --values " + input_values_name(p.values) + " --seed " + std::to_string(fresh_seed());
}

class EveryImpl : public testing::TestWithParam<Point> {};

TEST_P(EveryImpl, MatchesFloat64Reference) {
  const Point& p = GetParam();
  std::vector<std::string> impls;
  for (const ImplDescriptor* impl : Registry::instance().impls_of(p.op))
    if (!is_test_only(*impl)) impls.push_back(impl->name);
  ASSERT_FALSE(impls.empty()) << "op " << p.op << " has no impl";
  Collect rows;
  run_sweep(options_for(p, impls).front(), rows);
  ASSERT_EQ(rows.rows.size(), impls.size());
  for (const ResultRow& r : rows.rows) {
    // An impl may skip only the shapes its own rejects() names (layernorm v5: N <= 1024).
    const ImplDescriptor* impl = Registry::instance().select_impls(p.op, {r.impl}).front();
    const std::string expected = impl->rejects(p.shape, p.dtype) ? "skip" : "pass";
    EXPECT_EQ(r.status, expected) << r.op << "/" << r.impl << "/" << r.dtype << "/" << r.shape
                                  << " values=" << input_values_name(p.values) << ": " << r.note
                                  << " (max_abs_err " << r.max_abs_err << ")\n  reproduce: "
                                  << reproduce_command(p, r.impl);
  }
}

std::string point_name(const testing::TestParamInfo<Point>& info) {
  std::string name = info.param.op + "_" + std::string(dtype_name(info.param.dtype)) + "_" +
                     shape_to_string(info.param.shape);
  if (info.param.values == InputValues::large) name += "_large";
  if (info.param.values == InputValues::zero_rows) name += "_zero_rows";
  if (info.param.values == InputValues::offset_rows) name += "_offset_rows";
  return name;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryImpl, testing::ValuesIn(all_points()), point_name);

// The check itself must be able to fail: test-only impls (tests/gpu/broken_impls.cpp) that
// corrupt or skip one element are caught at every edge shape.
TEST(BrokenImpls, AreCaught) {
  for (const std::string name : {"test_off_by_one_last", "test_unwritten_last"})
    for (DType t : kAllDTypes)
      for (const Shape& s : {Shape{1, 1}, Shape{7, 4097}, Shape{65537, 3}}) {
        Collect rows;
        run_sweep(options_for({"rmsnorm", t, s}, {name}).front(), rows);
        ASSERT_EQ(rows.rows.size(), 1u);
        EXPECT_EQ(rows.rows[0].status, "fail") << name << " " << dtype_name(t) << " " << shape_to_string(s);
      }
}

// One point of a test-only impl that changes on a later launch, checked on its first launch and
// on `later_checks` later ones (`kbench check`; with `measure`, `kbench run`, the later checks
// after the timed launches).
ResultRow run_later_launch_impl(const std::string& impl, DType t, int later_checks, bool measure) {
  reset_test_later_launches();
  RunOptions o = options_for({"rmsnorm", t, Shape{7, 4097}}, {impl}).front();
  o.later_checks = later_checks;
  o.measure = measure;
  o.auto_calibrate = false;
  o.timing.samples = 3;
  Collect rows;
  run_sweep(o, rows);
  EXPECT_EQ(rows.rows.size(), 1u);
  return rows.rows.empty() ? ResultRow{} : rows.rows[0];
}

struct LaterLaunchMode {
  int later_checks;
  bool measure;
  const char* status;
  const char* note;  // in the row's note
};

// And the check on a later launch: test_right_once is right on its first launch only;
// test_stale writes its previous launch's outputs, which are right wherever the launch before
// ran on the same inputs (every timed launch does), so it is caught only because the launch
// before the second check runs on other values. Both pass when each point is checked once,
// and fail, out of tolerance, on the second launch or after timing (the first of two later
// checks, where two are asked for).
TEST(BrokenImpls, WrongOnALaterLaunchIsCaught) {
  for (const std::string impl : {"test_right_once", "test_stale"})
    for (const LaterLaunchMode& mode :
         {LaterLaunchMode{0, false, "pass", ""}, LaterLaunchMode{1, false, "fail", "on a second launch: y:"},
          LaterLaunchMode{1, true, "fail", "after timing: y:"},
          LaterLaunchMode{2, true, "fail", "after timing, later check 1 of 2: y:"}}) {
      const ResultRow r = run_later_launch_impl(impl, DType::bf16, mode.later_checks, mode.measure);
      EXPECT_EQ(r.status, mode.status) << impl << " later checks " << mode.later_checks << " measure " << mode.measure << ": " << r.note;
      EXPECT_NE(r.note.find(mode.note), std::string::npos) << r.note;
      if (mode.later_checks > 0) EXPECT_NE(r.note.find("out of tolerance"), std::string::npos) << r.note;
    }
}

// And a kernel wrong on one launch in many: test_intermittent is wrong on every seventh launch.
// `kbench check` launches it once for the first check, then twice for each later check (other
// values, then the checked launch), so its seventh launch is later check 3's: it passes with
// up to two later checks and fails on the third of three or more.
TEST(BrokenImpls, WrongOnOneLaunchInManyIsCaughtByMoreLaterChecks) {
  for (const LaterLaunchMode& mode :
       {LaterLaunchMode{0, false, "pass", ""}, LaterLaunchMode{1, false, "pass", ""},
        LaterLaunchMode{2, false, "pass", ""}, LaterLaunchMode{3, false, "fail", "on later check 3 of 3: y:"},
        LaterLaunchMode{10, false, "fail", "on later check 3 of 10: y:"}}) {
    const ResultRow r = run_later_launch_impl("test_intermittent", DType::bf16, mode.later_checks, false);
    EXPECT_EQ(r.status, mode.status) << "later checks " << mode.later_checks << ": " << r.note;
    EXPECT_NE(r.note.find(mode.note), std::string::npos) << r.note;
  }
}

// And bitwise: test_unsteady is within tolerance on every launch but one ulp off its first
// launch's bits from the second on (at an element where one ulp is within every tolerance).
// Only the comparison of the two launches catches it: the failing note names no tolerance,
// and the row's errors are the second launch's (within it).
TEST(BrokenImpls, BitsThatChangeFromLaunchToLaunchAreCaught) {
  for (DType t : kAllDTypes)
    for (const LaterLaunchMode& mode :
         {LaterLaunchMode{0, false, "pass", ""},
          LaterLaunchMode{1, false, "fail", "on a second launch: y: 1 of 28679 elements not bit for bit"},
          LaterLaunchMode{1, true, "fail", "after timing: y: 1 of 28679 elements not bit for bit"}}) {
      const ResultRow r = run_later_launch_impl("test_unsteady", t, mode.later_checks, mode.measure);
      EXPECT_EQ(r.status, mode.status) << dtype_name(t) << " later checks " << mode.later_checks << ": " << r.note;
      EXPECT_NE(r.note.find(mode.note), std::string::npos) << dtype_name(t) << ": " << r.note;
      EXPECT_EQ(r.note.find("tolerance"), std::string::npos) << dtype_name(t) << ": " << r.note;
      EXPECT_GT(r.max_abs_err, 0) << dtype_name(t);  // a real check ran, of rounded outputs
    }
}

// And the workspace: test_zeroed_workspace is right only where its workspace starts zeroed,
// and leaves it zeroed, so every launch after its first is right. The harness poisons a
// point's workspace before the first launch, so it fails there, checked once or more, timed
// or not: the note names no later check.
TEST(BrokenImpls, AssumingAZeroedWorkspaceIsCaught) {
  for (DType t : kAllDTypes)
    for (const auto& [later_checks, measure] : {std::pair{0, false}, std::pair{1, false}, std::pair{1, true}}) {
      const ResultRow r = run_later_launch_impl("test_zeroed_workspace", t, later_checks, measure);
      EXPECT_EQ(r.status, "fail") << dtype_name(t) << " later checks " << later_checks << ": " << r.note;
      EXPECT_NE(r.note.find("y:"), std::string::npos) << r.note;
      for (const char* later : {"second launch", "after timing", "later check"})
        EXPECT_EQ(r.note.find(later), std::string::npos) << r.note;
    }
}

// And writes where an impl must not, each leaving the outputs right, so that only the check
// that looks there fails it, on the first launch: past the end of y or of the workspace, or
// before y's start (the guard bytes beside each buffer, `kbench check` only: run's buffers keep
// their exact sizes and places), or into an input (in `run` too).
TEST(BrokenImpls, WritesOutsideTheOutputsAreCaught) {
  struct Case {
    const char* impl;
    std::string note;
    bool measure;
  };
  for (DType t : kAllDTypes) {
    const std::string size = std::to_string(dtype_size(t));
    for (const Case& c :
         {Case{"test_past_output_end", "y: " + size + " of the 4096 bytes after its end written, first at byte 0 after it", false},
          Case{"test_before_output_start", "y: " + size + " of the 4096 bytes before its start written, nearest at byte 1 before it", false},
          Case{"test_past_workspace_end", "workspace: 4 of the 4096 bytes after its end written, first at byte 0 after it", false},
          Case{"test_writes_input", "x: 1 of 28679 elements changed by the launch, first at 28678: ", false},
          Case{"test_writes_input", "x: 1 of 28679 elements changed by the launch, first at 28678: ", true}})
      for (int later_checks : {0, 1}) {
        const ResultRow r = run_later_launch_impl(c.impl, t, later_checks, c.measure);
        EXPECT_EQ(r.status, "fail") << c.impl << " " << dtype_name(t) << " later checks " << later_checks << ": " << r.note;
        EXPECT_EQ(r.note.rfind(c.note, 0), 0u) << r.note;  // the first launch's, and the only line
        EXPECT_EQ(r.note.find("tolerance"), std::string::npos) << r.note;  // the outputs are right
      }
  }
}

// And the launch on other values before each later check, whose outputs are not checked: it
// must leave its inputs as they were too. test_writes_input_on_second_launch writes into x on
// that launch only (in `kbench check`), so every checked launch's inputs and outputs are right.
// (In `run` its second launch is a timed one, on the point's own inputs, which the later
// check compares: test_writes_input's case above.)
TEST(BrokenImpls, WritingAnInputOnTheLaunchOnOtherValuesIsCaught) {
  for (DType t : kAllDTypes)
    for (const LaterLaunchMode& mode :
         {LaterLaunchMode{0, false, "pass", ""},
          LaterLaunchMode{1, false, "fail", "on a second launch: the launch on other values: x: 1 of 28679 elements changed by the launch, first at 28678: "}}) {
      const ResultRow r = run_later_launch_impl("test_writes_input_on_second_launch", t, mode.later_checks, mode.measure);
      EXPECT_EQ(r.status, mode.status) << dtype_name(t) << " later checks " << mode.later_checks << " measure " << mode.measure << ": " << r.note;
      EXPECT_EQ(r.note.rfind(mode.note, 0), 0u) << dtype_name(t) << ": " << r.note;  // the only line
      EXPECT_EQ(r.note.find("tolerance"), std::string::npos) << dtype_name(t) << ": " << r.note;
    }
}

}  // namespace
}  // namespace kbench

int main(int argc, char** argv) { return run_gpu_tests(argc, argv); }
