// kbench compare: every verdict, the noise rule (a slowdown inside the rows' recorded spread is
// not a regression), thresholds and their parsing, devices, the gate's exit code, the loader's
// errors (which must name the file and the lines), and the table / Markdown / JSON formats.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "harness/compare.h"
#include "harness/errors.h"
#include "harness/output.h"

namespace kbench {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A fresh path in the temp directory, removed when the test ends.
class TempFile {
 public:
  TempFile() {
    static const unsigned tag = std::random_device{}();  // keeps parallel ctest runs apart
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("kbench_compare_" + std::to_string(tag) + "_" + std::to_string(counter++) + ".csv"))
                .string();
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

void write_rows(const std::string& path, const std::vector<ResultRow>& rows) {
  CsvWriter writer(path);
  for (const ResultRow& r : rows) writer.add(r);
}

// A timed, passing point whose samples spread from p10 to p90 around the median.
ResultRow point(const std::string& impl, double median, double p10, double p90,
                const std::string& op = "rmsnorm") {
  ResultRow r;
  r.kbench_version = "0.1.0";
  r.device = "NVIDIA H100 80GB HBM3";
  r.device_slug = "h100-sxm";
  r.op = op;
  r.impl = impl;
  r.dtype = "bf16";
  r.shape = "4096x8192";
  r.m = 4096;
  r.n = 8192;
  r.l2 = "cold";
  r.samples = 200;
  r.median_us = median;
  r.mean_us = median;
  r.min_us = p10;
  r.p10_us = p10;
  r.p90_us = p90;
  r.stddev_us = (p90 - p10) / 2.563;
  r.ceiling_pct = kNan;
  r.status = "pass";
  return r;
}

// Tight: p10..p90 within 1% of the median, so the noise margin is tiny.
ResultRow tight(const std::string& impl, double median, const std::string& op = "rmsnorm") {
  return point(impl, median, median * 0.995, median * 1.005, op);
}

ResultRow with_status(ResultRow r, const std::string& status, const std::string& note = "") {
  r.status = status;
  r.note = note;
  if (status == "skip" || status == "error") r.median_us = r.p10_us = r.p90_us = kNan;
  return r;
}

const PointComparison& only_point(const CompareReport& report) {
  EXPECT_EQ(report.points.size(), 1u);
  return report.points.at(0);
}

Verdict verdict_of(const ResultRow& base, const ResultRow& cur, const CompareOptions& o = {}) {
  return only_point(compare_results({base}, {cur}, o)).verdict;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ----- verdicts ------------------------------------------------------------------------------

TEST(CompareVerdict, SixPercentSlowerWithTightSpreadIsSlowerAndFailsTheGate) {
  const CompareReport r = compare_results({tight("v1", 100)}, {tight("v1", 106)}, {});
  const PointComparison& p = only_point(r);
  EXPECT_EQ(p.verdict, Verdict::slower);
  EXPECT_NEAR(p.change_pct, 6.0, 1e-9);
  EXPECT_TRUE(p.failure);
  EXPECT_EQ(r.summary.slower, 1);
  EXPECT_TRUE(r.regressed());
  EXPECT_EQ(r.exit_code(), kExitFailed);
}

TEST(CompareVerdict, SixPercentSlowerWithHugeSpreadIsSameWithinNoise) {
  // p10..p90 of 60..140 µs over 200 samples: margin = 3·sqrt(2)·1.2533·(80/2.563)/sqrt(200)
  // ≈ 11.8 µs > the 6 µs slowdown.
  const CompareReport r =
      compare_results({point("v1", 100, 60, 140)}, {point("v1", 106, 66, 146)}, {});
  const PointComparison& p = only_point(r);
  EXPECT_EQ(p.verdict, Verdict::same);
  EXPECT_FALSE(p.failure);
  EXPECT_TRUE(contains(p.note, "within noise")) << p.note;
  EXPECT_EQ(r.exit_code(), kExitOk);
}

TEST(CompareVerdict, NoiseMarginFollowsTheDocumentedFormula) {
  const PointComparison p =
      only_point(compare_results({point("v1", 100, 60, 140)}, {point("v1", 106, 70, 150)}, {}));
  const double sb = 1.2533 * (80.0 / 2.563) / std::sqrt(200.0);
  const double sc = sb;  // the same spread
  EXPECT_NEAR(p.noise_margin_us, 3.0 * std::sqrt(sb * sb + sc * sc), 1e-9);
}

TEST(CompareVerdict, WithoutPercentilesTheMarginUsesStddev) {
  ResultRow b = tight("v1", 100), c = tight("v1", 106);
  b.p10_us = b.p90_us = c.p10_us = c.p90_us = kNan;
  b.stddev_us = c.stddev_us = 10.0;
  b.samples = c.samples = 100;
  const PointComparison p = only_point(compare_results({b}, {c}, {}));
  // 3 · sqrt(1² + 1²) = 4.24 µs < 6 µs: slower.
  EXPECT_NEAR(p.noise_margin_us, 3.0 * std::sqrt(2.0), 1e-9);
  EXPECT_EQ(p.verdict, Verdict::slower);
  b.stddev_us = c.stddev_us = 20.0;  // margin 8.5 µs > 6 µs
  EXPECT_EQ(verdict_of(b, c), Verdict::same);
}

TEST(CompareVerdict, NoiseSigmasScaleTheMargin) {
  CompareOptions o;
  o.noise_sigmas = 0;  // threshold alone
  EXPECT_EQ(verdict_of(point("v1", 100, 60, 140), point("v1", 106, 66, 146), o), Verdict::slower);
}

TEST(CompareVerdict, BelowTheThresholdIsSameEvenBeyondNoise) {
  EXPECT_EQ(verdict_of(tight("v1", 100), tight("v1", 104)), Verdict::same);
  EXPECT_EQ(verdict_of(tight("v1", 100), tight("v1", 105)), Verdict::same);  // not above 5%
  EXPECT_EQ(verdict_of(tight("v1", 100), tight("v1", 96)), Verdict::same);
}

TEST(CompareVerdict, FasterIsNeverAFailure) {
  const CompareReport r = compare_results({tight("v1", 100)}, {tight("v1", 80)}, {});
  EXPECT_EQ(only_point(r).verdict, Verdict::faster);
  EXPECT_NEAR(only_point(r).change_pct, -20.0, 1e-9);
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(r.summary.faster, 1);
  // Faster within noise is same, like slower.
  EXPECT_EQ(verdict_of(point("v1", 100, 60, 140), point("v1", 94, 54, 134)), Verdict::same);
}

TEST(CompareVerdict, NewAndMissingAreReportedButPassByDefault) {
  const CompareReport r = compare_results({tight("v1", 10), tight("gone", 10)},
                                          {tight("v1", 10), tight("fresh", 10)}, {});
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[0].verdict, Verdict::same);
  EXPECT_EQ(r.points[1].impl, "gone");
  EXPECT_EQ(r.points[1].verdict, Verdict::missing);
  EXPECT_EQ(r.points[2].impl, "fresh");  // new points come after the baseline's
  EXPECT_EQ(r.points[2].verdict, Verdict::added);
  EXPECT_EQ(r.summary.missing, 1);
  EXPECT_EQ(r.summary.added, 1);
  EXPECT_EQ(r.exit_code(), kExitOk);
}

// A gate that compared nothing passes nothing: a current set without rows (a run that died
// before its first point) or of other points fails, though no point is slower or failed. One
// point in both is enough, even a skipped one.
TEST(CompareVerdict, NothingInBothSetsFailsTheGate) {
  const CompareReport empty = compare_results({tight("v1", 10), tight("v2", 10)}, {}, {});
  EXPECT_EQ(empty.summary.missing, 2);
  EXPECT_EQ(empty.summary.failures, 0);
  EXPECT_EQ(empty.summary.in_both, 0);
  EXPECT_EQ(empty.exit_code(), kExitFailed);
  EXPECT_TRUE(contains(format_table(empty), "-> FAIL (no point in both files: nothing compared)"))
      << format_table(empty);
  EXPECT_EQ(compare_results({tight("v1", 10)}, {tight("other", 10)}, {}).exit_code(), kExitFailed);
  EXPECT_EQ(compare_results(std::vector<ResultRow>{}, std::vector<ResultRow>{}, {}).exit_code(),
            kExitFailed);
  const CompareReport skipped = compare_results(
      {tight("v1", 10), tight("v2", 10)}, {with_status(tight("v1", 10), "skip", "too large")}, {});
  EXPECT_EQ(skipped.summary.in_both, 1);
  EXPECT_EQ(skipped.exit_code(), kExitOk);
}

TEST(CompareVerdict, FailOnMissingMakesMissingAFailure) {
  CompareOptions o;
  o.fail_on_missing = true;
  const CompareReport r =
      compare_results({tight("v1", 10), tight("gone", 10)}, {tight("v1", 10)}, o);
  EXPECT_TRUE(r.points[1].failure);
  EXPECT_EQ(r.exit_code(), kExitFailed);
}

TEST(CompareVerdict, ACurrentFailOrErrorFailsTheGateEvenWhenNewOrFaster) {
  for (const char* status : {"fail", "error"}) {
    SCOPED_TRACE(status);
    ResultRow cur = with_status(tight("v1", 50), status, "max_abs_err 3 > tol");
    const CompareReport r = compare_results({tight("v1", 100)}, {cur}, {});
    EXPECT_EQ(only_point(r).verdict, Verdict::failed);
    EXPECT_EQ(only_point(r).note, "max_abs_err 3 > tol");
    EXPECT_EQ(r.exit_code(), kExitFailed);
    const CompareReport fresh = compare_results({}, {cur}, {});
    EXPECT_EQ(only_point(fresh).verdict, Verdict::failed);
    EXPECT_EQ(fresh.summary.failed, 1);
    EXPECT_EQ(fresh.exit_code(), kExitFailed);
  }
}

TEST(CompareVerdict, ACurrentSkipIsSkippedNotAFailure) {
  const CompareReport r =
      compare_results({tight("v1", 100)}, {with_status(tight("v1", 100), "skip", "too large")}, {});
  EXPECT_EQ(only_point(r).verdict, Verdict::skipped);
  EXPECT_EQ(only_point(r).note, "too large");
  EXPECT_EQ(r.summary.skipped, 1);
  EXPECT_EQ(r.exit_code(), kExitOk);
}

TEST(CompareVerdict, ABaselineWithoutTimingMakesThePointNew) {
  const PointComparison p =
      only_point(compare_results({with_status(tight("v1", 100), "skip")}, {tight("v1", 100)}, {}));
  EXPECT_EQ(p.verdict, Verdict::added);
  EXPECT_FALSE(p.failure);
  EXPECT_TRUE(contains(p.note, "baseline has no timing")) << p.note;
}

TEST(CompareVerdict, L2StateAndDtypeArePartOfTheKey) {
  ResultRow hot = tight("v1", 100);
  hot.l2 = "hot";
  ResultRow f16 = tight("v1", 100);
  f16.dtype = "fp16";
  const CompareReport r = compare_results({tight("v1", 100)}, {hot, f16}, {});
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.summary.missing, 1);
  EXPECT_EQ(r.summary.added, 2);
}

// ----- thresholds ----------------------------------------------------------------------------

TEST(CompareThreshold, ParsesPlainAndPercentSpellings) {
  EXPECT_DOUBLE_EQ(parse_threshold_pct("5"), 5.0);
  EXPECT_DOUBLE_EQ(parse_threshold_pct("5%"), 5.0);
  EXPECT_DOUBLE_EQ(parse_threshold_pct("0.5%"), 0.5);
  EXPECT_DOUBLE_EQ(parse_threshold_pct("0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_threshold_pct("12.5"), 12.5);
}

TEST(CompareThreshold, RejectsWhatIsNotAPercentage) {
  for (const char* bad :
       {"", "%", "-1", "-1%", "abc", "5%%", " 5", "5 ", "5 %", "nan", "inf", "1e999", "5x", "%5"}) {
    SCOPED_TRACE(bad);
    try {
      parse_threshold_pct(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_TRUE(contains(e.what(), "--threshold '" + std::string(bad) + "'")) << e.what();
    }
  }
}

TEST(CompareThreshold, OpThresholdsFromRepeatsAndCommaLists) {
  const auto m = parse_op_thresholds({"rmsnorm_bwd=8%", "softmax=10,layernorm=2.5%"});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m.at("rmsnorm_bwd"), 8.0);
  EXPECT_DOUBLE_EQ(m.at("softmax"), 10.0);
  EXPECT_DOUBLE_EQ(m.at("layernorm"), 2.5);
  EXPECT_TRUE(parse_op_thresholds({}).empty());
  for (const char* bad : {"rmsnorm", "=5", "rmsnorm=", "rmsnorm=x", "a=1,a=2", "a=1,", "a=-3"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_op_thresholds({bad}), UsageError);
  }
}

TEST(CompareThreshold, PerOpOverrideAppliesToThatOpOnly) {
  CompareOptions o;
  o.op_threshold_pct = {{"rmsnorm_bwd", 8.0}};
  const CompareReport r = compare_results({tight("v1", 100, "rmsnorm_bwd"), tight("v1", 100)},
                                          {tight("v1", 106, "rmsnorm_bwd"), tight("v1", 106)}, o);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].verdict, Verdict::same);  // 6% < 8%
  EXPECT_DOUBLE_EQ(r.points[0].threshold_pct, 8.0);
  EXPECT_EQ(r.points[1].verdict, Verdict::slower);  // 6% > 5%
  EXPECT_DOUBLE_EQ(r.points[1].threshold_pct, 5.0);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(CompareThreshold, AnOverrideForAnAbsentOpIsAWarning) {
  CompareOptions o;
  o.op_threshold_pct = {{"rmsnrom", 8.0}};
  const CompareReport r = compare_results({tight("v1", 100)}, {tight("v1", 100)}, o);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_TRUE(contains(r.warnings[0], "rmsnrom"));
}

// ----- devices -------------------------------------------------------------------------------

ResultRow on_h200(ResultRow r) {
  r.device = "NVIDIA H200";
  r.device_slug = "h200-sxm";
  return r;
}

TEST(CompareDevices, DifferentDevicesAreMatchedAndNamedInTheHeader) {
  ResultRow b = tight("v1", 100), c = on_h200(tight("v1", 80));
  b.ceiling_pct = 50;
  c.ceiling_pct = 47.5;
  const CompareReport r = compare_results({b}, {c}, {});
  EXPECT_TRUE(r.devices_differ());
  EXPECT_FALSE(r.match_on_device_slug);
  EXPECT_EQ(only_point(r).verdict, Verdict::faster);
  const std::string table = format_table(r);
  EXPECT_TRUE(
      contains(table, "comparing NVIDIA H100 80GB HBM3 (baseline) with NVIDIA H200 (current)"))
      << table;
  EXPECT_TRUE(contains(table, "50.0% -> 47.5%")) << table;
  EXPECT_TRUE(contains(format_markdown(r), "50.0% -> 47.5%"));
}

TEST(CompareDevices, SameDeviceHasNoDeviceLineAndNoCeilingColumn) {
  ResultRow b = tight("v1", 100), c = tight("v1", 100);
  b.ceiling_pct = 50;
  c.ceiling_pct = 50;
  const CompareReport r = compare_results({b}, {c}, {});
  EXPECT_FALSE(r.devices_differ());
  const std::string table = format_table(r);
  EXPECT_FALSE(contains(table, "comparing")) << table;
  EXPECT_FALSE(contains(table, "%ceiling")) << table;
}

TEST(CompareDevices, FilesWithSeveralDevicesAreMatchedPerDevice) {
  const std::vector<ResultRow> base = {tight("v1", 100), on_h200(tight("v1", 80))};
  const CompareReport r = compare_results(base, {tight("v1", 100), on_h200(tight("v1", 90))}, {});
  EXPECT_TRUE(r.match_on_device_slug);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].device_slug, "h100-sxm");
  EXPECT_EQ(r.points[0].verdict, Verdict::same);
  EXPECT_EQ(r.points[1].device_slug, "h200-sxm");
  EXPECT_EQ(r.points[1].verdict, Verdict::slower);  // 80 -> 90 on the H200 itself
  // One side with several devices is keyed per device too (it could not be keyed otherwise):
  // the H200 rows match, the H100 ones are missing.
  const CompareReport one = compare_results(base, {on_h200(tight("v1", 80))}, {});
  EXPECT_TRUE(one.match_on_device_slug);
  EXPECT_EQ(one.summary.same, 1);
  EXPECT_EQ(one.summary.missing, 1);
}

