// The sweep: for every device x op x dtype x shape, draw inputs and compute the float64
// reference once, then for every impl poison the outputs, launch, check, (for `run`) time, and
// check again on a later launch. Each row goes to the reporter as soon as it exists.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/inputs.h"
#include "harness/output.h"
#include "harness/registry.h"
#include "harness/timing.h"

namespace kbench {

struct RunOptions {
  std::vector<const OpDescriptor*> ops;
  std::vector<std::string> impls;  // empty: all; else names, each valid for some selected op
  std::vector<DType> dtypes;       // empty: each op's dtypes
  std::vector<Shape> shapes;       // empty: the op's sweep at `sweep`
  SweepLevel sweep = SweepLevel::standard;
  std::vector<int> devices = {0};
  bool measure = true;             // false: correctness only (`kbench check`)
  bool guards = true;              // correctness only: guard bytes before and after each output
                                   // and the workspace (false: exact sizes and places, as `run`)
  int later_checks = 1;            // checks on later launches (after the timed ones, or
                                   // correctness only, the first), each preceded by one on
                                   // other values; their outputs bit for bit the first
                                   // launch's. 0: each point checked on its first launch only
  TimingOptions timing;
  uint64_t seed = 0x6b62656e6368ull;
  InputValues values = InputValues::normal;  // --values: what edge_values tensors hold
  std::string ceilings_path;       // where measured ceilings are read (and auto-stored)
  bool auto_calibrate = true;      // measure the copy ceiling when none is stored
  std::string gbench_json;         // "" or a path for Google Benchmark's JSON
  bool verbose = false;            // per-output failure details on stderr
  // Test-only (proves the regression gate works): impl name -> extra percent of the op's
  // minimum bytes read from a cold scratch buffer inside each timed launch of that impl.
  std::map<std::string, double> inject_slowdown_pct;
};

struct RunSummary {
  int rows = 0, passed = 0, failed = 0, skipped = 0, errors = 0;
};

// Resolves --impl names against the selected ops (UsageError for a name no op has).
void validate_impl_names(const std::vector<const OpDescriptor*>& ops,
                         const std::vector<std::string>& impls);

// Runs the sweep. Throws RuntimeFailure on a GPU fault after reporting an `error` row that
// names the point (earlier rows are already written).
RunSummary run_sweep(const RunOptions& options, Reporter& reporter);

}  // namespace kbench
