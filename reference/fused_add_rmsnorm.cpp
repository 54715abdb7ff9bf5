// fused_add_rmsnorm and its backward: float64 references, bytes/flops models, tolerances.
//
//   forward:  h = x + r;  y = h * rstd * w,  rstd = 1 / sqrt(mean(h^2) + eps);  outputs y and h
//             (the transformer residual stream: h is the next layer's residual).
//   backward: given dy (for y) and dh (for h, from the next layer), with the h the forward
//             returned: dx = dr = dh + rmsnorm_bwd(dy, h, w).dx;  dw = rmsnorm_bwd(...).dw.
//             x and r receive the same gradient, so the op writes it once (dx).
// Both references call rmsnorm's own float64 references through the registry, so the two ops
// cannot drift apart.
#include <vector>

#include "harness/registry.h"
#include "reference/norm_common.h"

namespace kbench {
namespace {

using norm::mn;

void fused_add_rmsnorm_reference(const ReferenceArgs& a) {
  const std::vector<double>& x = *a.inputs[0];
  const std::vector<double>& r = *a.inputs[1];
  std::vector<double>& h = *a.outputs[1];
  for (size_t i = 0; i < h.size(); ++i) h[i] = x[i] + r[i];
  ReferenceArgs norm_args{a.shape, a.eps, {&h, a.inputs[2]}, {a.outputs[0]}};
  Registry::instance().require_op("rmsnorm").reference(norm_args);
}

void fused_add_rmsnorm_bwd_reference(const ReferenceArgs& a) {
  // inputs: dy, dh, h, w; outputs: dx, dw
  const std::vector<double>& dh = *a.inputs[1];
  ReferenceArgs norm_args{a.shape, a.eps, {a.inputs[0], a.inputs[2], a.inputs[3]},
                          {a.outputs[0], a.outputs[1]}};
  Registry::instance().require_op("rmsnorm_bwd").reference(norm_args);
  std::vector<double>& dx = *a.outputs[0];
  for (size_t i = 0; i < dx.size(); ++i) dx[i] += dh[i];
}

}  // namespace

KBENCH_REGISTER(fused_add_rmsnorm_op) {
  register_op("fused_add_rmsnorm")
      .summary("h = x + r; y = h * rsqrt(mean(h^2) + eps) * w; returns y and h")
      .input(with_edge_values(rows_by_cols("x")))
      .input(with_edge_values(rows_by_cols("r")))
      .input(cols("w", Init::around_one))
      .output(rows_by_cols("y"))
      .output(rows_by_cols("h"))
      .eps(1e-6)
      .reference(fused_add_rmsnorm_reference)
      // reads x, r (2*M*N) and w (N), writes y, h (2*M*N): (4*M*N + N) elements
      .bytes([](const Shape& s, DType t) { return (4 * mn(s) + s.n) * dtype_size(t); })
      // the add (1), then rmsnorm's 4 per element
      .flops([](const Shape& s, DType) { return 5 * mn(s); })
      // h is one rounded add. y is allowed 4 units, not rmsnorm's 2.5: a kernel normalizes
      // the h it returns (rounded), and in a short row that rounding moves both the element
      // and the row's rstd (measured on H100, fp16, N = 3: 2.7 units, every impl alike).
      .tolerance([](size_t output, DType t, const Shape&) {
        return norm::rowwise_tolerance(t, 1e-5, output == 0 ? 4.0 : 2.5);
      })
      .sweeps(norm::kSweeps);
}

KBENCH_REGISTER(fused_add_rmsnorm_bwd_op) {
  register_op("fused_add_rmsnorm_bwd")
      .summary("dx (= dr), dw of fused_add_rmsnorm given dy, dh and the forward's h")
      .input(rows_by_cols("dy"))
      .input(rows_by_cols("dh"))
      .input(with_edge_values(rows_by_cols("h")))
      .input(cols("w", Init::around_one))
      .output(rows_by_cols("dx"))
      .output(cols("dw"))
      .eps(1e-6)
      .reference(fused_add_rmsnorm_bwd_reference)
      // reads dy, dh, h (3*M*N) and w (N), writes dx (M*N) and dw (N)
      .bytes([](const Shape& s, DType t) { return (4 * mn(s) + 2 * s.n) * dtype_size(t); })
      // rmsnorm_bwd's 10 per element, plus dh
      .flops([](const Shape& s, DType) { return 11 * mn(s); })
      .tolerance([](size_t output, DType t, const Shape& s) {
        // dx as rmsnorm_bwd's (cancellation floor 1e-4); dw sums M terms (norm_common.h).
        return output == 0 ? norm::rowwise_tolerance(t, 1e-4)
                           : norm::reduction_tolerance(t, static_cast<double>(s.m));
      })
      .sweeps(norm::kSweeps);
}

}  // namespace kbench