// ----- loading files -------------------------------------------------------------------------

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(CompareLoad, RoundTripThroughCsvWriterKeepsLineNumbers) {
  TempFile f;
  ResultRow a = tight("v1", 100);
  a.note = "two\nlines";  // a quoted field spanning lines: the next row starts a line later
  write_rows(f.path(), {a, tight("v2", 50)});
  const ResultSet set = load_result_set(f.path());
  ASSERT_EQ(set.rows.size(), 2u);
  EXPECT_EQ(set.name, f.path());
  EXPECT_EQ(set.lines, (std::vector<size_t>{2, 4}));
  EXPECT_EQ(set.rows[0].note, "two\nlines");
  EXPECT_DOUBLE_EQ(set.rows[1].median_us, 50);
  EXPECT_DOUBLE_EQ(set.rows[1].p90_us, 50 * 1.005);
}

TEST(CompareLoad, MissingFileNamesIt) {
  const std::string msg = usage_error_of([] { load_result_set("/nonexistent/base.csv"); });
  EXPECT_TRUE(contains(msg, "/nonexistent/base.csv")) << msg;
}

TEST(CompareLoad, ADirectoryIsNotAResultsFile) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_TRUE(contains(usage_error_of([&] { load_result_set(dir); }), "directory"));
}

TEST(CompareLoad, NonKbenchCsvNamesTheMissingColumn) {
  TempFile f;
  write_text(f.path(), "name,value\nfoo,1\n");
  const std::string msg = usage_error_of([&] { load_result_set(f.path()); });
  EXPECT_TRUE(contains(msg, f.path())) << msg;
  EXPECT_TRUE(contains(msg, "not a kbench results CSV (missing column 'op')")) << msg;
  write_text(f.path(), "");
  EXPECT_TRUE(contains(usage_error_of([&] { load_result_set(f.path()); }), "empty file"));
}

