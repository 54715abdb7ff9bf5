// kbench calibrate: measure this GPU's ceilings (copy bandwidth, vendor-BLAS bf16 GEMM rate)
// and store them so every result row gets ceiling_gbps and ceiling_pct.
#include <cstdio>
#include <iostream>

#include "apps/commands.h"
#include "apps/selection.h"
#include "harness/calibrate.h"
#include "harness/ceilings.h"
#include "harness/device.h"
#include "harness/errors.h"
#include "reference/vendor_blas.h"

namespace kbench::app {
namespace {

struct CalibrateOptions {
  std::string device = "0";
  std::string ceilings = default_ceilings_path();
  int runs = 20;
  bool no_gemm = false;
};

void calibrate_one(int index, const CalibrateOptions& o) {
  const DeviceInfo d = query_device(index);
  KB_GPU_CHECK(gpuSetDevice(index));
  gpuStream_t stream;
  KB_GPU_CHECK(gpuStreamCreate(&stream));
  CopyCeilingOptions copy_options;
  copy_options.runs = o.runs;
  Ceiling c = measure_copy_ceiling(d, stream, copy_options);
  const TimingFloor floor = measure_timing_floor(d, stream);
  (void)gpuStreamDestroy(stream);
  std::string gemm_note;
  if (!o.no_gemm) {
    const GemmRate gemm = measure_bf16_gemm_rate(d);
    c.gemm_bf16_tflops = gemm.tflops;
    gemm_note = gemm.note;
  }
  store_ceiling(o.ceilings, c);

  std::printf("[%d] %s\n", index, d.name.c_str());
  std::printf("    device-to-device copy  %8.0f GB/s\n", c.memcpy_gbps);
  std::printf("    kbench copy kernel     %8.0f GB/s\n", c.kernel_copy_gbps);
  std::printf("    ceiling (best)         %8.0f GB/s  = %.1f%% of the %.0f GB/s peak (%s)\n",
              c.copy_gbps, 100 * c.copy_gbps / d.peak_gbps, d.peak_gbps, d.peak_source.c_str());
  std::printf("    timing floor           %8.1f µs between a sample's events, %.1f µs with an empty kernel\n",
              floor.events_us, floor.empty_kernel_us);
  if (!o.no_gemm) {
    if (c.gemm_bf16_tflops > 0)
      std::printf("    bf16 GEMM              %8.0f TFLOP/s (%s)\n", c.gemm_bf16_tflops, gemm_note.c_str());
    else
      std::printf("    bf16 GEMM              not measured: %s\n", gemm_note.c_str());
  }
  std::printf("    stored in %s (%s)\n", o.ceilings.c_str(), c.method.c_str());
}

}  // namespace

void setup_calibrate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure this GPU's copy-bandwidth and bf16 GEMM ceilings and store them");
  cmd->add_option("--device", o->device, "GPU index, comma list, or all")->capture_default_str();
  cmd->add_option("--ceilings", o->ceilings, "Where to store them ($KBENCH_CEILINGS)")->capture_default_str();
  cmd->add_option("--runs", o->runs, "Timed copies per method")->check(CLI::Range(3, 10000))->capture_default_str();
  cmd->add_flag("--no-gemm", o->no_gemm, "Skip the vendor-BLAS GEMM rate");
  cmd->callback([o, &exit_code] {
    validate_device_syntax(o->device);
    for (int index : resolve_devices(o->device)) calibrate_one(index, *o);
    exit_code = kExitOk;
  });
}

}  // namespace kbench::app
