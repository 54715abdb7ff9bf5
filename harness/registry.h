// The registry: every op (from reference/) and every impl (from kernels/) registers itself
// here at static-initialization time through a builder, so adding an impl touches one file
// and adding an op touches two. Nothing else keeps a list of names.
//
//   reference/rmsnorm.cpp          KBENCH_REGISTER(rmsnorm_op) { register_op("rmsnorm")...; }
//   kernels/rmsnorm/rmsnorm.cu     KBENCH_REGISTER(rmsnorm_v1) { register_impl("rmsnorm", "v1_naive")...; }
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/dtype.h"
#include "harness/shape.h"

namespace kbench {

// ----- ops ---------------------------------------------------------------------------------

enum class TensorRole { input, output };
enum class TensorType { activation, f32 };  // activation: the dtype of the run
enum class Init { normal, around_one };     // N(0,1); 1 + 0.1*N(0,1) (weights)

struct TensorSpec {
  std::string name;
  std::string extent;                          // for docs: "MxN", "N"
  std::function<int64_t(const Shape&)> numel;  // element count for a shape (-1 on overflow)
  TensorType type = TensorType::activation;
  Init init = Init::normal;
  // The values a norm takes its row statistics from (x; x and r for fused add). `--values
  // large` scales them to |x| ~ 1e3, `--values zero-rows` zeroes whole rows of them and
  // `--values offset-rows` moves rows' means far from zero (harness/inputs.h).
  bool edge_values = false;
};

// Host tensors handed to a reference: inputs hold the values the GPU sees (already rounded
// to the run's dtype), outputs are filled by the reference in float64.
struct ReferenceArgs {
  Shape shape;
  double eps = 0;
  std::vector<const std::vector<double>*> inputs;
  std::vector<std::vector<double>*> outputs;  // sized by the harness, one per output spec
};

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

enum class SweepLevel { quick, standard, full };  // spelled quick | default | full

struct OpDescriptor {
  std::string name;
  std::string summary;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  double eps = 1e-6;
  std::vector<DType> dtypes;
  std::function<void(const ReferenceArgs&)> reference;
  // Minimum bytes moved (each input read once, each output written once) and flops.
  std::function<double(const Shape&, DType)> bytes;
  std::function<double(const Shape&, DType)> flops;
  // Tolerance for one output (by index) of one shape and dtype.
  std::function<Tolerance(size_t output, DType, const Shape&)> tolerance;
  // Optional: per-element factors on one output's atol, for outputs whose fp32 rounding error
  // follows data-dependent terms that cancel (layernorm_bwd's dx grows with rstd, which a
  // near-constant row makes large). Given the reference's inputs and outputs, fills `scale`
  // (one factor per element of the output) and returns true, or returns false (factor 1).
  std::function<bool(const ReferenceArgs&, size_t output, std::vector<double>& scale)> atol_scale;
  std::map<SweepLevel, std::vector<Shape>> sweeps;

  const std::vector<Shape>& sweep(SweepLevel level) const;
};

// ----- impls -------------------------------------------------------------------------------

// What a launcher gets: device pointers in the op's declared order, the shape, the dtype of
// the run, a scratch buffer of the size the impl asked for, and the stream (a gpuStream_t).
struct LaunchArgs {
  Shape shape;
  DType dtype = DType::f32;
  float eps = 0;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int sm_count = 1;
  void* stream = nullptr;
};

struct ImplDescriptor {
  std::string op;
  std::string name;  // vN_tag
  std::string note;  // one line: what this version changes
  std::vector<DType> dtypes;
  std::function<void(const LaunchArgs&)> launch;
  // Why this impl cannot run a shape (nullopt: it can).
  std::function<std::optional<std::string>(const Shape&, DType)> rejects;
  std::function<size_t(const Shape&, DType, int sm_count)> workspace_bytes;
};

// ----- builders ----------------------------------------------------------------------------

class OpBuilder {
 public:
  explicit OpBuilder(OpDescriptor& op) : op_(op) {}
  OpBuilder& summary(std::string s);
  OpBuilder& input(TensorSpec t);
  OpBuilder& output(TensorSpec t);
  OpBuilder& eps(double e);
  OpBuilder& dtypes(std::vector<DType> d);
  OpBuilder& reference(std::function<void(const ReferenceArgs&)> f);
  OpBuilder& bytes(std::function<double(const Shape&, DType)> f);
  OpBuilder& flops(std::function<double(const Shape&, DType)> f);
  OpBuilder& tolerance(std::function<Tolerance(size_t, DType, const Shape&)> f);
  OpBuilder& atol_scale(
      std::function<bool(const ReferenceArgs&, size_t, std::vector<double>&)> f);
  OpBuilder& sweep(SweepLevel level, std::vector<Shape> shapes);
  OpBuilder& sweeps(const std::map<SweepLevel, std::vector<Shape>>& all);

 private:
  OpDescriptor& op_;
};

class ImplBuilder {
 public:
  explicit ImplBuilder(ImplDescriptor& impl) : impl_(impl) {}
  ImplBuilder& note(std::string s);
  ImplBuilder& dtypes(std::vector<DType> d);
  ImplBuilder& launch(std::function<void(const LaunchArgs&)> f);
  ImplBuilder& rejects(std::function<std::optional<std::string>(const Shape&, DType)> f);
  ImplBuilder& workspace(std::function<size_t(const Shape&, DType, int)> f);

 private:
  ImplDescriptor& impl_;
};

// ----- the registry ------------------------------------------------------------------------

class Registry {
 public:
  static Registry& instance();

  OpBuilder add_op(std::string name);
  ImplBuilder add_impl(std::string op, std::string name);

  std::vector<const OpDescriptor*> ops() const;  // sorted by name
  const OpDescriptor* find_op(const std::string& name) const;
  std::vector<const ImplDescriptor*> impls_of(const std::string& op) const;  // sorted

  // Selection helpers for the CLI: throw UsageError naming the bad value and listing the
  // valid ones. An empty impl list selects every impl of the op.
  const OpDescriptor& require_op(const std::string& name) const;
  std::vector<const ImplDescriptor*> select_impls(const std::string& op,
                                                  const std::vector<std::string>& names) const;

  // Checks every impl names a registered op; throws std::logic_error otherwise.
  void validate() const;

 private:
  // unique_ptr: builders hold references that must survive later registrations.
  std::vector<std::unique_ptr<OpDescriptor>> ops_;
  std::vector<std::unique_ptr<ImplDescriptor>> impls_;
};

inline OpBuilder register_op(std::string name) {
  return Registry::instance().add_op(std::move(name));
}
inline ImplBuilder register_impl(std::string op, std::string name) {
  return Registry::instance().add_impl(std::move(op), std::move(name));
}

// Common tensor extents.
TensorSpec rows_by_cols(std::string name, Init init = Init::normal);  // M x N
TensorSpec cols(std::string name, Init init = Init::normal);          // N
TensorSpec scalars(std::string name, int64_t count, Init init = Init::normal);  // fixed length
TensorSpec with_edge_values(TensorSpec t);                            // sets edge_values

}  // namespace kbench

// Runs the block once at static-initialization time. Objects that use it live in an OBJECT
// library so the linker keeps them.
#define KBENCH_REGISTER(id)                                           \
  static void kbench_register_##id();                                 \
  [[maybe_unused]] static const bool kbench_registered_##id =         \
      (kbench_register_##id(), true);                                 \
  static void kbench_register_##id()
