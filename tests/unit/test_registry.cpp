// The registry: what reference/ and kernels/ registered, lookups, and the CLI's error texts.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/errors.h"
#include "harness/registry.h"

namespace kbench {
namespace {

const Registry& reg() { return Registry::instance(); }

TEST(Registry, EveryImplNamesARegisteredOpAndHasALauncher) { EXPECT_NO_THROW(reg().validate()); }

TEST(Registry, OpsAreSortedAndIncludeRmsnormForwardAndBackward) {
  const auto ops = reg().ops();
  ASSERT_GE(ops.size(), 2u);
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1]->name, ops[i]->name);
  ASSERT_NE(reg().find_op("rmsnorm"), nullptr);
  ASSERT_NE(reg().find_op("rmsnorm_bwd"), nullptr);
  EXPECT_EQ(reg().find_op("no_such_op"), nullptr);
}

TEST(Registry, EveryOpHasANaiveImplAndAnOptimizedOne) {
  for (const OpDescriptor* op : reg().ops()) {
    const auto impls = reg().impls_of(op->name);
    ASSERT_GE(impls.size(), 2u) << op->name;
    EXPECT_EQ(impls.front()->name, "v1_naive") << op->name;
    for (const ImplDescriptor* impl : impls) {
      EXPECT_EQ(impl->name[0], 'v') << impl->name << ": impl names are vN_tag";
      EXPECT_FALSE(impl->note.empty()) << impl->name << ": every impl says what it changes";
    }
  }
}

TEST(Registry, RequireOpNamesTheBadValueAndListsValidOnes) {
  try {
    reg().require_op("rmsnrom");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'rmsnrom'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rmsnorm_bwd"), std::string::npos) << msg;
  }
}

TEST(Registry, SelectImplsKeepsOrderDropsDuplicatesAndRejectsUnknown) {
  const auto all = reg().select_impls("rmsnorm", {});
  EXPECT_EQ(all.size(), reg().impls_of("rmsnorm").size());
  const auto two = reg().select_impls("rmsnorm", {"v2_vec16", "v1_naive", "v2_vec16"});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0]->name, "v2_vec16");
  EXPECT_EQ(two[1]->name, "v1_naive");
  EXPECT_THROW(reg().select_impls("rmsnorm", {"v9_magic"}), UsageError);
}

// layernorm v5 (one warp-sized block per row) takes rows of up to 1024 elements, N a multiple
// of the 16-byte pack; it skips others with a reason that names N.
TEST(Registry, LayernormWarpRowsSaysWhichRowsItSkips) {
  const auto impls = reg().select_impls("layernorm", {"v5_vec16_warp_rows"});
  ASSERT_EQ(impls.size(), 1u);
  const auto& rejects = impls[0]->rejects;
  EXPECT_FALSE(rejects(Shape{32768, 1024}, DType::bf16).has_value());
  EXPECT_FALSE(rejects(Shape{1, 8}, DType::f16).has_value());
  EXPECT_FALSE(rejects(Shape{7, 1020}, DType::f32).has_value());
  const auto wide = rejects(Shape{7, 2048}, DType::bf16);
  ASSERT_TRUE(wide.has_value());
  EXPECT_NE(wide->find("N=2048"), std::string::npos) << *wide;
  const auto odd = rejects(Shape{7, 1020}, DType::bf16);  // 1020 % 8 != 0
  ASSERT_TRUE(odd.has_value());
  EXPECT_NE(odd->find("N=1020"), std::string::npos) << *odd;
}

TEST(Registry, OpDescriptorsAreComplete) {
  for (const OpDescriptor* op : reg().ops()) {
    EXPECT_FALSE(op->summary.empty()) << op->name;
    EXPECT_FALSE(op->inputs.empty()) << op->name;
    EXPECT_FALSE(op->outputs.empty()) << op->name;
    for (SweepLevel level : {SweepLevel::quick, SweepLevel::standard, SweepLevel::full})
      EXPECT_FALSE(op->sweep(level).empty()) << op->name;
    // The full sweep contains the default one.
    for (const Shape& s : op->sweep(SweepLevel::standard)) {
      const auto& full = op->sweep(SweepLevel::full);
      EXPECT_NE(std::find(full.begin(), full.end(), s), full.end()) << op->name;
    }
  }
}

TEST(Registry, ExtentsOverflowToMinusOne) {
  const TensorSpec t = rows_by_cols("x");
  EXPECT_EQ(t.numel({4096, 8192}), 4096 * 8192);
  EXPECT_EQ(t.numel({int64_t{1} << 40, int64_t{1} << 40}), -1);
  EXPECT_EQ(cols("w").numel({7, 13}), 13);
}

}  // namespace
}  // namespace kbench
