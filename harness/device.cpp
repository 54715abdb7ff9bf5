// Device queries through the compat runtime API.
#include <string>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/nvml.h"
#include "kernels/common/compat.h"
#include "kernels/common/memory_class.h"

namespace kbench {
namespace {

std::string version_string(int v) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  return std::to_string(v / 10000000) + "." + std::to_string((v / 100000) % 100);  // HIP
#else
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);  // 13000 -> 13.0
#endif
}

std::string arch_of(const gpuDeviceProp& prop) {
#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
  std::string arch = prop.gcnArchName;
  return arch.substr(0, arch.find(':'));  // "gfx90a:sramecc+:xnack-" -> "gfx90a"
#else
  return "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
#endif
}

int attribute(int device, decltype(gpuDevAttrClockRate) attr) {
  int value = 0;
  if (gpuDeviceGetAttribute(&value, attr, device) != gpuSuccess) return 0;
  return value;
}

}  // namespace

int device_count() {
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess) {
    (void)gpuGetLastError();  // clear the sticky error so later calls are not confused
    return 0;
  }
  return count;
}

std::string no_device_reason() {
  int count = 0;
  const gpuError_t err = gpuGetDeviceCount(&count);
  (void)gpuGetLastError();
  if (err != gpuSuccess) return gpuGetErrorString(err);
  return count == 0 ? "no GPU visible" : "";
}

void require_gpu() {
  if (device_count() == 0)
    throw RuntimeFailure(std::string("no GPU: ") + no_device_reason() + " (" +
                         KBENCH_RUNTIME_NAME + " runtime; is a GPU visible and its driver installed?)");
}

DeviceInfo query_device(int index) {
  const int count = device_count();
  if (index < 0 || index >= count)
    throw UsageError("bad device " + std::to_string(index) + " (" + std::to_string(count) +
                     " GPU(s) visible: valid 0.." + std::to_string(count - 1) + ")");
  gpuDeviceProp prop{};
  KB_GPU_CHECK(gpuGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.slug = slugify(info.name);
  info.arch = arch_of(prop);
  char bus_id[32] = {};
  if (gpuDeviceGetPCIBusId(bus_id, sizeof bus_id, index) == gpuSuccess) info.pci_bus_id = bus_id;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = static_cast<size_t>(prop.l2CacheSize);
  info.memory_bytes = prop.totalGlobalMem;
  info.sm_clock_khz = attribute(index, gpuDevAttrClockRate);
  info.memory_clock_khz = attribute(index, gpuDevAttrMemoryClockRate);
  info.bus_width_bits = prop.memoryBusWidth;
  info.memory_bytes_per_sm_clock = memory_bytes_per_sm_clock(info.memory_clock_khz, info.bus_width_bits,
                                                             info.sm_clock_khz, info.sm_count);

  int driver = 0, runtime = 0;
  (void)gpuDriverGetVersion(&driver);
  (void)gpuRuntimeGetVersion(&runtime);
  info.driver = Nvml::instance().driver_version();
  if (info.driver.empty()) info.driver = version_string(driver);
  info.runtime = std::string(KBENCH_RUNTIME_NAME) + " " + version_string(runtime);

  const DatasheetPeak peak = datasheet_peak(info.name);
  if (peak.gbps > 0) {
    info.peak_gbps = peak.gbps;
    info.peak_source = "datasheet";
  } else {
    info.peak_gbps = bandwidth_from_clock(info.memory_clock_khz, info.bus_width_bits);
    info.peak_source = "clock x bus width";
  }
  info.peak_bf16_tflops = peak.bf16_tflops;
  return info;
}

}  // namespace kbench
