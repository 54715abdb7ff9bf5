// kbench run: check every selected point against its float64 reference, then time it.
// kbench check: the same selection, correctness only; exit 1 on any failure.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <iostream>

#include "apps/commands.h"
#include "apps/selection.h"
#include "harness/ceilings.h"
#include "harness/compare.h"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/metrics.h"
#include "harness/output.h"

namespace kbench::app {
namespace {

struct RunCommandOptions {
  Selection selection;
  std::string l2 = "cold";
  TimingOptions timing;
  std::string csv;          // "" = default path under results/runs/
  bool no_csv = false;
  std::string json;
  std::string gbench_json;
  std::string format = "table";
  std::string ceilings = default_ceilings_path();
  bool no_auto_calibrate = false;
  std::string baseline;                  // gate this run against a baseline CSV
  std::string threshold = "5";
  std::vector<std::string> inject_slowdown;  // test-only: IMPL=PCT
  bool check_once = false;               // no checked later launch (--later-checks 0)
  bool no_guards = false;                // check only: buffers at their exact sizes and places
  int later_checks = 1;
};

constexpr int kMaxLaterChecks = 1000000;

// Collects the run's rows for the --baseline gate.
struct RowCollector : Reporter {
  std::vector<ResultRow> rows;
  void add(const ResultRow& r) override { rows.push_back(r); }
};

// "v3_vec16_regs=10" -> {"v3_vec16_regs": 10}
std::map<std::string, double> parse_injections(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("bad --inject-slowdown '" + item + "' (want IMPL=PERCENT)");
    out[item.substr(0, eq)] = parse_threshold_pct(item.substr(eq + 1), "--inject-slowdown");
  }
  return out;
}

// results/runs/<device-slug>-<first op>-<UTC time>.csv
std::string default_csv_path(const RunOptions& options) {
  std::string stamp = utc_timestamp();
  std::erase(stamp, ':');
  std::erase(stamp, '-');
  const std::string slug = query_device(options.devices.front()).slug;
  return "results/runs/" + slug + "-" + options.ops.front()->name + "-" + stamp + ".csv";
}

void add_timing_options(CLI::App* cmd, RunCommandOptions& o) {
  cmd->add_option("--l2", o.l2, "L2 state for each sample: cold (flushed) | hot")
      ->check(CLI::IsMember({"cold", "hot"}))->capture_default_str();
  cmd->add_option("--samples", o.timing.samples, "Fixed samples per point (default: from --target-ms)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--min-samples", o.timing.min_samples, "Fewest samples per point")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--max-samples", o.timing.max_samples, "Most samples per point")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--target-ms", o.timing.target_ms, "Kernel time to accumulate per point")
      ->check(CLI::Range(0.001, 1e6))->capture_default_str();
  cmd->add_option("--max-noise", o.timing.max_noise_pct,
                  "Re-measure with --max-samples when noise (stddev/mean, %) exceeds this; 0 = off")
      ->check(CLI::Range(0.0, 1000.0))->capture_default_str();
  cmd->add_option("--repetitions", o.timing.repetitions, "Google Benchmark repetitions per point")
      ->check(CLI::Range(1, 1000))->capture_default_str();
}

void add_output_options(CLI::App* cmd, RunCommandOptions& o) {
  cmd->add_option("--csv", o.csv, "CSV path (default: results/runs/<device>-<op>-<time>.csv)");
  cmd->add_flag("--no-csv", o.no_csv, "Write no CSV");
  cmd->add_option("--json", o.json, "Also write the rows as JSON to this path");
  cmd->add_option("--gbench-json", o.gbench_json,
                  "Write Google Benchmark's JSON (input for its tools/compare.py) to this path");
  cmd->add_option("--format", o.format, "Terminal output: table | csv | json | none")
      ->check(CLI::IsMember({"table", "csv", "json", "none"}))->capture_default_str();
  cmd->add_option("--ceilings", o.ceilings, "Measured-ceilings file ($KBENCH_CEILINGS)")
      ->capture_default_str();
  cmd->add_flag("--no-auto-calibrate", o.no_auto_calibrate,
                "Leave ceiling columns empty instead of measuring copy bandwidth when none is stored");
  cmd->add_option("--baseline", o.baseline,
                  "Gate this run against a baseline CSV, as `kbench compare` does (exit 1 on regression)");
  cmd->add_option("--threshold", o.threshold, "With --baseline: slowdown that counts, in percent")
      ->capture_default_str();
  cmd->add_option("--inject-slowdown", o.inject_slowdown,
                  "Test only: IMPL=PCT adds a read of PCT% more bytes to each timed launch of IMPL "
                  "(to prove the gate catches it)")->group("Testing");
}

