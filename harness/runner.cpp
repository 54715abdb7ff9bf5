#include "harness/runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>

#include "harness/buffer.h"
#include "harness/calibrate.h"
#include "harness/ceilings.h"
#include "harness/check.h"
#include "harness/errors.h"
#include "harness/gpu_kernels.h"
#include "harness/inputs.h"
#include "harness/metrics.h"
#include "harness/version.h"
#include "kernels/common/memory_class.h"

namespace kbench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Bytes before and after each output and the workspace, filled with kGuardByte, that a launch
// must leave as they are: a write past an end (a vector tail, a row index off by one) or before
// a start (row -1, an offset that went negative) changes them. In `kbench check` and the GPU
// tests only: `run` keeps its buffers' exact sizes and places, since where a buffer lies can
// move a kernel's time (NOTES: spare pads before each tensor); so does `check --no-guards`,
// for compute-sanitizer, whose memcheck sees a buffer's bounds only where the allocation ends.
constexpr size_t kGuardBytes = 4096;
constexpr unsigned char kGuardByte = 0xa5;

// `bytes` of device memory with `guard` bytes before and after them, in one allocation; get()
// is the first of the `bytes` (nullptr where there are none). A guard of 4096 keeps get() as
// aligned as the allocation, for every vector and bulk copy.
class GuardedBuffer {
 public:
  GuardedBuffer(size_t bytes, size_t guard)
      : allocation_(bytes > 0 ? bytes + 2 * guard : 0), bytes_(bytes), guard_(guard) {}

  void* get() const { return bytes_ > 0 ? static_cast<char*>(allocation_.get()) + guard_ : nullptr; }
  size_t bytes() const { return bytes_; }
  size_t guard() const { return guard_; }
  void* before() const { return allocation_.get(); }
  void* after() const { return static_cast<char*>(get()) + bytes_; }
  void download(void* host, size_t bytes) const {
    KB_GPU_CHECK(gpuMemcpy(host, get(), bytes, gpuMemcpyDeviceToHost));
  }

 private:
  DeviceBuffer allocation_;
  size_t bytes_ = 0;
  size_t guard_ = 0;
};

double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

std::string gigabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

uint32_t nan_pattern(DType t) {
  switch (t) {
    case DType::f32: return 0x7fc00000u;
    case DType::f16: return 0x7e00u;
    case DType::bf16: return 0x7fc0u;
  }
  return 0;
}

// One device's context for the whole sweep.
struct DeviceSession {
  DeviceInfo info;
  gpuStream_t stream = nullptr;
  double ceiling_gbps = 0;
  std::optional<Timer> timer;
};

// Element counts of an op's tensors for a shape; nullopt when one overflows.
std::optional<std::vector<int64_t>> tensor_sizes(const std::vector<TensorSpec>& specs,
                                                 const Shape& s) {
  std::vector<int64_t> sizes;
  for (const TensorSpec& spec : specs) {
    const int64_t n = spec.numel(s);
    if (n < 0) return std::nullopt;
    sizes.push_back(n);
  }
  return sizes;
}

double total_bytes(const std::vector<TensorSpec>& specs, const std::vector<int64_t>& sizes,
                   DType run, bool host) {
  double total = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const DType t = tensor_dtype(specs[i], run);
    total += static_cast<double>(sizes[i]) * (host ? host_bytes_per_element(t) : dtype_size(t));
  }
  return total;
}

// Everything one (op, dtype, shape) needs, shared by its impls.
struct PointData {
  std::vector<HostTensor> inputs;
  std::vector<DeviceBuffer> device_inputs;
  // Other values of the same inputs (another seed), for the launch before each later check.
  std::vector<DeviceBuffer> other_device_inputs;
  std::vector<HostTensor> other_inputs;  // their bytes as uploaded (no values: not referenced)
  std::vector<std::vector<double>> reference;  // one per output
  std::vector<std::vector<double>> atol_scales;  // one per output; empty: factor 1
  std::vector<int64_t> output_sizes;
};

class SweepRunner {
 public:
  SweepRunner(const RunOptions& options, Reporter& reporter)
      : options_(options), reporter_(reporter) {}