TEST(CompareLoad, BadNumberAndBadStatusNameFileLineAndValue) {
  TempFile f;
  write_text(f.path(),
             "op,impl,dtype,shape,l2,median_us,status\n"
             "rmsnorm,v1,bf16,4x4,cold,1.5,pass\n"
             "rmsnorm,v2,bf16,4x4,cold,fast,pass\n");
  std::string msg = usage_error_of([&] { load_result_set(f.path()); });
  EXPECT_TRUE(contains(msg, f.path() + ":3:")) << msg;
  EXPECT_TRUE(contains(msg, "median_us")) << msg;
  EXPECT_TRUE(contains(msg, "'fast'")) << msg;

  write_text(f.path(),
             "op,impl,dtype,shape,l2,median_us,status\n"
             "rmsnorm,v1,bf16,4x4,cold,1.5,ok\n");
  msg = usage_error_of([&] { load_result_set(f.path()); });
  EXPECT_TRUE(contains(msg, f.path() + ":2: bad status 'ok'")) << msg;

  write_text(f.path(), "op,impl,dtype,shape,l2,median_us,status\nrmsnorm,v1\n");
  msg = usage_error_of([&] { load_result_set(f.path()); });
  EXPECT_TRUE(contains(msg, f.path() + ":2:")) << msg;
}

