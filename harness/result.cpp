// The CSV schema as one table: each column's name and the ResultRow member it maps to.
// csv_columns, row_fields and row_from_fields all walk this table, so the order and the
// names live in exactly one place.
#include "harness/result.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <variant>

#include "harness/errors.h"

namespace kbench {

namespace {

// A double whose CSV text is an integer when it is integral (bytes, flops: "%.6g" would lose
// digits of a byte count).
struct Count {
  double ResultRow::*member;
};

using Member = std::variant<std::string ResultRow::*, int ResultRow::*, int64_t ResultRow::*,
                            double ResultRow::*, Count>;

struct Column {
  const char* name;
  Member member;
};

const std::vector<Column>& columns() {
  using R = ResultRow;
  static const std::vector<Column> kColumns = {
      // identity
      {"kbench_version", &R::kbench_version},
      {"timestamp", &R::timestamp},
      {"device", &R::device},
      {"device_slug", &R::device_slug},
      {"arch", &R::arch},
      {"sm_count", &R::sm_count},
      {"driver", &R::driver},
      {"runtime", &R::runtime},
      {"op", &R::op},
      {"impl", &R::impl},
      {"dtype", &R::dtype},
      {"shape", &R::shape},
      {"m", &R::m},
      {"n", &R::n},
      {"k", &R::k},
      {"l2", &R::l2},
      // timing
      {"samples", &R::samples},
      {"median_us", &R::median_us},
      {"mean_us", &R::mean_us},
      {"min_us", &R::min_us},
      {"p10_us", &R::p10_us},
      {"p90_us", &R::p90_us},
      {"stddev_us", &R::stddev_us},
      {"noise_pct", &R::noise_pct},
      {"sm_clock_mhz", &R::sm_clock_mhz},
      // work
      {"bytes", Count{&R::bytes}},
      {"flops", Count{&R::flops}},
      {"gbps", &R::gbps},
      {"tflops", &R::tflops},
      {"intensity", &R::intensity},
      {"peak_gbps", &R::peak_gbps},
      {"peak_pct", &R::peak_pct},
      {"ceiling_gbps", &R::ceiling_gbps},
      {"ceiling_pct", &R::ceiling_pct},
      // correctness
      {"max_abs_err", &R::max_abs_err},
      {"max_rel_err", &R::max_rel_err},
      {"rel_l2_err", &R::rel_l2_err},
      {"atol", &R::atol},
      {"rtol", &R::rtol},
      {"status", &R::status},
      {"note", &R::note},
  };
  return kColumns;
}

// to_chars, unlike printf, ignores the C locale: a CSV written under de_DE still reads back.
std::string format_double(double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return std::string(buf, res.ptr);
}

std::string format_count(double v) {
  // Integral and exactly representable: print every digit.
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.0e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  return format_double(v);
}

[[noreturn]] void bad_number(const char* column, const std::string& text) {
  throw UsageError(std::string("column '") + column + "': bad number '" + text + "'");
}

template <typename Int>
Int parse_int(const char* column, const std::string& text) {
  if (text.empty()) return 0;
  Int v{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) bad_number(column, text);
  return v;
}

double parse_double(const char* column, const std::string& text) {
  if (text.empty()) return std::numeric_limits<double>::quiet_NaN();  // how NaN is written
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) bad_number(column, text);
  return v;
}

}  // namespace

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const Column& c : columns()) names.push_back(c.name);
    return names;
  }();
  return kNames;
}

bool is_numeric_column(const std::string& name) {
  for (const Column& c : columns()) {
    if (name == c.name) return !std::holds_alternative<std::string ResultRow::*>(c.member);
  }
  return false;
}

std::vector<std::string> row_fields(const ResultRow& r) {
  std::vector<std::string> out;
  out.reserve(columns().size());
  for (const Column& c : columns()) {
    out.push_back(std::visit(
        [&](auto m) -> std::string {
          using M = decltype(m);
          if constexpr (std::is_same_v<M, std::string ResultRow::*>) {
            return r.*m;
          } else if constexpr (std::is_same_v<M, double ResultRow::*>) {
            return format_double(r.*m);
          } else if constexpr (std::is_same_v<M, Count>) {
            return format_count(r.*(m.member));
          } else {
            return std::to_string(r.*m);
          }
        },
        c.member));
  }
  return out;
}

ResultRow row_from_fields(const std::vector<std::string>& header,
                          const std::vector<std::string>& fields) {
  if (header.size() != fields.size()) {
    throw UsageError("expected " + std::to_string(header.size()) + " fields, got " +
                     std::to_string(fields.size()));
  }
  ResultRow r;
  for (size_t i = 0; i < header.size(); ++i) {
    for (const Column& c : columns()) {
      if (header[i] != c.name) continue;
      const std::string& text = fields[i];
      std::visit(
          [&](auto m) {
            using M = decltype(m);
            if constexpr (std::is_same_v<M, std::string ResultRow::*>) {
              r.*m = text;
            } else if constexpr (std::is_same_v<M, int ResultRow::*>) {
              r.*m = parse_int<int>(c.name, text);
            } else if constexpr (std::is_same_v<M, int64_t ResultRow::*>) {
              r.*m = parse_int<int64_t>(c.name, text);
            } else if constexpr (std::is_same_v<M, double ResultRow::*>) {
              r.*m = parse_double(c.name, text);
            } else {
              r.*(m.member) = parse_double(c.name, text);
            }
          },
          c.member);
      break;
    }
  }
  return r;
}

}  // namespace kbench
