// Shape parsing and printing: the `--shape` argument must reject anything but positive
// decimal extents, naming the bad text, before a GPU is touched.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "harness/errors.h"
#include "harness/shape.h"

namespace kbench {
namespace {

TEST(Shape, ToString) {
  EXPECT_EQ(shape_to_string({4096, 8192, 0}), "4096x8192");
  EXPECT_EQ(shape_to_string({4096, 8192, 1024}), "4096x8192x1024");
  EXPECT_EQ(shape_to_string({1, 1, 0}), "1x1");
}

TEST(Shape, ParseValid) {
  EXPECT_EQ(parse_shape("4096x8192"), (Shape{4096, 8192, 0}));
  EXPECT_EQ(parse_shape("1x1"), (Shape{1, 1, 0}));
  EXPECT_EQ(parse_shape("2x3x4"), (Shape{2, 3, 4}));
  EXPECT_EQ(parse_shape("007x8"), (Shape{7, 8, 0}));  // leading zeros are still decimal
  EXPECT_EQ(parse_shape("1099511627776x1"), (Shape{kMaxExtent, 1, 0}));
  for (const Shape& s : {Shape{1, 2, 0}, Shape{4096, 8192, 1024}}) {
    EXPECT_EQ(parse_shape(shape_to_string(s)), s);
  }
}

TEST(Shape, ParseRejects) {
  for (const char* bad :
       {"0x4", "4x0", "4x4x0", "4x", "x4", "x", "", "-1x4", "+1x4", "abc", "4x4x", "4x4x4x4",
        "99999999999999999999x4", "4x99999999999999999999", "1e3x4", "4 x4", " 4x4", "4x4 ",
        "4X4", "4*4", "4.0x4", "0x10x4", "1099511627777x1"}) {
    EXPECT_THROW(parse_shape(bad), UsageError) << "'" << bad << "'";
  }
}

TEST(Shape, ErrorNamesTheTextAndTheForm) {
  try {
    parse_shape("0x4");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "bad shape '0x4': extents must be positive integers, as MxN or MxNxK");
  }
  try {
    parse_shape("99999999999999999999x4");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'99999999999999999999x4'"), std::string::npos)
        << e.what();
  }
}

TEST(Shape, ParseList) {
  EXPECT_EQ(parse_shape_list("4096x8192"), (std::vector<Shape>{{4096, 8192, 0}}));
  EXPECT_EQ(parse_shape_list("1x2,3x4x5"), (std::vector<Shape>{{1, 2, 0}, {3, 4, 5}}));
  EXPECT_THROW(parse_shape_list(""), UsageError);
  EXPECT_THROW(parse_shape_list("1x2,"), UsageError);
  EXPECT_THROW(parse_shape_list(",1x2"), UsageError);
  EXPECT_THROW(parse_shape_list("1x2,,3x4"), UsageError);
  try {
    parse_shape_list("1x2,3y4");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'3y4'"), std::string::npos) << e.what();
  }
}

TEST(Shape, CheckedMul) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(checked_mul(0, 5), 0);
  EXPECT_EQ(checked_mul(5, 0), 0);
  EXPECT_EQ(checked_mul(4096, 8192), 33554432);
  EXPECT_EQ(checked_mul(kMaxExtent, kMaxExtent), -1);  // 2^80
  EXPECT_EQ(checked_mul(kMax, 1), kMax);
  EXPECT_EQ(checked_mul(kMax / 2, 2), kMax - 1);
  EXPECT_EQ(checked_mul(kMax / 2 + 1, 2), -1);
  EXPECT_EQ(checked_mul(-1, 4), -1);
  EXPECT_EQ(checked_mul(4, -1), -1);
  EXPECT_EQ(checked_mul(int64_t{1} << 32, int64_t{1} << 31), -1);  // 2^63 just overflows
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
}

}  // namespace
}  // namespace kbench
