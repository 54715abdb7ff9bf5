// Input generation: --values profiles touch only the tensors an op marks edge_values.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/errors.h"
#include "harness/inputs.h"

namespace kbench {
namespace {

const Shape kShape{9, 5};

double max_abs(const HostTensor& t) {
  double m = 0;
  for (double v : t.values) m = std::max(m, std::abs(v));
  return m;
}

TEST(InputValues, LargeScalesOnlyEdgeTensors) {
  const TensorSpec x = with_edge_values(rows_by_cols("x"));
  const TensorSpec dy = rows_by_cols("dy");
  const HostTensor normal = make_input(x, DType::f32, kShape, 7);
  const HostTensor large = make_input(x, DType::f32, kShape, 7, InputValues::large);
  for (size_t i = 0; i < normal.values.size(); ++i)
    EXPECT_NEAR(large.values[i], normal.values[i] * kLargeValueScale, 1e-3 * std::abs(large.values[i]));
  EXPECT_GT(max_abs(large), 100.0);
  EXPECT_LT(max_abs(make_input(dy, DType::f32, kShape, 7, InputValues::large)), 10.0);
}

TEST(InputValues, ZeroRowsZeroesEveryFourthRowOfEdgeTensors) {
  const HostTensor t =
      make_input(with_edge_values(rows_by_cols("x")), DType::bf16, kShape, 3, InputValues::zero_rows);
  for (int64_t row = 0; row < kShape.m; ++row) {
    double row_abs = 0;
    for (int64_t j = 0; j < kShape.n; ++j) row_abs += std::abs(t.values[row * kShape.n + j]);
    if (row % 4 == 0) {
      EXPECT_EQ(row_abs, 0.0) << "row " << row;
    } else {
      EXPECT_GT(row_abs, 0.0) << "row " << row;
    }
  }
  // A weight vector (not M x N, not edge) keeps its values.
  const HostTensor w = make_input(cols("w", Init::around_one), DType::bf16, kShape, 3, InputValues::zero_rows);
  for (double v : w.values) EXPECT_GT(v, 0.3);
}

TEST(InputValues, OffsetRowsMoveEachRowsMeanByAPowerOfFour) {
  const Shape shape{9, 4096};
  const TensorSpec x = with_edge_values(rows_by_cols("x"));
  const HostTensor normal = make_input(x, DType::f32, shape, 5);
  const HostTensor offset = make_input(x, DType::f32, shape, 5, InputValues::offset_rows);
  for (int64_t row = 0; row < shape.m; ++row) {
    const double expected = std::ldexp(1.0, 2 * static_cast<int>(row % 5));
    for (int64_t j = 0; j < shape.n; ++j) {
      const size_t i = static_cast<size_t>(row * shape.n + j);
      EXPECT_NEAR(offset.values[i] - normal.values[i], expected, 1e-3 * expected) << row << "," << j;
    }
  }
  // Tensors not marked edge_values keep the normal draw.
  const TensorSpec dy = rows_by_cols("dy");
  EXPECT_EQ(make_input(dy, DType::f32, shape, 5, InputValues::offset_rows).values,
            make_input(dy, DType::f32, shape, 5).values);
}

TEST(InputValues, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_input_values("normal"), InputValues::normal);
  EXPECT_EQ(parse_input_values("large"), InputValues::large);
  EXPECT_EQ(parse_input_values("zero-rows"), InputValues::zero_rows);
  EXPECT_STREQ(input_values_name(InputValues::zero_rows), "zero-rows");
  EXPECT_EQ(parse_input_values("offset-rows"), InputValues::offset_rows);
  EXPECT_STREQ(input_values_name(InputValues::offset_rows), "offset-rows");
  EXPECT_THROW(parse_input_values("zero_rows"), UsageError);
}

TEST(InputValues, ScalarsHaveAFixedLength) {
  const TensorSpec w = scalars("w", 3);
  EXPECT_EQ(w.numel(Shape{100, 7}), 3);
  EXPECT_EQ(w.extent, "3");
}

}  // namespace
}  // namespace kbench
