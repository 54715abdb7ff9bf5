// kbench devices: the GPUs, their datasheet peaks and the ceilings measured so far.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>

#include "apps/commands.h"
#include "harness/ceilings.h"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/gpu_kernels.h"
#include "harness/output.h"
#include "kernels/common/memory_class.h"
#include "kernels/common/staged_config.h"

namespace kbench::app {
namespace {

struct DevicesOptions {
  bool json = false;
  std::string ceilings = default_ceilings_path();
};

// Clusters of 2, 4 and 8 blocks shaped as the staged kernels' (one 512-thread block per SM,
// kSharedBudget of shared memory) that fit at once: the staged kernels' rows over several blocks
// run on that many SMs, and two GPUs of one kind may differ here.
constexpr int kClusterSizes[] = {2, 4, 8};
constexpr int kClusterKinds = static_cast<int>(std::size(kClusterSizes));

struct ClusterCounts {
  int counts[kClusterKinds] = {};  // per kClusterSizes entry; all 0 without clusters
  bool any() const {
    return std::any_of(std::begin(counts), std::end(counts), [](int n) { return n > 0; });
  }
};

ClusterCounts staged_cluster_counts(int device) {
  KB_GPU_CHECK(gpuSetDevice(device));
  ClusterCounts c;
  for (int i = 0; i < kClusterKinds; ++i) {
    c.counts[i] =
        resident_clusters(kClusterSizes[i], staged_rows::kBlock, staged_rows::kSharedBudget);
  }
  return c;
}

std::string fixed(double v, int digits = 1) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void print_text(const DeviceInfo& d, const std::optional<Ceiling>& c, const ClusterCounts& k) {
  std::cout << "[" << d.index << "] " << d.name << "  (" << d.arch << ", " << d.sm_count
            << " SMs, L2 " << fixed(d.l2_bytes / 1048576.0) << " MiB, "
            << fixed(d.memory_bytes / 1e9) << " GB, driver " << d.driver << ", " << d.runtime << ")\n"
            << "    peak bandwidth " << fixed(d.peak_gbps, 0) << " GB/s (" << d.peak_source << ")";
  if (d.peak_bf16_tflops > 0) std::cout << ", bf16 " << fixed(d.peak_bf16_tflops, 0) << " TFLOP/s (datasheet)";
  std::cout << "\n    memory " << fixed(d.memory_bytes_per_sm_clock) << " B per SM clock ("
            << fixed(d.memory_clock_khz / 1e3, 0) << " MHz x " << d.bus_width_bits << " bits): "
            << (is_fast_memory(d.memory_bytes_per_sm_clock) ? "" : "not ")
            << "fast memory for the forwards' policies\n";
  if (k.any()) {
    std::cout << "    clusters of 512-thread blocks with " << staged_rows::kSharedBudget / 1024
              << " KB that fit at once:";
    for (int i = 0; i < kClusterKinds; ++i)
      std::cout << (i ? "," : "") << " " << k.counts[i] << " of " << kClusterSizes[i] << " ("
                << k.counts[i] * kClusterSizes[i] << " SMs)";
    std::cout << "\n";
  }
  if (c)
    std::cout << "    measured copy " << fixed(c->copy_gbps, 0) << " GB/s ("
              << fixed(100 * c->copy_gbps / d.peak_gbps) << "% of peak)"
              << (c->gemm_bf16_tflops > 0 ? ", bf16 GEMM " + fixed(c->gemm_bf16_tflops, 0) + " TFLOP/s" : "")
              << "  [" << c->timestamp << "]\n";
  else
    std::cout << "    not calibrated (run `kbench calibrate`)\n";
}

std::string json_object(const DeviceInfo& d, const std::optional<Ceiling>& c,
                        const ClusterCounts& k) {
  auto q = [](const std::string& s) { return "\"" + json_escape(s) + "\""; };
  std::string out = "{\"index\": " + std::to_string(d.index) + ", \"name\": " + q(d.name) +
                    ", \"slug\": " + q(d.slug) + ", \"arch\": " + q(d.arch) +
                    ", \"sm_count\": " + std::to_string(d.sm_count) +
                    ", \"l2_bytes\": " + std::to_string(d.l2_bytes) +
                    ", \"memory_bytes\": " + std::to_string(d.memory_bytes) +
                    ", \"driver\": " + q(d.driver) + ", \"runtime\": " + q(d.runtime) +
                    ", \"peak_gbps\": " + fixed(d.peak_gbps) + ", \"peak_source\": " + q(d.peak_source) +
                    ", \"peak_bf16_tflops\": " + fixed(d.peak_bf16_tflops) +
                    ", \"memory_bytes_per_sm_clock\": " + fixed(d.memory_bytes_per_sm_clock) +
                    ", \"fast_memory\": " + (is_fast_memory(d.memory_bytes_per_sm_clock) ? "true" : "false");
  out += ", \"resident_clusters\": {";
  for (int i = 0; i < kClusterKinds; ++i)
    out += std::string(i ? ", " : "") + "\"" + std::to_string(kClusterSizes[i]) +
           "\": " + std::to_string(k.counts[i]);
  out += "}";
  if (c)
    out += ", \"ceiling_copy_gbps\": " + fixed(c->copy_gbps) +
           ", \"ceiling_gemm_bf16_tflops\": " + fixed(c->gemm_bf16_tflops) +
           ", \"calibrated_at\": " + q(c->timestamp);
  return out + "}";
}

int execute(const DevicesOptions& o) {
  const int count = device_count();
  if (count == 0) {
    if (o.json) std::cout << "[]\n";
    require_gpu();  // throws the one-line "no GPU" error
  }
  if (o.json) std::cout << "[\n";
  for (int i = 0; i < count; ++i) {
    const DeviceInfo d = query_device(i);
    const std::optional<Ceiling> c = find_ceiling(o.ceilings, d.slug);
    const ClusterCounts k = staged_cluster_counts(i);
    if (o.json) std::cout << "  " << json_object(d, c, k) << (i + 1 < count ? "," : "") << "\n";
    else print_text(d, c, k);
  }
  if (o.json) std::cout << "]\n";
  return kExitOk;
}

}  // namespace

void setup_devices(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DevicesOptions>();
  CLI::App* cmd = app.add_subcommand("devices", "List GPUs: properties, datasheet peaks, measured ceilings");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_option("--ceilings", o->ceilings, "Measured-ceilings file ($KBENCH_CEILINGS)")->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = execute(*o); });
}

}  // namespace kbench::app
