// Options shared by `run` and `check`: what to run (ops, impls, dtypes, shapes, sweep,
// devices). Everything is validated here, before anything touches a GPU, so a bad argument
// is exit 2 on any machine.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "harness/runner.h"

namespace kbench::app {

struct Selection {
  std::vector<std::string> ops;
  bool all = false;
  std::vector<std::string> impls;
  std::string dtypes;
  std::string shapes;
  std::string sweep = "default";
  std::string device = "0";
  uint64_t seed = 0x6b62656e6368ull;
  std::string values = "normal";
  bool verbose = false;
};

void add_selection_options(CLI::App* cmd, Selection& s);

// Fills the selection part of RunOptions; throws UsageError naming a bad value.
void resolve_selection(const Selection& s, RunOptions& out);

// "0", "1,2" or "all" -> indices (checked against the GPUs present).
std::vector<int> resolve_devices(const std::string& text);
// Syntax only, no GPU needed.
void validate_device_syntax(const std::string& text);

}  // namespace kbench::app
