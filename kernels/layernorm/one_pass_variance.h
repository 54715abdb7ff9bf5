// When the staged layernorm kernels (forward and backward) and the forward's register rows may
// take a row's variance from one round of sums, var = E[x^2] - mean^2, instead of a second
// round over the staged (or held) row, var = E[(x - mean)^2].
//
// In fp32 the one-round form loses about mean^2 / var ulps of var to cancellation: with
// |x| ~ 1e3 and a spread of 1, six of fp32's seven digits. So it is used only where
// mean^2 <= kOnePassMaxRatio * var: at most 1024 ulps (a relative error near 1e-4 in rstd)
// for 16-bit data, whose outputs keep 8 to 11 bits, and 16 ulps for fp32. Other rows, and
// rows whose one-round variance came out negative, take the second round: exact as before.
// The decision is made from sums that are bitwise the same in every thread of the row's team
// and cluster (staged_rows.cuh's needs_round; layernorm.cu's kLayernormRegsOneRound), so all
// of them take the same path.
#pragma once
#include <cstddef>

namespace kbench {

template <class T>
inline constexpr float kOnePassMaxRatio = sizeof(T) == 2 ? 1024.f : 16.f;

template <class T>
__host__ __device__ inline bool one_pass_variance_ok(float mean, float var) {
  return var >= 0.f && mean * mean <= kOnePassMaxRatio<T> * var;
}

}  // namespace kbench
