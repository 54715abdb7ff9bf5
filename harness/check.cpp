// Correctness check of one output against its float64 reference.
//
// Outputs reach 500M elements (a 4 GB reference read per check), so the loop is split into
// fixed-size chunks spread over all cores. Each chunk keeps its own partial result and the
// partials are merged in chunk order: the sums, and so rel_l2_err, are the same bits
// whatever the machine's core count.
#include "harness/check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

namespace kbench {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kChunk = size_t{1} << 20;  // elements per chunk: ~8 MB of reference

struct Partial {
  size_t bad_count = 0;
  size_t first_bad = SIZE_MAX;
  double first_bad_out = 0, first_bad_ref = 0;
  double max_abs = 0, max_rel = 0;
  double sum_sq_diff = 0, sum_sq_ref = 0;
};

// The three storage types, decoded inline. A call into dtype.cpp per element would force the
// accumulators out of registers around every call (measured ~1.4x slower).
// kSubnormalStep: the spacing of the dtype's subnormals, the finest absolute step a value of
// that dtype can take. A correctly rounded result of tiny magnitude (fp16 below 6.1e-5) is
// off by up to half of it, whatever its relative tolerance says, so it is always allowed.
struct F32 {
  static constexpr double kSubnormalStep = 0x1p-149;
  double operator()(const void* p, size_t i) const { return static_cast<const float*>(p)[i]; }
};
struct BF16 {
  static constexpr double kSubnormalStep = 0x1p-133;
  double operator()(const void* p, size_t i) const {
    const uint32_t bits = uint32_t{static_cast<const uint16_t*>(p)[i]} << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
};
// fp16 through a table of all 65536 values (256 KB, built once from f16_bits_to_float).
struct F16 {
  static constexpr double kSubnormalStep = 0x1p-24;
  const float* table = f16_table();
  double operator()(const void* p, size_t i) const {
    return table[static_cast<const uint16_t*>(p)[i]];
  }
  static const float* f16_table() {
    static const std::vector<float> t = [] {
      std::vector<float> v(65536);
      for (uint32_t h = 0; h < v.size(); ++h) v[h] = f16_bits_to_float(static_cast<uint16_t>(h));
      return v;
    }();
    return t.data();
  }
};

// One element. Returns whether it passes and adds its error to the partial.
//
// Errors are taken over elements whose reference is finite. An output that is NaN or inf
// where the reference is finite has an unbounded error: it contributes +inf (not NaN, which
// would make the maxima depend on the order of comparison).
inline bool check_element(double out, double ref, const Tolerance& tol, double atol_scale,
                          double floor, Partial& p) {
  if (std::isnan(ref)) return std::isnan(out);  // defined, though references should not do it
  if (std::isinf(ref)) {
    if (out == ref) return true;
    p.max_abs = p.max_rel = p.sum_sq_diff = kInf;
    return false;
  }
  const double diff = std::isfinite(out) ? std::fabs(out - ref) : kInf;
  const double aref = std::fabs(ref);
  p.max_abs = std::max(p.max_abs, diff);
  if (ref != 0) p.max_rel = std::max(p.max_rel, diff / aref);
  p.sum_sq_diff += diff * diff;
  p.sum_sq_ref += ref * ref;
  return diff <= tol.atol * atol_scale + tol.rtol * aref + floor;
}

template <typename T>
Partial check_range(const void* out, const double* ref, const double* scale, size_t begin,
                    size_t end, Tolerance tol) {
  Partial p;
  const T load;
  for (size_t i = begin; i < end; ++i) {
    const double o = load(out, i);
    if (!check_element(o, ref[i], tol, scale ? scale[i] : 1.0, T::kSubnormalStep, p)) {
      if (p.bad_count++ == 0) {
        p.first_bad = i;
        p.first_bad_out = o;
        p.first_bad_ref = ref[i];
      }
    }
  }
  return p;
}

// Chunk c of n elements covers [c*kChunk, min(n, (c+1)*kChunk)).
template <typename T>
std::vector<Partial> check_chunks(const void* out, const std::vector<double>& ref,
                                  const double* scale, Tolerance tol) {
  const size_t n = ref.size();
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Partial> parts(chunks);
  auto run_chunk = [&](size_t c) {
    parts[c] = check_range<T>(out, ref.data(), scale, c * kChunk, std::min(n, (c + 1) * kChunk), tol);
  };

  const size_t threads =
      std::min<size_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    for (size_t c = 0; c < chunks; ++c) run_chunk(c);
    return parts;
  }
  // Thread t takes chunks t, t+threads, ...: a simple static split; chunks are equal work.
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t c = t; c < chunks; c += threads) run_chunk(c);
    });
  }
  for (auto& th : pool) th.join();
  return parts;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Enough digits to tell any two floats apart (every output dtype is exact as a float).
std::string fmt_exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

