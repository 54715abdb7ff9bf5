#include "apps/selection.h"

#include <algorithm>
#include <cctype>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/shape.h"
#include "kernels/common/memory_class.h"

namespace kbench::app {
namespace {

bool is_digits(const std::string& s) {
  return !s.empty() && s.size() <= 6 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// Does `op` take a third extent K (a tensor of it spans K, as a GEMM's would)?
bool takes_k(const OpDescriptor& op) {
  const auto spans_k = [](const TensorSpec& t) { return t.extent.find('K') != std::string::npos; };
  return std::any_of(op.inputs.begin(), op.inputs.end(), spans_k) ||
         std::any_of(op.outputs.begin(), op.outputs.end(), spans_k);
}

// Every --shape has the extents each selected op takes: a K given to an op without one would be
// ignored by its kernels yet recorded in its rows.
void validate_shape_extents(const std::vector<const OpDescriptor*>& ops,
                            const std::vector<Shape>& shapes) {
  for (const OpDescriptor* op : ops)
    for (const Shape& s : shapes)
      if ((s.k != 0) != takes_k(*op))
        throw UsageError("bad shape '" + shape_to_string(s) + "' for " + op->name + " (it takes " +
                         (takes_k(*op) ? "MxNxK" : "MxN") + " shapes)");
}

SweepLevel parse_sweep(const std::string& name) {
  if (name == "quick") return SweepLevel::quick;
  if (name == "default") return SweepLevel::standard;
  if (name == "full") return SweepLevel::full;
  throw UsageError("unknown sweep '" + name + "' (valid: quick, default, full)");
}

}  // namespace

void add_selection_options(CLI::App* cmd, Selection& s) {
  cmd->add_option("ops", s.ops, "Ops to run (see `kbench list`)");
  cmd->add_flag("--all", s.all, "Every registered op");
  cmd->add_option("--impl", s.impls, "Impls to run, comma separated (default: all)")->delimiter(',');
  cmd->add_option("--dtype", s.dtypes, "Dtypes, comma separated: fp32,fp16,bf16 (default: all the op has)");
  cmd->add_option("--shape", s.shapes, "Shapes MxN[xK], comma separated (default: the sweep)");
  cmd->add_option("--sweep", s.sweep, "Shape sweep when --shape is not given: quick | default | full")
      ->capture_default_str();
  cmd->add_option("--device", s.device, "GPU index, comma list, or all")->capture_default_str();
  cmd->add_option("--seed", s.seed, "Seed of the random inputs (same seed, same inputs)")
      ->capture_default_str();
  cmd->add_option("--values", s.values,
                  "Input values: normal | large (|x| ~ 1e3) | zero-rows (every 4th row of x zero) | "
                  "offset-rows (x + 4^(row % 5): means far from zero)")
      ->capture_default_str();
  cmd->add_flag("--verbose,-v", s.verbose, "Explain failing outputs on stderr");
}

void resolve_selection(const Selection& s, RunOptions& out) {
  const Registry& registry = Registry::instance();
  if (s.all && !s.ops.empty()) throw UsageError("give ops or --all, not both");
  if (s.all) {
    out.ops = registry.ops();
  } else {
    if (s.ops.empty()) throw UsageError("no op given (name ops, or --all; see `kbench list`)");
    for (const std::string& name : s.ops) {
      const OpDescriptor* op = &registry.require_op(name);
      if (std::find(out.ops.begin(), out.ops.end(), op) == out.ops.end()) out.ops.push_back(op);
    }
  }
  out.impls = s.impls;
  validate_impl_names(out.ops, out.impls);
  if (!s.dtypes.empty()) out.dtypes = parse_dtype_list(s.dtypes);
  if (!s.shapes.empty()) out.shapes = parse_shape_list(s.shapes);
  validate_shape_extents(out.ops, out.shapes);
  out.sweep = parse_sweep(s.sweep);
  validate_device_syntax(s.device);
  out.seed = s.seed;
  out.values = parse_input_values(s.values);
  out.verbose = s.verbose;
  (void)fast_memory_override();  // a bad KBENCH_FAST_MEMORY is exit 2 here too, before any GPU call
}

void validate_device_syntax(const std::string& text) {
  if (text == "all") return;
  for (const std::string& item : split(text))
    if (!is_digits(item))
      throw UsageError("bad --device '" + text + "' (want an index like 0, a list like 0,1, or all)");
}

std::vector<int> resolve_devices(const std::string& text) {
  validate_device_syntax(text);
  require_gpu();
  const int count = device_count();
  std::vector<int> out;
  if (text == "all") {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  for (const std::string& item : split(text)) {
    const int index = std::stoi(item);
    if (index >= count)
      throw UsageError("bad --device " + item + " (" + std::to_string(count) +
                       " GPU(s) visible: valid 0.." + std::to_string(count - 1) + ")");
    if (std::find(out.begin(), out.end(), index) == out.end()) out.push_back(index);
  }
  return out;
}

}  // namespace kbench::app