TEST(CompareLoad, DuplicateKeysNameTheFileAndBothLines) {
  TempFile base, cur;
  ResultRow noted = tight("v2", 10);
  noted.note = "a\nb";  // lines 3-4
  write_rows(base.path(), {tight("v1", 100), noted, tight("v3", 10), tight("v1", 101)});
  write_rows(cur.path(), {tight("v1", 100)});
  const ResultSet b = load_result_set(base.path()), c = load_result_set(cur.path());
  const std::string msg = usage_error_of([&] { compare_results(b, c, {}); });
  EXPECT_TRUE(contains(msg, base.path() + ": duplicate point rmsnorm v1 bf16 4096x8192 l2=cold"))
      << msg;
  EXPECT_TRUE(contains(msg, "line 2 and line 6")) << msg;
  // In the current file just as well.
  EXPECT_TRUE(contains(usage_error_of([&] { compare_results(c, b, {}); }), base.path()));
}

TEST(CompareLoad, DuplicateRowsInMemoryNameTheRows) {
  const std::string msg = usage_error_of([] {
    compare_results({tight("v1", 1)}, {tight("v1", 1), tight("v1", 2)}, {});
  });
  EXPECT_TRUE(contains(msg, "current: duplicate point")) << msg;
  EXPECT_TRUE(contains(msg, "row 1 and row 2")) << msg;
}

