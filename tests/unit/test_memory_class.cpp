// Which GPUs take the forwards' policies for fast memory (kernels/common/memory_class.h): the
// two measured parts fall on the sides their measurements put them, and KBENCH_FAST_MEMORY
// accepts 1, 0 or nothing and names any other value.
#include <gtest/gtest.h>

#include <cstdlib>

#include "harness/errors.h"
#include "kernels/common/memory_class.h"

namespace kbench {
namespace {

// Peak clocks and bus widths as the CUDA runtime reports them (kbench devices).
TEST(MemoryClass, H100SxmIsNotFastMemory) {
  const double bytes = memory_bytes_per_sm_clock(2619000, 5120, 1980000, 132);
  EXPECT_NEAR(bytes, 12.83, 0.01);
  EXPECT_FALSE(is_fast_memory(bytes));
}

TEST(MemoryClass, H200IsFastMemory) {
  const double bytes = memory_bytes_per_sm_clock(3201000, 6016, 1980000, 132);
  EXPECT_NEAR(bytes, 18.43, 0.01);
  EXPECT_TRUE(is_fast_memory(bytes));
}

TEST(MemoryClass, NoSmsOrClockIsNotFastMemory) {
  EXPECT_EQ(memory_bytes_per_sm_clock(3201000, 6144, 0, 132), 0);
  EXPECT_EQ(memory_bytes_per_sm_clock(3201000, 6144, 1980000, 0), 0);
  EXPECT_FALSE(is_fast_memory(0));
}

class FastMemoryOverride : public testing::Test {
 protected:
  void TearDown() override { unsetenv("KBENCH_FAST_MEMORY"); }
};

TEST_F(FastMemoryOverride, UnsetOrEmptyLetsTheGpuDecide) {
  unsetenv("KBENCH_FAST_MEMORY");
  EXPECT_FALSE(fast_memory_override().has_value());
  setenv("KBENCH_FAST_MEMORY", "", 1);
  EXPECT_FALSE(fast_memory_override().has_value());
}

TEST_F(FastMemoryOverride, OneOrZeroForcesIt) {
  setenv("KBENCH_FAST_MEMORY", "1", 1);
  EXPECT_EQ(fast_memory_override(), std::optional<bool>(true));
  setenv("KBENCH_FAST_MEMORY", "0", 1);
  EXPECT_EQ(fast_memory_override(), std::optional<bool>(false));
}

TEST_F(FastMemoryOverride, OtherValuesAreNamedUsageErrors) {
  for (const char* bad : {"yes", "2", " 1", "true"}) {
    setenv("KBENCH_FAST_MEMORY", bad, 1);
    try {
      (void)fast_memory_override();
      FAIL() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kbench
