#include "harness/registry.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "harness/errors.h"

namespace kbench {

const std::vector<Shape>& OpDescriptor::sweep(SweepLevel level) const {
  static const std::vector<Shape> none;
  auto it = sweeps.find(level);
  return it == sweeps.end() ? none : it->second;
}

// ----- builders ----------------------------------------------------------------------------

OpBuilder& OpBuilder::summary(std::string s) { op_.summary = std::move(s); return *this; }
OpBuilder& OpBuilder::input(TensorSpec t) { op_.inputs.push_back(std::move(t)); return *this; }
OpBuilder& OpBuilder::output(TensorSpec t) { op_.outputs.push_back(std::move(t)); return *this; }
OpBuilder& OpBuilder::eps(double e) { op_.eps = e; return *this; }
OpBuilder& OpBuilder::dtypes(std::vector<DType> d) { op_.dtypes = std::move(d); return *this; }
OpBuilder& OpBuilder::reference(std::function<void(const ReferenceArgs&)> f) {
  op_.reference = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::bytes(std::function<double(const Shape&, DType)> f) {
  op_.bytes = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::flops(std::function<double(const Shape&, DType)> f) {
  op_.flops = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::tolerance(std::function<Tolerance(size_t, DType, const Shape&)> f) {
  op_.tolerance = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::atol_scale(
    std::function<bool(const ReferenceArgs&, size_t, std::vector<double>&)> f) {
  op_.atol_scale = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::sweep(SweepLevel level, std::vector<Shape> shapes) {
  op_.sweeps[level] = std::move(shapes);
  return *this;
}

OpBuilder& OpBuilder::sweeps(const std::map<SweepLevel, std::vector<Shape>>& all) {
  for (const auto& [level, shapes] : all) op_.sweeps[level] = shapes;
  return *this;
}

ImplBuilder& ImplBuilder::note(std::string s) { impl_.note = std::move(s); return *this; }
ImplBuilder& ImplBuilder::dtypes(std::vector<DType> d) { impl_.dtypes = std::move(d); return *this; }
ImplBuilder& ImplBuilder::launch(std::function<void(const LaunchArgs&)> f) {
  impl_.launch = std::move(f);
  return *this;
}
ImplBuilder& ImplBuilder::rejects(
    std::function<std::optional<std::string>(const Shape&, DType)> f) {
  impl_.rejects = std::move(f);
  return *this;
}
ImplBuilder& ImplBuilder::workspace(std::function<size_t(const Shape&, DType, int)> f) {
  impl_.workspace_bytes = std::move(f);
  return *this;
}

// ----- registry ----------------------------------------------------------------------------

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

OpBuilder Registry::add_op(std::string name) {
  auto op = std::make_unique<OpDescriptor>();
  op->name = std::move(name);
  op->dtypes.assign(std::begin(kAllDTypes), std::end(kAllDTypes));
  ops_.push_back(std::move(op));
  return OpBuilder(*ops_.back());
}

ImplBuilder Registry::add_impl(std::string op, std::string name) {
  auto impl = std::make_unique<ImplDescriptor>();
  impl->op = std::move(op);
  impl->name = std::move(name);
  impl->dtypes.assign(std::begin(kAllDTypes), std::end(kAllDTypes));
  impls_.push_back(std::move(impl));
  return ImplBuilder(*impls_.back());
}

std::vector<const OpDescriptor*> Registry::ops() const {
  std::vector<const OpDescriptor*> out;
  for (const auto& op : ops_) out.push_back(op.get());
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

const OpDescriptor* Registry::find_op(const std::string& name) const {
  for (const auto& op : ops_)
    if (op->name == name) return op.get();
  return nullptr;
}

std::vector<const ImplDescriptor*> Registry::impls_of(const std::string& op) const {
  std::vector<const ImplDescriptor*> out;
  for (const auto& impl : impls_)
    if (impl->op == op) out.push_back(impl.get());
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

namespace {
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

const OpDescriptor& Registry::require_op(const std::string& name) const {
  if (const OpDescriptor* op = find_op(name)) return *op;
  std::vector<std::string> names;
  for (const OpDescriptor* op : ops()) names.push_back(op->name);
  throw UsageError("unknown op '" + name + "' (valid: " + join_names(names) + ")");
}

std::vector<const ImplDescriptor*> Registry::select_impls(
    const std::string& op, const std::vector<std::string>& names) const {
  std::vector<const ImplDescriptor*> all = impls_of(op);
  if (names.empty()) return all;
  std::vector<const ImplDescriptor*> chosen;
  for (const std::string& name : names) {
    auto it = std::find_if(all.begin(), all.end(), [&](auto* i) { return i->name == name; });
    if (it == all.end()) {
      std::vector<std::string> valid;
      for (auto* i : all) valid.push_back(i->name);
      throw UsageError("unknown impl '" + name + "' for op '" + op + "' (valid: " +
                       join_names(valid) + ")");
    }
    if (std::find(chosen.begin(), chosen.end(), *it) == chosen.end()) chosen.push_back(*it);
  }
  return chosen;
}

void Registry::validate() const {
  for (const auto& impl : impls_) {
    if (!find_op(impl->op))
      throw std::logic_error("impl '" + impl->name + "' registers for unknown op '" +
                             impl->op + "'");
    if (!impl->launch)
      throw std::logic_error("impl '" + impl->op + "/" + impl->name + "' has no launcher");
  }
  for (const auto& op : ops_) {
    if (!op->reference || !op->bytes || !op->flops || !op->tolerance)
      throw std::logic_error("op '" + op->name +
                             "' lacks a reference, bytes, flops or tolerance model");
    if (op->sweep(SweepLevel::standard).empty())
      throw std::logic_error("op '" + op->name + "' has no default sweep");
  }
}

// ----- common extents ----------------------------------------------------------------------

TensorSpec rows_by_cols(std::string name, Init init) {
  return TensorSpec{std::move(name), "MxN",
                    [](const Shape& s) { return checked_mul(s.m, s.n); },
                    TensorType::activation, init};
}

TensorSpec cols(std::string name, Init init) {
  return TensorSpec{std::move(name), "N", [](const Shape& s) { return s.n; },
                    TensorType::activation, init};
}

TensorSpec scalars(std::string name, int64_t count, Init init) {
  return TensorSpec{std::move(name), std::to_string(count),
                    [count](const Shape&) { return count; }, TensorType::activation, init};
}

TensorSpec with_edge_values(TensorSpec t) {
  t.edge_values = true;
  return t;
}

}  // namespace kbench
