// SM clock and driver version through NVML, loaded at run time (dlopen) so kbench starts on
// machines without the NVIDIA driver. Every call degrades to "unknown" when NVML is absent
// (HIP builds, CI).
#pragma once
#include <string>

namespace kbench {

class Nvml {
 public:
  static Nvml& instance();
  bool available() const { return available_; }
  std::string driver_version() const;  // "" when unknown
  // Current and maximum SM clock of the device with this PCI bus id, in MHz; 0 when unknown.
  unsigned sm_clock_mhz(const std::string& pci_bus_id) const;
  unsigned max_sm_clock_mhz(const std::string& pci_bus_id) const;

 private:
  Nvml();
  void* handle_for(const std::string& pci_bus_id) const;
  bool available_ = false;
  [[maybe_unused]] void* lib_ = nullptr;  // unused in HIP builds
  [[maybe_unused]] int (*init_)() = nullptr;
  int (*driver_version_)(char*, unsigned) = nullptr;
  int (*handle_by_pci_)(const char*, void**) = nullptr;
  int (*clock_info_)(void*, int, unsigned*) = nullptr;
  int (*max_clock_info_)(void*, int, unsigned*) = nullptr;
};

}  // namespace kbench