// ----- formats -------------------------------------------------------------------------------

CompareReport mixed_report() {
  ResultRow failing = with_status(tight("v4", 10), "fail", "bad | pipe <b>");
  return compare_results(
      {tight("v1", 100), tight("v2", 100), tight("v3", 100), tight("v4", 10), tight("v5", 10)},
      {tight("v1", 110), tight("v2", 90), tight("v3", 101), failing, tight("v6", 10)}, {});
}

TEST(CompareFormat, TableHasOneLinePerPointAndTheGateResult) {
  const std::string t = format_table(mixed_report());
  EXPECT_TRUE(contains(t, "baseline: baseline (NVIDIA H100 80GB HBM3)")) << t;
  for (const char* line_part :
       {"v1", "+10.0%", "slower", "-10.0%", "faster", "same", "failed", "missing", "new"}) {
    EXPECT_TRUE(contains(t, line_part)) << line_part << "\n" << t;
  }
  EXPECT_TRUE(contains(t,
                       "6 points: 1 faster, 1 slower, 1 same, 1 new, 1 missing, 1 failed, "
                       "0 skipped -> FAIL (2 points slower or failed)"))
      << t;
  const std::string pass = format_table(compare_results({tight("v1", 1)}, {tight("v1", 1)}, {}));
  EXPECT_TRUE(contains(pass, "-> PASS")) << pass;
  for (size_t pos = 0; (pos = pass.find(" \n", pos)) != std::string::npos; ++pos) {
    ADD_FAILURE() << "trailing blank at " << pos;
  }
}

