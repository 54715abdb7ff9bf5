// Inputs, ceilings store, metrics and the device table: the harness units around the runner.
#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>

#include <filesystem>

#include "harness/ceilings.h"
#include "harness/device.h"
#include "harness/inputs.h"
#include "harness/metrics.h"

namespace kbench {
namespace {

TEST(Inputs, SameSeedSameValuesOtherSeedOtherValues) {
  const TensorSpec x = rows_by_cols("x");
  const Shape s{3, 70000};  // several generator chunks
  const HostTensor a = make_input(x, DType::bf16, s, 42), b = make_input(x, DType::bf16, s, 42);
  const HostTensor c = make_input(x, DType::bf16, s, 43);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, c.bytes);
  ASSERT_EQ(a.values.size(), 210000u);
}

TEST(Inputs, ValuesAreTheRoundedBytesAndLookNormal) {
  const HostTensor t = make_input(rows_by_cols("x"), DType::f16, {100, 1000}, 7);
  double sum = 0, sum_sq = 0;
  size_t zeros = 0;
  for (size_t i = 0; i < t.values.size(); ++i) {
    ASSERT_EQ(t.values[i], load_as_double(t.bytes.data(), DType::f16, i));
    sum += t.values[i];
    sum_sq += t.values[i] * t.values[i];
    zeros += t.values[i] == 0;
  }
  const double n = static_cast<double>(t.values.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
  EXPECT_LT(zeros, 100u);  // never a zero tensor
}

TEST(Inputs, WeightsAreAroundOne) {
  const HostTensor w = make_input(cols("w", Init::around_one), DType::f32, {1, 10000}, 9);
  for (double v : w.values) EXPECT_NEAR(v, 1.0, 0.7);
}

TEST(Inputs, SeedDependsOnEveryPartOfThePoint) {
  const uint64_t base = tensor_seed(1, "rmsnorm", DType::bf16, {4, 8}, 0);
  EXPECT_NE(base, tensor_seed(2, "rmsnorm", DType::bf16, {4, 8}, 0));
  EXPECT_NE(base, tensor_seed(1, "rmsnorm_bwd", DType::bf16, {4, 8}, 0));
  EXPECT_NE(base, tensor_seed(1, "rmsnorm", DType::f16, {4, 8}, 0));
  EXPECT_NE(base, tensor_seed(1, "rmsnorm", DType::bf16, {8, 4}, 0));
  EXPECT_NE(base, tensor_seed(1, "rmsnorm", DType::bf16, {4, 8}, 1));
}

TEST(Ceilings, StoreReplacesTheDeviceRowAndKeepsOthers) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kbench_ceilings_" + std::to_string(::getpid()) + "/c.csv")).string();
  Ceiling a{"gpu-a", "GPU A", "t1", "0.1", "m", 3000, 2900, 3000, 700};
  Ceiling b{"gpu-b", "GPU, \"B\"", "t1", "0.1", "m", 4000, 4000, 3900, 0};
  store_ceiling(path, a);
  store_ceiling(path, b);
  a.copy_gbps = 3100;
  store_ceiling(path, a);
  const auto all = load_ceilings(path);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_DOUBLE_EQ(find_ceiling(path, "gpu-a")->copy_gbps, 3100);
  EXPECT_EQ(find_ceiling(path, "gpu-b")->device, "GPU, \"B\"");
  EXPECT_FALSE(find_ceiling(path, "gpu-c").has_value());
  EXPECT_TRUE(load_ceilings("/nonexistent/kbench.csv").empty());
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(Metrics, BandwidthAndPercentagesFromBytesAndMedian) {
  SampleStats us;
  us.count = 10;
  us.median = 100;  // 100 us
  ResultRow row;
  fill_timing_and_work(row, us, 300e6, 30e6, 3350, 3000);
  EXPECT_DOUBLE_EQ(row.gbps, 3000);  // 300 MB in 100 us
  EXPECT_DOUBLE_EQ(row.ceiling_pct, 100);
  EXPECT_NEAR(row.peak_pct, 100 * 3000 / 3350.0, 1e-9);
  EXPECT_DOUBLE_EQ(row.tflops, 0.3);
  EXPECT_DOUBLE_EQ(row.intensity, 0.1);
  fill_timing_and_work(row, us, 300e6, 30e6, 0, 0);  // unknown peaks: NaN, not 0 or inf
  EXPECT_TRUE(std::isnan(row.peak_pct));
  EXPECT_TRUE(std::isnan(row.ceiling_gbps));
}

TEST(DeviceTable, SlugsAndDatasheetPeaks) {
  EXPECT_EQ(slugify("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(slugify("  AMD Instinct MI250X / MI250 "), "amd-instinct-mi250x-mi250");
  EXPECT_EQ(slugify("***"), "unknown");
  EXPECT_DOUBLE_EQ(datasheet_peak("NVIDIA H200").gbps, 4800);
  EXPECT_DOUBLE_EQ(datasheet_peak("NVIDIA H100 80GB HBM3").gbps, 3350);
  EXPECT_DOUBLE_EQ(datasheet_peak("NVIDIA H100 PCIe").gbps, 2000);
  EXPECT_DOUBLE_EQ(datasheet_peak("NVIDIA L40S").gbps, 864);
  EXPECT_DOUBLE_EQ(datasheet_peak("Some Future GPU").gbps, 0);
  // H100 SXM: 2619 MHz memory clock, 5120-bit bus -> 3352 GB/s.
  EXPECT_NEAR(bandwidth_from_clock(2619000, 5120), 3352.3, 0.1);
}

}  // namespace
}  // namespace kbench