  RunSummary run() {
    // Rows measured with the forwards' memory policies forced (kernels/common/memory_class.h)
    // say so; a bad value stops the run before any point.
    if (const std::optional<bool> forced = fast_memory_override())
      forced_memory_note_ = std::string("KBENCH_FAST_MEMORY=") + (*forced ? "1" : "0");
    for (int index : options_.devices) run_device(index);
    return summary_;
  }

 private:
  void run_device(int index) {
    DeviceSession session;
    session.info = query_device(index);
    KB_GPU_CHECK(gpuSetDevice(index));
    KB_GPU_CHECK(gpuStreamCreate(&session.stream));
    session.ceiling_gbps = ceiling_for(session);
    if (options_.measure) session.timer.emplace(session.info, session.stream);
    device_ = &session;
    for (const OpDescriptor* op : options_.ops)
      for (DType t : dtypes_for(*op))
        for (const Shape& s : shapes_for(*op)) run_point(*op, t, s);
    if (session.timer && !options_.gbench_json.empty()) {
      std::string path = options_.gbench_json;
      if (options_.devices.size() > 1) path += "." + std::to_string(index);
      session.timer->write_gbench_json(path);
    }
    session.timer.reset();
    (void)gpuStreamDestroy(session.stream);
    device_ = nullptr;
  }

  double ceiling_for(const DeviceSession& s) {
    if (auto stored = find_ceiling(options_.ceilings_path, s.info.slug)) return stored->copy_gbps;
    if (!options_.measure || !options_.auto_calibrate) return 0;
    std::cerr << "kbench: no stored ceiling for " << s.info.name
              << "; measuring copy bandwidth (kbench calibrate does this on purpose)\n";
    Ceiling c = measure_copy_ceiling(s.info, s.stream);
    store_ceiling(options_.ceilings_path, c);
    return c.copy_gbps;
  }

  std::vector<DType> dtypes_for(const OpDescriptor& op) const {
    if (options_.dtypes.empty()) return op.dtypes;
    std::vector<DType> out;
    for (DType t : options_.dtypes)
      if (std::find(op.dtypes.begin(), op.dtypes.end(), t) != op.dtypes.end()) out.push_back(t);
    return out;
  }

  const std::vector<Shape>& shapes_for(const OpDescriptor& op) const {
    return options_.shapes.empty() ? op.sweep(options_.sweep) : options_.shapes;
  }

  std::vector<const ImplDescriptor*> impls_for(const OpDescriptor& op, DType t) const {
    std::vector<const ImplDescriptor*> out;
    for (const ImplDescriptor* impl : Registry::instance().impls_of(op.name)) {
      const bool named = options_.impls.empty() ||
                         std::find(options_.impls.begin(), options_.impls.end(), impl->name) !=
                             options_.impls.end();
      const bool has_dtype =
          std::find(impl->dtypes.begin(), impl->dtypes.end(), t) != impl->dtypes.end();
      if (named && has_dtype) out.push_back(impl);
    }
    return out;
  }