TEST(CompareFormat, MarkdownTableForAPullRequest) {
  const std::string md = format_markdown(mixed_report());
  EXPECT_EQ(md.rfind("### kbench compare: FAIL", 0), 0u) << md;
  EXPECT_TRUE(contains(md,
                       "| op | impl | dtype | shape | l2 | baseline µs | current µs | change | "
                       "noise µs | verdict | note |\n"
                       "|---|---|---|---|---|---:|---:|---:|---:|---|---|\n"))
      << md;
  EXPECT_TRUE(
      contains(md, "| rmsnorm | v1 | bf16 | 4096x8192 | cold | 100.00 | 110.00 | +10.0% | "))
      << md;
  EXPECT_TRUE(contains(md, "| **slower** |")) << md;                        // failures stand out
  EXPECT_TRUE(contains(md, "| **failed** | bad \\| pipe &lt;b> |")) << md;  // escaped cell
  EXPECT_TRUE(contains(md, "| faster |")) << md;
  // The unchanged point is folded away, after the changed ones.
  const size_t details = md.find("<details><summary>1 unchanged point</summary>");
  ASSERT_NE(details, std::string::npos) << md;
  EXPECT_GT(md.find("| v3 |"), details);
  EXPECT_LT(md.find("| v1 |"), details);
}

TEST(CompareFormat, MarkdownWhenNothingChanged) {
  const std::string md = format_markdown(compare_results({tight("v1", 1)}, {tight("v1", 1)}, {}));
  EXPECT_EQ(md.rfind("### kbench compare: PASS", 0), 0u) << md;
  EXPECT_TRUE(contains(md, "No point changed")) << md;
}

