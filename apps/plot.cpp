// kbench plot: results CSVs -> one standalone SVG chart (roofline or bandwidth vs size).
// Needs no GPU and no extra software; the drawing lives in harness/plot.h.
#include "harness/plot.h"

#include <filesystem>
#include <iostream>

#include "apps/commands.h"
#include "harness/ceilings.h"
#include "harness/errors.h"
#include "harness/output.h"

namespace kbench::app {
namespace {

struct PlotCommandOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string kind = "roofline";
  std::string op;
  std::vector<std::string> impls, dtypes, devices;
  std::string ceilings;
  std::string x_axis = "bytes";
};

int execute(const PlotCommandOptions& o) {
  PlotOptions options;
  options.kind = parse_plot_kind(o.kind);
  options.op = o.op;
  options.impls = o.impls;
  options.dtypes = o.dtypes;
  options.devices = o.devices;
  options.x_is_n = o.x_axis == "n";
  if (!o.ceilings.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(o.ceilings, ec))
      throw UsageError(o.ceilings + ": no such file (--ceilings)");
    options.ceilings = load_ceilings(o.ceilings);
    if (options.ceilings.empty())
      throw UsageError(o.ceilings + ": no ceilings in the file (from kbench calibrate)");
  }
  const std::string svg = render_plot(load_plot_rows(o.inputs, options.kind), options);

  write_text_file(o.output, svg);
  std::cout << "wrote " << o.output << "\n";
  return kExitOk;
}

}  // namespace

void setup_plot(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PlotCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Draw results CSVs as one standalone SVG: roofline or bandwidth vs size");
  cmd->add_option("RESULTS", o->inputs, "Results CSVs (kbench run --csv, or peers' rows)")
      ->required();
  cmd->add_option("-o,--output", o->output, "SVG file to write")->required();
  cmd->add_option("--kind", o->kind,
                  "roofline: GFLOP/s vs FLOP/byte with each device's roofs; bandwidth: GB/s vs "
                  "bytes for one op")
      ->check(CLI::IsMember({"roofline", "bandwidth"}))
      ->capture_default_str();
  cmd->add_option("--op", o->op,
                  "Only this op (required for --kind bandwidth when the data has several)");
  cmd->add_option("--impl", o->impls, "Only these impls (comma list)")->delimiter(',');
  cmd->add_option("--dtype", o->dtypes, "Only these dtypes (comma list)")->delimiter(',');
  cmd->add_option("--device", o->devices, "Only these devices, by name or slug (comma list)")
      ->delimiter(',');
  cmd->add_option("--x", o->x_axis, "Bandwidth x axis: bytes (moved per call) | n (row length)")
      ->check(CLI::IsMember({"bytes", "n"}))->capture_default_str();
  cmd->add_option("--ceilings", o->ceilings,
                  "Measured ceilings CSV (kbench calibrate, e.g. results/ceilings.csv): copy "
                  "GB/s and bf16 GEMM TFLOP/s roofs");
  cmd->callback([o, &exit_code] { exit_code = execute(*o); });
}

}  // namespace kbench::app