  ResultRow base_row(const OpDescriptor& op, const ImplDescriptor& impl, DType t,
                     const Shape& s) const {
    const DeviceInfo& d = device_->info;
    ResultRow r;
    r.kbench_version = kVersion;
    r.timestamp = utc_timestamp();
    r.device = d.name;
    r.device_slug = d.slug;
    // Two GPUs of one model in one run (`--device all`) must stay apart in the CSV, for
    // `compare` (which keys multi-device files by slug) and `plot`: name them by index.
    if (options_.devices.size() > 1) {
      r.device += " [GPU " + std::to_string(d.index) + "]";
      r.device_slug += "-gpu" + std::to_string(d.index);
    }
    r.arch = d.arch;
    r.sm_count = d.sm_count;
    r.driver = d.driver;
    r.runtime = d.runtime;
    r.op = op.name;
    r.impl = impl.name;
    r.dtype = std::string(dtype_name(t));
    r.shape = shape_to_string(s);
    r.m = s.m;
    r.n = s.n;
    r.k = s.k;
    r.l2 = options_.timing.cold_l2 ? "cold" : "hot";
    if (options_.values != InputValues::normal)
      r.note = std::string("values=") + input_values_name(options_.values);
    if (!forced_memory_note_.empty())
      r.note += (r.note.empty() ? "" : "; ") + forced_memory_note_;
    for (double* f : {&r.median_us, &r.mean_us, &r.min_us, &r.p10_us, &r.p90_us, &r.stddev_us,
                      &r.noise_pct, &r.sm_clock_mhz, &r.gbps, &r.tflops, &r.peak_pct,
                      &r.ceiling_pct, &r.max_abs_err, &r.max_rel_err, &r.rel_l2_err})
      *f = kNaN;
    r.bytes = op.bytes(s, t);
    r.flops = op.flops(s, t);
    r.intensity = r.bytes > 0 ? r.flops / r.bytes : kNaN;
    r.peak_gbps = d.peak_gbps > 0 ? d.peak_gbps : kNaN;
    r.ceiling_gbps = device_->ceiling_gbps > 0 ? device_->ceiling_gbps : kNaN;
    const Tolerance tol = op.tolerance(0, t, s);
    r.atol = tol.atol;
    r.rtol = tol.rtol;
    return r;
  }

  void emit(ResultRow& row) {
    ++summary_.rows;
    if (row.status == "pass") ++summary_.passed;
    else if (row.status == "fail") ++summary_.failed;
    else if (row.status == "skip") ++summary_.skipped;
    else ++summary_.errors;
    reporter_.add(row);
  }

  void skip_all(const OpDescriptor& op, const std::vector<const ImplDescriptor*>& impls, DType t,
                const Shape& s, const std::string& why) {
    for (const ImplDescriptor* impl : impls) {
      ResultRow row = base_row(op, *impl, t, s);
      row.status = "skip";
      row.note = why;
      emit(row);
    }
  }

  // Why a point cannot run on this machine at all, before anything is allocated.
  std::optional<std::string> point_too_large(const OpDescriptor& op, DType t, const Shape& s) const {
    auto in = tensor_sizes(op.inputs, s);
    auto out = tensor_sizes(op.outputs, s);
    if (!in || !out) return "shape " + shape_to_string(s) + " too large: element count overflows";
    // Later checks need the inputs twice (other values for the launch before each).
    const double device_need = total_bytes(op.inputs, *in, t, false) * (options_.later_checks > 0 ? 2 : 1) +
                               total_bytes(op.outputs, *out, t, false);
    const double device_free = static_cast<double>(device_free_bytes());
    if (device_need > 0.95 * device_free)
      return "needs " + gigabytes(device_need) + " of GPU memory, " + gigabytes(device_free) + " free";
    // Later checks keep the first launch's outputs beside each later launch's, and the other
    // inputs' bytes.
    const double host_need = total_bytes(op.inputs, *in, t, true) +
                             total_bytes(op.outputs, *out, t, true) +
                             (options_.later_checks > 0 ? total_bytes(op.outputs, *out, t, false) +
                                                              total_bytes(op.inputs, *in, t, false)
                                                        : 0);
    if (host_need > 0.8 * physical_memory_bytes())
      return "reference needs " + gigabytes(host_need) + " of host memory, " +
             gigabytes(physical_memory_bytes()) + " installed";
    return std::nullopt;
  }