TEST(CompareFormat, JsonExactTextForATinyCase) {
  ResultRow b = point("v1", 100, 99, 101), c = point("v1", 110, 109, 111);
  b.samples = c.samples = 100;
  const std::string json = format_json(compare_results({b}, {c}, {}));
  // margin = 3·sqrt(2)·1.2533·(2/2.563)/10 = 0.414928 µs
  const std::string expected =
      "{\n"
      "  \"baseline\": {\"name\": \"baseline\", \"devices\": [\"NVIDIA H100 80GB HBM3\"]},\n"
      "  \"current\": {\"name\": \"current\", \"devices\": [\"NVIDIA H100 80GB HBM3\"]},\n"
      "  \"options\": {\"threshold_pct\": 5, \"op_threshold_pct\": {}, \"noise_sigmas\": 3, "
      "\"fail_on_missing\": false},\n"
      "  \"devices_differ\": false, \"match_on_device_slug\": false,\n"
      "  \"points\": [\n"
      "    {\"op\": \"rmsnorm\", \"impl\": \"v1\", \"dtype\": \"bf16\", \"shape\": \"4096x8192\", "
      "\"l2\": \"cold\", \"baseline_us\": 100, \"current_us\": 110, \"change_pct\": 10, "
      "\"noise_margin_us\": 0.414928, \"threshold_pct\": 5, \"baseline_ceiling_pct\": null, "
      "\"current_ceiling_pct\": null, \"baseline_status\": \"pass\", \"current_status\": \"pass\", "
      "\"verdict\": \"slower\", \"failure\": true, \"note\": \"\"}\n"
      "  ],\n"
      "  \"summary\": {\"points\": 1, \"faster\": 0, \"slower\": 1, \"same\": 0, \"new\": 0, "
      "\"missing\": 0, \"failed\": 0, \"skipped\": 0, \"failures\": 1, \"in_both\": 1, "
      "\"regressed\": true, "
      "\"exit_code\": 1},\n"
      "  \"warnings\": []\n"
      "}\n";
  EXPECT_EQ(json, expected);
}

// Brackets and braces balance outside strings, and nothing JSON cannot spell leaks out.
void expect_balanced_json(const std::string& s) {
  std::string stack;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;  // the escaped character
      } else if (ch == '"') {
        in_string = false;
      } else {
        ASSERT_GE(static_cast<unsigned char>(ch), 0x20) << "control character in a string";
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      stack += ch;
    } else if (ch == '}' || ch == ']') {
      ASSERT_FALSE(stack.empty()) << "unbalanced at " << i;
      ASSERT_EQ(stack.back(), ch == '}' ? '{' : '[') << "mismatched at " << i;
      stack.pop_back();
    } else {
      ASSERT_TRUE(std::string(" \n,:-+.0123456789eEtruefalsn").find(ch) != std::string::npos)
          << "unexpected '" << ch << "' at " << i;
    }
  }
  EXPECT_FALSE(in_string);
  EXPECT_TRUE(stack.empty());
  EXPECT_FALSE(contains(s, "nan"));
  EXPECT_FALSE(contains(s, "inf"));
}

TEST(CompareFormat, JsonOfAMixedReportIsWellFormed) {
  CompareOptions o;
  o.op_threshold_pct = {{"rmsnorm", 7}, {"other\"op", 2}};
  ResultRow b = tight("v1", 100), c = on_h200(tight("v1", 100));
  c.ceiling_pct = 61.25;
  const std::string json = format_json(compare_results({b, tight("v2", 3)}, {c}, o));
  expect_balanced_json(json);
  EXPECT_TRUE(contains(json, "\"op_threshold_pct\": {\"other\\\"op\": 2, \"rmsnorm\": 7}")) << json;
  EXPECT_TRUE(contains(json, "\"current_ceiling_pct\": 61.25")) << json;
  EXPECT_TRUE(contains(json, "\"devices_differ\": true")) << json;
  EXPECT_TRUE(contains(json, "\"verdict\": \"missing\"")) << json;
  EXPECT_TRUE(contains(json, "\"current_us\": null")) << json;
  expect_balanced_json(format_json(mixed_report()));
}

}  // namespace
}  // namespace kbench
