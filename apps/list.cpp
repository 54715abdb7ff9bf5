// kbench list: ops, their impls, dtypes and default sweeps. Needs no GPU.
#include <iostream>
#include <sstream>

#include "apps/commands.h"
#include "harness/output.h"
#include "harness/registry.h"

namespace kbench::app {
namespace {

struct ListOptions {
  bool json = false;
};

std::string dtype_list(const std::vector<DType>& dtypes) {
  std::string out;
  for (DType t : dtypes) out += (out.empty() ? "" : ",") + std::string(dtype_name(t));
  return out;
}

std::string shape_list(const std::vector<Shape>& shapes) {
  std::string out;
  for (const Shape& s : shapes) out += (out.empty() ? "" : ",") + shape_to_string(s);
  return out;
}

std::string tensor_list(const std::vector<TensorSpec>& specs) {
  std::string out;
  for (const TensorSpec& t : specs) out += (out.empty() ? "" : ", ") + t.name + "[" + t.extent + "]";
  return out;
}

void print_text(std::ostream& os) {
  for (const OpDescriptor* op : Registry::instance().ops()) {
    os << op->name << ": " << op->summary << "\n"
       << "  inputs:  " << tensor_list(op->inputs) << "\n"
       << "  outputs: " << tensor_list(op->outputs) << "\n"
       << "  dtypes:  " << dtype_list(op->dtypes) << "\n"
       << "  default sweep: " << shape_list(op->sweep(SweepLevel::standard)) << "\n"
       << "  impls:\n";
    for (const ImplDescriptor* impl : Registry::instance().impls_of(op->name))
      os << "    " << impl->name << "  [" << dtype_list(impl->dtypes) << "]  " << impl->note << "\n";
  }
}

void print_json(std::ostream& os) {
  auto quoted = [](const std::string& s) { return "\"" + json_escape(s) + "\""; };
  auto array = [&](const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quoted(items[i]);
    return out + "]";
  };
  auto names = [](auto&& items, auto&& fn) {
    std::vector<std::string> out;
    for (const auto& item : items) out.push_back(fn(item));
    return out;
  };
  os << "[\n";
  const auto ops = Registry::instance().ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDescriptor& op = *ops[i];
    os << "  {\"op\": " << quoted(op.name) << ", \"summary\": " << quoted(op.summary)
       << ", \"eps\": " << op.eps
       << ", \"inputs\": " << array(names(op.inputs, [](auto& t) { return t.name + "[" + t.extent + "]"; }))
       << ", \"outputs\": " << array(names(op.outputs, [](auto& t) { return t.name + "[" + t.extent + "]"; }))
       << ", \"dtypes\": " << array(names(op.dtypes, [](DType t) { return std::string(dtype_name(t)); }));
    for (auto [level, key] : {std::pair{SweepLevel::quick, "quick"}, {SweepLevel::standard, "default"},
                              {SweepLevel::full, "full"}})
      os << ", \"sweep_" << key << "\": "
         << array(names(op.sweep(level), [](const Shape& s) { return shape_to_string(s); }));
    // The op's bytes/flops model at every shape of its full sweep, so tools outside kbench
    // (scripts/torch_peers.py) compute GB/s the same way without copying the model.
    os << ", \"work\": [";
    bool first = true;
    for (const Shape& shape : op.sweep(SweepLevel::full))
      for (DType t : op.dtypes) {
        os << (first ? "" : ", ") << "{\"shape\": " << quoted(shape_to_string(shape))
           << ", \"dtype\": " << quoted(std::string(dtype_name(t))) << ", \"bytes\": "
           << static_cast<int64_t>(op.bytes(shape, t)) << ", \"flops\": "
           << static_cast<int64_t>(op.flops(shape, t)) << "}";
        first = false;
      }
    os << "]";
    os << ", \"impls\": [";
    const auto impls = Registry::instance().impls_of(op.name);
    for (size_t j = 0; j < impls.size(); ++j)
      os << (j ? ", " : "") << "{\"impl\": " << quoted(impls[j]->name)
         << ", \"note\": " << quoted(impls[j]->note) << ", \"dtypes\": "
         << array(names(impls[j]->dtypes, [](DType t) { return std::string(dtype_name(t)); })) << "}";
    os << "]}" << (i + 1 < ops.size() ? "," : "") << "\n";
  }
  os << "]\n";
}

}  // namespace

void setup_list(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ListOptions>();
  CLI::App* cmd = app.add_subcommand("list", "List ops, their impls, dtypes and default sweeps");
  cmd->add_flag("--json", options->json, "Print JSON instead of text");
  cmd->callback([options, &exit_code] {
    if (options->json) print_json(std::cout);
    else print_text(std::cout);
    exit_code = 0;
  });
}

}  // namespace kbench::app