void add_later_check_options(CLI::App* cmd, RunCommandOptions& o) {
  CLI::Option* later =
      cmd->add_option("--later-checks", o.later_checks,
                      "Check each point again on this many later launches (after the timed ones "
                      "in `run`), each after one launch on other input values, its outputs bit for "
                      "bit the first launch's; raise it to catch a kernel wrong on one launch in many")
          ->check(CLI::Range(0, kMaxLaterChecks))->capture_default_str();
  cmd->add_flag("--check-once", o.check_once,
                "Check each point on its first launch only (--later-checks 0)")->excludes(later);
}

std::unique_ptr<Reporter> terminal_reporter(const std::string& format, bool with_timing) {
  if (format == "table") return std::make_unique<ConsoleTable>(std::cout, with_timing);
  if (format == "csv") return std::make_unique<CsvWriter>("/dev/stdout");
  if (format == "json") return std::make_unique<JsonWriter>("/dev/stdout");
  return nullptr;
}

int execute(const RunCommandOptions& o, bool measure) {
  if (o.timing.min_samples > o.timing.max_samples)
    throw UsageError("--min-samples " + std::to_string(o.timing.min_samples) +
                     " exceeds --max-samples " + std::to_string(o.timing.max_samples));
  RunOptions options;
  resolve_selection(o.selection, options);  // exit 2 here, before any GPU call
  options.measure = measure;
  options.later_checks = o.check_once ? 0 : o.later_checks;
  options.guards = !o.no_guards;
  options.timing = o.timing;
  options.timing.cold_l2 = o.l2 == "cold";
  options.ceilings_path = o.ceilings;
  options.auto_calibrate = !o.no_auto_calibrate;
  options.gbench_json = o.gbench_json;
  options.inject_slowdown_pct = parse_injections(o.inject_slowdown);
  CompareOptions gate;
  gate.threshold_pct = parse_threshold_pct(o.threshold);
  std::optional<ResultSet> baseline;
  if (!o.baseline.empty()) baseline = load_result_set(o.baseline);  // exit 2 before any GPU call
  options.devices = resolve_devices(o.selection.device);  // exit 3 without a GPU

  MultiReporter reporter;
  std::string csv_path;
  if (measure && !o.no_csv) {
    csv_path = o.csv.empty() ? default_csv_path(options) : o.csv;
    const std::filesystem::path p(csv_path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    reporter.attach(std::make_unique<CsvWriter>(csv_path));
  } else if (!o.csv.empty()) {
    csv_path = o.csv;
    reporter.attach(std::make_unique<CsvWriter>(csv_path));
  }
  if (!o.json.empty()) reporter.attach(std::make_unique<JsonWriter>(o.json));
  if (auto terminal = terminal_reporter(o.format, measure)) reporter.attach(std::move(terminal));
  auto collector = std::make_unique<RowCollector>();
  RowCollector* rows = collector.get();
  reporter.attach(std::move(collector));

  const RunSummary summary = run_sweep(options, reporter);
  reporter.finish();
  std::cerr << "kbench: " << summary.rows << " rows: " << summary.passed << " pass, "
            << summary.failed << " fail, " << summary.skipped << " skip, " << summary.errors
            << " error" << (csv_path.empty() ? "" : " -> " + csv_path) << "\n";
  int exit_code = summary.failed > 0 ? kExitFailed : kExitOk;
  if (baseline) {
    const CompareReport report =
        compare_results(*baseline, ResultSet{"current run", rows->rows, {}}, gate);
    std::cout << "\n" << format_table(report);
    exit_code = std::max(exit_code, report.exit_code());
  }
  return exit_code;
}

}  // namespace

void setup_run(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Check and time ops over a sweep; table on the terminal, CSV under results/");
  add_selection_options(cmd, o->selection);
  add_timing_options(cmd, *o);
  add_output_options(cmd, *o);
  add_later_check_options(cmd, *o);
  cmd->callback([o, &exit_code] { exit_code = execute(*o, true); });
}

void setup_check(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Correctness only; exit 1 on any failure");
  add_selection_options(cmd, o->selection);
  cmd->add_option("--csv", o->csv, "Also write the rows as CSV to this path");
  cmd->add_option("--json", o->json, "Also write the rows as JSON to this path");
  cmd->add_option("--format", o->format, "Terminal output: table | csv | json | none")
      ->check(CLI::IsMember({"table", "csv", "json", "none"}))->capture_default_str();
  add_later_check_options(cmd, *o);
  cmd->add_flag("--no-guards", o->no_guards,
                "No guard bytes beside the outputs and workspace: buffers at their exact sizes and "
                "places, as `run` has them (for compute-sanitizer, whose memcheck then sees every "
                "access past an end or before a start)");
  cmd->callback([o, &exit_code] { exit_code = execute(*o, false); });
}

}  // namespace kbench::app