  PointData prepare(const OpDescriptor& op, DType t, const Shape& s) const {
    PointData p;
    ReferenceArgs ref;
    ref.shape = s;
    ref.eps = op.eps;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      p.inputs.push_back(make_input(op.inputs[i], t, s, tensor_seed(options_.seed, op.name, t, s, i),
                                     options_.values));
      p.device_inputs.emplace_back(p.inputs.back().bytes.size());
      p.device_inputs.back().upload(p.inputs.back().bytes.data(), p.inputs.back().bytes.size());
    }
    if (options_.later_checks > 0) {
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        HostTensor other = make_input(op.inputs[i], t, s,
                                      tensor_seed(options_.seed, op.name, t, s, op.inputs.size() + i),
                                      options_.values);
        p.other_device_inputs.emplace_back(other.bytes.size());
        p.other_device_inputs.back().upload(other.bytes.data(), other.bytes.size());
        other.values = std::vector<double>();  // freed (`= {}` would clear and keep the capacity)
        p.other_inputs.push_back(std::move(other));
      }
    }
    for (const HostTensor& h : p.inputs) ref.inputs.push_back(&h.values);
    p.output_sizes = *tensor_sizes(op.outputs, s);
    p.reference.resize(op.outputs.size());
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      p.reference[i].resize(static_cast<size_t>(p.output_sizes[i]));
      ref.outputs.push_back(&p.reference[i]);
    }
    op.reference(ref);
    p.atol_scales.resize(op.outputs.size());
    if (op.atol_scale) {
      for (size_t i = 0; i < op.outputs.size(); ++i)
        if (!op.atol_scale(ref, i, p.atol_scales[i])) p.atol_scales[i].clear();
    }
    return p;
  }

  void run_point(const OpDescriptor& op, DType t, const Shape& s) {
    const std::vector<const ImplDescriptor*> impls = impls_for(op, t);
    if (impls.empty()) return;
    if (auto why = point_too_large(op, t, s)) return skip_all(op, impls, t, s, *why);
    std::optional<PointData> data;
    try {
      data.emplace(prepare(op, t, s));
    } catch (const OutOfDeviceMemory& e) {
      return skip_all(op, impls, t, s, e.what());
    }
    for (const ImplDescriptor* impl : impls) run_impl(op, *impl, t, s, *data);
  }

  void run_impl(const OpDescriptor& op, const ImplDescriptor& impl, DType t, const Shape& s,
                PointData& data) {
    ResultRow row = base_row(op, impl, t, s);
    if (impl.rejects) {
      if (auto why = impl.rejects(s, t)) {
        row.status = "skip";
        row.note = *why;
        return emit(row);
      }
    }
    try {
      run_checked_and_timed(op, impl, t, s, data, row);
    } catch (const OutOfDeviceMemory& e) {
      row.status = "skip";
      row.note = e.what();
    } catch (const RuntimeFailure& e) {
      row.status = "error";
      row.note = e.what();
      emit(row);
      throw RuntimeFailure("GPU failure at " + op.name + "/" + impl.name + "/" +
                           std::string(dtype_name(t)) + "/" + shape_to_string(s) + ": " + e.what());
    }
    emit(row);
  }

  void run_checked_and_timed(const OpDescriptor& op, const ImplDescriptor& impl, DType t,
                             const Shape& s, PointData& data, ResultRow& row) {
    gpuStream_t stream = device_->stream;
    std::vector<GuardedBuffer> outputs;
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      outputs.emplace_back(output_bytes(op, t, data, i), guard_bytes());
      fill_guards(outputs.back());
    }
    const size_t ws_bytes =
        impl.workspace_bytes ? impl.workspace_bytes(s, t, device_->info.sm_count) : 0;
    GuardedBuffer workspace(ws_bytes, guard_bytes());
    // Poisoned before the first launch as the outputs are (all-ones bytes: NaN in every dtype,
    // the largest count): an impl is promised no zeros, as under a caching allocator, though a
    // fresh allocation often reads zero. The later launches see what earlier ones left.
    if (ws_bytes > 0) {
      KB_GPU_CHECK(gpuMemsetAsync(workspace.get(), 0xff, ws_bytes, stream));
      fill_guards(workspace);
    }

    LaunchArgs args;
    args.shape = s;
    args.dtype = t;
    args.eps = static_cast<float>(op.eps);
    for (const DeviceBuffer& b : data.device_inputs) args.inputs.push_back(b.get());
    for (GuardedBuffer& b : outputs) args.outputs.push_back(b.get());
    args.workspace = workspace.get();
    args.workspace_bytes = ws_bytes;
    args.sm_count = device_->info.sm_count;
    args.stream = stream;

    // Correctness: poison every output with NaN, launch once, compare with the reference.
    OutputBytes first_launch;  // kept for the later checks
    record_check(row, launch_and_check(op, impl, t, s, data, outputs, workspace, args, first_launch), "");
    if (options_.measure) measure_into(row, op, impl, t, s, args);

    // Checked again on a later launch (after the timed ones in `run`): the number is only worth
    // having, and the kernel only right, if it is still right in the state earlier launches
    // left behind (workspace, grid-sum epochs, row-claim counters), not only on a fresh one.
    // The launch just before it runs on other values, so that state is not this input's: a
    // kernel that reads what an earlier launch left where it should read its own would read
    // the same values after launches on the same inputs. And bit for bit what the first launch
    // wrote: every impl sums in a fixed order, so the same inputs give the same bits on every
    // launch; one that does not (a race, a sum in arrival order) may still be within tolerance.
    // --later-checks N repeats it, for a kernel wrong on one launch in many.
    OutputBytes later_launch;  // one set of host buffers for every later check
    for (int k = 1; k <= options_.later_checks && row.status == "pass"; ++k) {
      const std::string other_launch = launch_on_other_inputs(op, impl, t, args, data);
      CheckVerdict verdict = launch_and_check(op, impl, t, s, data, outputs, workspace, args, later_launch);
      if (verdict.result.pass) compare_launches(op, t, data, first_launch, later_launch, verdict);
      if (!other_launch.empty()) verdict.fail(other_launch);
      record_check(row, verdict, later_check_name(k));
    }
  }

  // How a failing later check is named in the row's note: "after timing: ", "on a second
  // launch: "; with more than one, "after timing, later check 3 of 20: ", "on later check 3 of 20: ".
  std::string later_check_name(int k) const {
    if (options_.later_checks == 1) return options_.measure ? "after timing: " : "on a second launch: ";
    const std::string nth = "later check " + std::to_string(k) + " of " + std::to_string(options_.later_checks);
    return options_.measure ? "after timing, " + nth + ": " : "on " + nth + ": ";
  }

  void measure_into(ResultRow& row, const OpDescriptor& op, const ImplDescriptor& impl, DType t,
                    const Shape& s, const LaunchArgs& args) {
    const std::string name = op.name + "/" + impl.name + "/" + std::string(dtype_name(t)) + "/" +
                             shape_to_string(s) + "/" + row.l2;
    const std::function<void()> launch = with_injected_slowdown(impl, row.bytes, args);
    Measurement m = device_->timer->measure(name, launch, options_.timing);
    fill_timing_and_work(row, m.us, row.bytes, row.flops, device_->info.peak_gbps,
                         device_->ceiling_gbps);
    row.sm_clock_mhz = m.sm_clock_mhz > 0 ? m.sm_clock_mhz : kNaN;
    if (!m.note.empty()) row.note += (row.note.empty() ? "" : "; ") + m.note;
  }

  struct CheckVerdict {
    CheckResult result;
    std::string why;  // "; "-joined failure lines, one per failing output or check

    void fail(const std::string& line) {
      result.pass = false;
      why += (why.empty() ? "" : "; ") + line;
    }
  };

  using OutputBytes = std::vector<std::vector<unsigned char>>;  // each output, as downloaded

  // One launch on the point's other input values: its outputs are not checked (what it leaves
  // behind is the point), but it too must leave its inputs as they were. "" where it did, else
  // the failure lines.
  std::string launch_on_other_inputs(const OpDescriptor& op, const ImplDescriptor& impl, DType t,
                                     const LaunchArgs& args, const PointData& data) const {
    LaunchArgs other = args;
    for (size_t i = 0; i < other.inputs.size(); ++i) other.inputs[i] = data.other_device_inputs[i].get();
    impl.launch(other);
    KB_GPU_CHECK(gpuStreamSynchronize(device_->stream));
    CheckVerdict verdict;
    check_inputs_unchanged(op, t, data.other_inputs, data.other_device_inputs, verdict);
    return verdict.why.empty() ? "" : "the launch on other values: " + verdict.why;
  }

  size_t guard_bytes() const { return options_.measure || !options_.guards ? 0 : kGuardBytes; }

  static size_t output_bytes(const OpDescriptor& op, DType t, const PointData& data, size_t i) {
    return static_cast<size_t>(data.output_sizes[i]) * dtype_size(tensor_dtype(op.outputs[i], t));
  }

  // The guards before and after a buffer (none in `run`).
  void fill_guards(const GuardedBuffer& b) const {
    if (b.guard() == 0 || b.bytes() == 0) return;
    for (void* guard : {b.before(), b.after()})
      KB_GPU_CHECK(gpuMemsetAsync(guard, kGuardByte, b.guard(), device_->stream));
  }

  // A launch that wrote before a buffer's start or past its end fails the verdict.
  void check_guards(const std::string& name, const GuardedBuffer& b, CheckVerdict& verdict) const {
    if (b.guard() == 0 || b.bytes() == 0) return;
    std::vector<unsigned char> guard(b.guard());
    for (GuardSide side : {GuardSide::before, GuardSide::after}) {
      KB_GPU_CHECK(gpuMemcpy(guard.data(), side == GuardSide::before ? b.before() : b.after(),
                             guard.size(), gpuMemcpyDeviceToHost));
      const GuardDiff d = guard_diff(guard.data(), guard.size(), kGuardByte);
      if (d.count > 0) verdict.fail(describe_guard(name, d, guard.size(), side));
    }
  }

  // A launch that changed one of its inputs fails the verdict: they are the caller's, read only.
  // `uploaded` holds the bytes each of `device` was given.
  void check_inputs_unchanged(const OpDescriptor& op, DType t, const std::vector<HostTensor>& uploaded,
                              const std::vector<DeviceBuffer>& device, CheckVerdict& verdict) const {
    std::vector<unsigned char>& now = downloaded_input_;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const HostTensor& before = uploaded[i];
      now.resize(before.bytes.size());
      device[i].download(now.data(), now.size());
      const DType it = tensor_dtype(op.inputs[i], t);
      const size_t numel = static_cast<size_t>(before.numel);
      const BitwiseDiff d = bitwise_diff(before.bytes.data(), now.data(), numel, it);
      if (d.count > 0)
        verdict.fail(describe_changed_input(op.inputs[i].name, d, numel, before.bytes.data(),
                                            now.data(), it));
    }
  }

  // Poisons every output with NaN, launches once and compares each output with the reference;
  // the outputs' bytes are left in `downloaded`. And the launch must have left its inputs and
  // the bytes beside its outputs and workspace as they were.
  CheckVerdict launch_and_check(const OpDescriptor& op, const ImplDescriptor& impl, DType t,
                                const Shape& s, const PointData& data,
                                std::vector<GuardedBuffer>& outputs, const GuardedBuffer& workspace,
                                const LaunchArgs& args, OutputBytes& downloaded) const {
    gpuStream_t stream = device_->stream;
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const DType ot = tensor_dtype(op.outputs[i], t);
      launch_fill(outputs[i].get(), static_cast<size_t>(data.output_sizes[i]),
                  static_cast<int>(dtype_size(ot)), nan_pattern(ot), stream);
    }
    impl.launch(args);
    KB_GPU_CHECK(gpuStreamSynchronize(stream));
    CheckVerdict verdict = check_outputs(op, t, s, data, outputs, downloaded);
    for (size_t i = 0; i < op.outputs.size(); ++i) check_guards(op.outputs[i].name, outputs[i], verdict);
    check_guards("workspace", workspace, verdict);
    check_inputs_unchanged(op, t, data.inputs, data.device_inputs, verdict);
    return verdict;
  }

  // A later launch's outputs against the first's, bit for bit: a difference fails the verdict.
  void compare_launches(const OpDescriptor& op, DType t, const PointData& data,
                        const OutputBytes& first, const OutputBytes& later,
                        CheckVerdict& verdict) const {
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const DType ot = tensor_dtype(op.outputs[i], t);
      const size_t numel = static_cast<size_t>(data.output_sizes[i]);
      const BitwiseDiff d = bitwise_diff(first[i].data(), later[i].data(), numel, ot);
      if (d.count > 0)
        verdict.fail(describe_bitwise_diff(op.outputs[i].name, d, numel, first[i].data(),
                                           later[i].data(), ot));
    }
  }

  // A check's verdict into a row not yet checked, or one whose earlier check passed: status,
  // errors (a later check's only when it fails, so the row shows what went wrong) and note.
  void record_check(ResultRow& row, const CheckVerdict& verdict, const std::string& when) const {
    const bool first = row.status.empty();
    row.status = verdict.result.pass ? "pass" : "fail";
    if (verdict.result.pass && !first) return;
    row.max_abs_err = verdict.result.max_abs_err;
    row.max_rel_err = verdict.result.max_rel_err;
    row.rel_l2_err = verdict.result.rel_l2_err;
    if (verdict.result.pass) return;
    row.note += (row.note.empty() ? "" : "; ") + when + verdict.why;
    if (options_.verbose)
      std::cerr << "kbench: " << row.op << "/" << row.impl << " " << when << verdict.why << "\n";
  }

  // The impl's launch, plus (test-only, --inject-slowdown) a read of extra bytes.
  std::function<void()> with_injected_slowdown(const ImplDescriptor& impl, double op_bytes,
                                               const LaunchArgs& args) {
    auto it = options_.inject_slowdown_pct.find(impl.name);
    if (it == options_.inject_slowdown_pct.end()) return [&] { impl.launch(args); };
    size_t extra = static_cast<size_t>(op_bytes * it->second / 100.0);
    extra -= extra % 16;
    if (slowdown_buffer_.bytes() < extra) slowdown_buffer_ = DeviceBuffer(extra);
    const int sms = device_->info.sm_count;
    gpuStream_t stream = device_->stream;
    return [&impl, &args, this, extra, sms, stream] {
      impl.launch(args);
      if (extra > 0) launch_flush_l2(slowdown_buffer_.get(), extra, sms, stream);
    };
  }

  CheckVerdict check_outputs(const OpDescriptor& op, DType t, const Shape& s, const PointData& data,
                             const std::vector<GuardedBuffer>& outputs,
                             OutputBytes& downloaded) const {
    CheckVerdict verdict;
    std::vector<CheckResult> parts;
    downloaded.resize(op.outputs.size());
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const DType ot = tensor_dtype(op.outputs[i], t);
      const size_t numel = static_cast<size_t>(data.output_sizes[i]);
      std::vector<unsigned char>& host = downloaded[i];
      host.resize(numel * dtype_size(ot));
      outputs[i].download(host.data(), host.size());
      parts.push_back(check_output(host.data(), ot, data.reference[i], op.tolerance(i, t, s),
                                   &data.atol_scales[i]));
      if (!parts.back().pass) verdict.fail(describe_failure(op.outputs[i].name, parts.back(), numel));
    }
    verdict.result = combine(parts);
    return verdict;
  }

  const RunOptions& options_;
  Reporter& reporter_;
  RunSummary summary_;
  DeviceSession* device_ = nullptr;
  std::string forced_memory_note_;  // "KBENCH_FAST_MEMORY=1" where the environment forces it
  DeviceBuffer slowdown_buffer_;
  // One host buffer for the inputs' download after every checked launch (at the sweep's sizes
  // up to 128 MB, which a fresh vector would zero-fill each time).
  mutable std::vector<unsigned char> downloaded_input_;
};

}  // namespace

void validate_impl_names(const std::vector<const OpDescriptor*>& ops,
                         const std::vector<std::string>& impls) {
  for (const std::string& name : impls) {
    bool found = false;
    std::vector<std::string> valid;
    for (const OpDescriptor* op : ops)
      for (const ImplDescriptor* impl : Registry::instance().impls_of(op->name)) {
        found = found || impl->name == name;
        if (std::find(valid.begin(), valid.end(), impl->name) == valid.end()) valid.push_back(impl->name);
      }
    if (!found) {
      std::string list;
      for (const std::string& v : valid) list += (list.empty() ? "" : ", ") + v;
      throw UsageError("unknown impl '" + name + "' (valid: " + list + ")");
    }
  }
}

RunSummary run_sweep(const RunOptions& options, Reporter& reporter) {
  SweepRunner runner(options, reporter);
  return runner.run();
}

}  // namespace kbench
