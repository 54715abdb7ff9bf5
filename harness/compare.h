// kbench compare: the CI regression gate. Matches the points of a baseline and a current
// result set and gives each a verdict; formats the report as a terminal table, a Markdown
// table (for a pull request) or JSON. Pure logic: no GPU, no CLI11, so `kbench run
// --baseline` can call compare_results on the rows it just measured.
//
// The verdict rule (README "CI regression gate" says the same):
//   change % = 100 * (current median - baseline median) / baseline median
//   s        = standard error of one row's median
//            = 1.2533 * ((p90 - p10) / 2.563) / sqrt(samples)
//              (p90 - p10 = 2.563 sigma for a normal; the median's standard error is
//               sqrt(pi/2) = 1.2533 times the mean's), or stddev / sqrt(samples) when the
//               row has no p10/p90, or 0 when it has neither (the threshold alone decides)
//   margin   = noise_sigmas * sqrt(s_baseline^2 + s_current^2)          (µs, noise_sigmas = 3)
//   slower   : change % >  threshold  and  current - baseline > margin
//   faster   : change % < -threshold  and  baseline - current > margin
//   same     : otherwise
// A point only in the current set is `new`, only in the baseline `missing`; a current row with
// status fail or error is `failed`, with status skip (or without a timing) `skipped`.
// The gate fails (exit 1) on any `slower` or `failed` point, on `missing` ones with
// fail_on_missing, and when no point is in both sets (nothing was compared: a current file
// without rows, or of other ops, passes no gate). Faster is never a failure.
#pragma once
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/result.h"

namespace kbench {

struct CompareOptions {
  double threshold_pct = 5.0;  // above the ~1-2% run-to-run noise of cold-L2 medians
  std::map<std::string, double> op_threshold_pct;  // per-op overrides of threshold_pct
  double noise_sigmas = 3.0;
  bool fail_on_missing = false;

  double threshold_for(const std::string& op) const;
};

// "5" or "5%" -> 5.0. Throws UsageError (naming `what`, e.g. "--threshold") unless it is a
// finite number >= 0.
double parse_threshold_pct(const std::string& text, const std::string& what = "--threshold");
// "rmsnorm_bwd=8%", each item possibly a comma list: {"rmsnorm_bwd": 8}. Throws UsageError on
// a malformed item or an op given twice.
std::map<std::string, double> parse_op_thresholds(const std::vector<std::string>& items);

// Rows of one side, with where they came from so errors can point at them. `lines` is empty
// for rows held in memory (then errors name row numbers, counted from 1).
struct ResultSet {
  std::string name;  // the file path, or "baseline" / "current" for rows in memory
  std::vector<ResultRow> rows;
  std::vector<size_t> lines;  // lines[i]: the line rows[i] starts on in the file
};

// Reads a kbench results CSV keeping each row's line number. Throws UsageError naming the
// file (and line) for a missing or unreadable file, a header without the columns compare
// needs, a bad field count, a bad number or an unknown status.
ResultSet load_result_set(const std::string& path);

enum class Verdict { faster, slower, same, added, missing, failed, skipped };
const char* verdict_name(Verdict v);  // faster slower same new missing failed skipped

struct PointComparison {
  // The match key: device_slug is part of it only when CompareReport::match_on_device_slug.
  std::string op, impl, dtype, shape, l2, device_slug;
  std::optional<ResultRow> baseline, current;
  double change_pct = std::numeric_limits<double>::quiet_NaN();       // NaN unless both
  double noise_margin_us = std::numeric_limits<double>::quiet_NaN();  // sides have a timing
  double threshold_pct = 0;  // the one that applied (per-op or global)
  Verdict verdict = Verdict::same;
  bool failure = false;  // this point fails the gate
  std::string note;      // why, where the verdict alone does not say it
};

struct CompareSummary {
  int faster = 0, slower = 0, same = 0, added = 0, missing = 0, failed = 0, skipped = 0;
  int failures = 0;  // points that fail the gate
  int in_both = 0;   // points with a row in each set (compared, skipped or failed)
  int total() const { return faster + slower + same + added + missing + failed + skipped; }
};

struct CompareReport {
  std::string baseline_name, current_name;
  std::vector<std::string> baseline_devices, current_devices;  // distinct names, in order
  bool match_on_device_slug = false;  // a file holds several devices
  CompareOptions options;
  std::vector<PointComparison> points;  // baseline order, then points new in current
  CompareSummary summary;
  std::vector<std::string> warnings;  // e.g. an --op-threshold naming an op in neither set

  bool devices_differ() const { return baseline_devices != current_devices; }
  bool nothing_compared() const { return summary.in_both == 0; }
  bool regressed() const { return summary.failures > 0 || nothing_compared(); }
  int exit_code() const;  // kExitFailed when regressed, else kExitOk
};

// Matches and judges. Throws UsageError on a duplicate key inside one set, naming the set and
// both lines (or rows).
CompareReport compare_results(const ResultSet& baseline, const ResultSet& current,
                              const CompareOptions& options);
// Rows in memory (what `kbench run --baseline` has): named "baseline" and "current".
CompareReport compare_results(const std::vector<ResultRow>& baseline,
                              const std::vector<ResultRow>& current, const CompareOptions& options);

// Terminal table: a header, one line per point, a summary line.
std::string format_table(const CompareReport& report);
// GitHub-flavoured Markdown: verdict headline, changed points in a table, unchanged ones folded
// into <details>, summary.
std::string format_markdown(const CompareReport& report);
// One JSON object: inputs, options, points, summary. NaN is null.
std::string format_json(const CompareReport& report);

}  // namespace kbench
