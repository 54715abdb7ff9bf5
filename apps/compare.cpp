// kbench compare: the CI regression gate. Reads a baseline and a current results CSV, prints a
// verdict per point and a summary; exit 1 on a regression or a failed check, 2 on bad input.
// Needs no GPU. The matching and the verdict rule live in harness/compare.h.
#include "harness/compare.h"

#include <iostream>

#include "apps/commands.h"
#include "harness/errors.h"
#include "harness/output.h"

namespace kbench::app {
namespace {

struct CompareCommandOptions {
  std::string baseline, current;
  std::string threshold = "5%";
  std::vector<std::string> op_thresholds;
  double noise_sigmas = 3.0;
  std::string format = "table";
  bool fail_on_missing = false;
  std::string output;
};

std::string format_report(const CompareReport& report, const std::string& format) {
  if (format == "md") return format_markdown(report);
  if (format == "json") return format_json(report);
  return format_table(report);
}

int execute(const CompareCommandOptions& o) {
  // Every argument is checked before either file is read: a typo is exit 2 straight away.
  CompareOptions options;
  options.threshold_pct = parse_threshold_pct(o.threshold);
  options.op_threshold_pct = parse_op_thresholds(o.op_thresholds);
  options.noise_sigmas = o.noise_sigmas;
  options.fail_on_missing = o.fail_on_missing;

  const CompareReport report =
      compare_results(load_result_set(o.baseline), load_result_set(o.current), options);
  const std::string text = format_report(report, o.format);
  std::cout << text;
  std::cout.flush();
  if (!o.output.empty()) write_text_file(o.output, text);
  for (const std::string& w : report.warnings) std::cerr << "kbench: warning: " << w << "\n";
  return report.exit_code();
}

}  // namespace

void setup_compare(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "CI gate: compare two results CSVs; exit 1 on a regression or a failed check");
  cmd->add_option("BASELINE", o->baseline, "Reference results CSV (e.g. results/<gpu>.csv)")
      ->required();
  cmd->add_option("CURRENT", o->current, "Results CSV to judge (from kbench run --csv)")
      ->required();
  cmd->add_option("--threshold", o->threshold,
                  "Slowdown that counts as a regression, in percent: 5 or 5%")
      ->capture_default_str();
  // One value per occurrence, so `--op-threshold a=8% BASE CUR` leaves the files positional.
  cmd->add_option("--op-threshold", o->op_thresholds,
                  "Per-op threshold OP=PCT; repeat it or give a comma list")
      ->allow_extra_args(false);
  cmd->add_option("--noise-sigmas", o->noise_sigmas,
                  "Slower/faster only beyond this many standard errors of the medians' difference")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  cmd->add_option("--format", o->format, "Report format: table | md (pull request) | json")
      ->check(CLI::IsMember({"table", "md", "json"}))
      ->capture_default_str();
  cmd->add_flag("--fail-on-missing", o->fail_on_missing,
                "A point in the baseline but not in the current CSV fails the gate");
  cmd->add_option("--output", o->output, "Also write the report to this file");
  cmd->callback([o, &exit_code] { exit_code = execute(*o); });
}

}  // namespace kbench::app