CheckResult check_output(const void* out, DType t, const std::vector<double>& ref,
                         Tolerance tol, const std::vector<double>* atol_scale) {
  const double* scale = atol_scale && !atol_scale->empty() ? atol_scale->data() : nullptr;
  std::vector<Partial> parts;
  switch (t) {
    case DType::f32: parts = check_chunks<F32>(out, ref, scale, tol); break;
    case DType::f16: parts = check_chunks<F16>(out, ref, scale, tol); break;
    case DType::bf16: parts = check_chunks<BF16>(out, ref, scale, tol); break;
  }

  // Merge in chunk order; the first failing chunk holds the first failing element.
  Partial total;
  for (const Partial& p : parts) {
    if (p.bad_count > 0 && total.bad_count == 0) {
      total.first_bad = p.first_bad;
      total.first_bad_out = p.first_bad_out;
      total.first_bad_ref = p.first_bad_ref;
    }
    total.bad_count += p.bad_count;
    total.max_abs = std::max(total.max_abs, p.max_abs);
    total.max_rel = std::max(total.max_rel, p.max_rel);
    total.sum_sq_diff += p.sum_sq_diff;
    total.sum_sq_ref += p.sum_sq_ref;
  }

  CheckResult r;
  r.pass = total.bad_count == 0;
  r.bad_count = total.bad_count;
  if (!r.pass) {
    r.first_bad = total.first_bad;
    r.first_bad_out = total.first_bad_out;
    r.first_bad_ref = total.first_bad_ref;
  }
  r.max_abs_err = total.max_abs;
  r.max_rel_err = total.max_rel;
  const double diff_norm = std::sqrt(total.sum_sq_diff);
  r.rel_l2_err = total.sum_sq_ref > 0 ? diff_norm / std::sqrt(total.sum_sq_ref) : diff_norm;
  return r;
}

CheckResult combine(const std::vector<CheckResult>& parts) {
  CheckResult r;
  for (const CheckResult& p : parts) {
    // The first failure reported is that of the first failing output.
    if (!p.pass && r.pass) {
      r.first_bad = p.first_bad;
      r.first_bad_out = p.first_bad_out;
      r.first_bad_ref = p.first_bad_ref;
    }
    r.pass = r.pass && p.pass;
    r.bad_count += p.bad_count;
    r.max_abs_err = std::max(r.max_abs_err, p.max_abs_err);
    r.max_rel_err = std::max(r.max_rel_err, p.max_rel_err);
    r.rel_l2_err = std::max(r.rel_l2_err, p.rel_l2_err);
  }
  return r;
}

std::string describe_failure(const std::string& output_name, const CheckResult& r,
                             size_t numel) {
  if (r.pass) {
    return output_name + ": all " + std::to_string(numel) + " elements within tolerance";
  }
  return output_name + ": " + std::to_string(r.bad_count) + " of " + std::to_string(numel) +
         " elements out of tolerance, first at " + std::to_string(r.first_bad) + ": got " +
         fmt(r.first_bad_out) + ", want " + fmt(r.first_bad_ref);
}

BitwiseDiff bitwise_diff(const void* first_launch, const void* later_launch, size_t numel, DType t) {
  const size_t size = dtype_size(t);
  const auto* a = static_cast<const unsigned char*>(first_launch);
  const auto* b = static_cast<const unsigned char*>(later_launch);
  BitwiseDiff d;
  if (numel == 0 || std::memcmp(a, b, numel * size) == 0) return d;
  for (size_t i = 0; i < numel; ++i) {
    if (std::memcmp(a + i * size, b + i * size, size) == 0) continue;
    if (d.count++ == 0) d.first = i;
  }
  return d;
}

namespace {

// "<name>: <count> of <numel> elements <how>, first at <i>: <a's value>, then <b's>".
std::string describe_elements_that_differ(const std::string& name, const BitwiseDiff& d,
                                          size_t numel, const char* how, const void* a,
                                          const void* b, DType t) {
  std::string line = name + ": " + std::to_string(d.count) + " of " + std::to_string(numel) +
                     " elements " + how;
  if (d.count == 0) return line;
  return line + ", first at " + std::to_string(d.first) + ": " +
         fmt_exact(load_as_double(a, t, d.first)) + ", then " + fmt_exact(load_as_double(b, t, d.first));
}

}  // namespace

std::string describe_bitwise_diff(const std::string& output_name, const BitwiseDiff& d,
                                  size_t numel, const void* first_launch, const void* later_launch,
                                  DType t) {
  return describe_elements_that_differ(output_name, d, numel, "not bit for bit the first launch's",
                                       first_launch, later_launch, t);
}

std::string describe_changed_input(const std::string& input_name, const BitwiseDiff& d,
                                   size_t numel, const void* before, const void* after, DType t) {
  return describe_elements_that_differ(input_name, d, numel, "changed by the launch", before, after, t);
}

GuardDiff guard_diff(const unsigned char* guard, size_t bytes, unsigned char fill) {
  GuardDiff d;
  for (size_t i = 0; i < bytes; ++i) {
    if (guard[i] == fill) continue;
    if (d.count++ == 0) d.first = i;
    d.last = i;
  }
  return d;
}

std::string describe_guard(const std::string& buffer_name, const GuardDiff& d, size_t bytes,
                           GuardSide side) {
  if (d.count == 0) return "";
  const std::string written = buffer_name + ": " + std::to_string(d.count) + " of the " +
                              std::to_string(bytes) + " bytes ";
  if (side == GuardSide::after)
    return written + "after its end written, first at byte " + std::to_string(d.first) + " after it";
  // The guard ends where the buffer starts: its last changed byte is the nearest.
  return written + "before its start written, nearest at byte " + std::to_string(bytes - d.last) +
         " before it";
}

}  // namespace kbench
