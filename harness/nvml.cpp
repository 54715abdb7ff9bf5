#include "harness/nvml.h"

#include <dlfcn.h>

namespace kbench {
namespace {
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM
}  // namespace

Nvml& Nvml::instance() {
  static Nvml nvml;
  return nvml;
}

Nvml::Nvml() {
#if !(defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__))
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) return;
  auto sym = [&](const char* name) { return dlsym(lib_, name); };
  init_ = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
  driver_version_ = reinterpret_cast<int (*)(char*, unsigned)>(sym("nvmlSystemGetDriverVersion"));
  handle_by_pci_ =
      reinterpret_cast<int (*)(const char*, void**)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  clock_info_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
  max_clock_info_ =
      reinterpret_cast<int (*)(void*, int, unsigned*)>(sym("nvmlDeviceGetMaxClockInfo"));
  available_ = init_ && driver_version_ && handle_by_pci_ && clock_info_ && max_clock_info_ &&
               init_() == kNvmlSuccess;
#endif
}

std::string Nvml::driver_version() const {
  if (!available_) return "";
  char buf[96] = {};
  return driver_version_(buf, sizeof buf) == kNvmlSuccess ? std::string(buf) : "";
}

void* Nvml::handle_for(const std::string& pci_bus_id) const {
  void* device = nullptr;
  if (!available_ || handle_by_pci_(pci_bus_id.c_str(), &device) != kNvmlSuccess) return nullptr;
  return device;
}

unsigned Nvml::sm_clock_mhz(const std::string& pci_bus_id) const {
  unsigned mhz = 0;
  if (void* device = handle_for(pci_bus_id)) clock_info_(device, kNvmlClockSm, &mhz);
  return mhz;
}

unsigned Nvml::max_sm_clock_mhz(const std::string& pci_bus_id) const {
  unsigned mhz = 0;
  if (void* device = handle_for(pci_bus_id)) max_clock_info_(device, kNvmlClockSm, &mhz);
  return mhz;
}

}  // namespace kbench
