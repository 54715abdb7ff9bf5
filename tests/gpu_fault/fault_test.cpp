// A GPU fault mid-sweep: the rows finished before it are already in the CSV, an `error` row
// names the point, and the sweep stops with RuntimeFailure (exit 3 in kbench). Its own
// program, because a fault leaves the GPU context unusable.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/runner.h"
#include "tests/gpu/gpu_main.h"

namespace kbench {
namespace {

TEST(GpuFault, EarlierRowsSurviveAndTheErrorNamesThePoint) {
  const std::string csv = (std::filesystem::temp_directory_path() /
                           ("kbench_fault_" + std::to_string(::getpid()) + ".csv")).string();
  RunOptions o;
  o.ops = {Registry::instance().find_op("rmsnorm")};
  o.impls = {"v1_naive", "x_faults_on_second_shape"};
  o.dtypes = {DType::bf16};
  o.shapes = {{64, 256}, {128, 256}};
  o.measure = false;
  std::string message;
  {
    CsvWriter writer(csv);
    try {
      run_sweep(o, writer);
    } catch (const RuntimeFailure& e) {
      message = e.what();
    }
  }
  EXPECT_NE(message.find("x_faults_on_second_shape"), std::string::npos) << message;
  EXPECT_NE(message.find("128x256"), std::string::npos) << message;

  std::ifstream in(csv);
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<ResultRow> rows = read_results_csv(csv);
  // 64x256: v1_naive pass, faulting impl pass (it runs v1 there); 128x256: v1 pass, then error.
  ASSERT_EQ(rows.size(), 4u) << text.str();
  EXPECT_EQ(rows[0].status, "pass");
  EXPECT_EQ(rows[1].status, "pass");
  EXPECT_EQ(rows[2].status, "pass");
  EXPECT_EQ(rows[3].status, "error");
  EXPECT_EQ(rows[3].shape, "128x256");
  std::filesystem::remove(csv);
}

}  // namespace
}  // namespace kbench

int main(int argc, char** argv) { return run_gpu_tests(argc, argv); }
