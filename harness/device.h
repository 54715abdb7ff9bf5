// What kbench knows about a GPU: properties read off the device, datasheet peaks from a
// table of known parts (else derived from memory clock and bus width), and the slug that
// names it in files.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace kbench {

struct DeviceInfo {
  int index = 0;
  std::string name;   // "NVIDIA H100 80GB HBM3"
  std::string slug;   // "nvidia-h100-80gb-hbm3"
  std::string arch;   // "sm_90", "gfx90a"
  std::string pci_bus_id;
  int sm_count = 0;
  size_t l2_bytes = 0;
  size_t memory_bytes = 0;
  int sm_clock_khz = 0;      // peak
  int memory_clock_khz = 0;  // peak
  int bus_width_bits = 0;
  // Peak memory bytes per SM clock, which picks the forwards' policies (kernels/common/
  // memory_class.h: fast memory from 16).
  double memory_bytes_per_sm_clock = 0;
  std::string driver;   // "580.159.04" (NVML) or the driver API version
  std::string runtime;  // "CUDA 13.0" / "HIP 5.2"
  double peak_gbps = 0;         // datasheet memory bandwidth
  std::string peak_source;      // "datasheet" or "clock x bus width"
  double peak_bf16_tflops = 0;  // datasheet dense bf16, 0 when unknown
};

// Number of usable GPUs; 0 (never throws) when there is no GPU or no driver.
int device_count();
// Why device_count() is 0, as one line ("no CUDA-capable device is detected").
std::string no_device_reason();
// Throws RuntimeFailure("no GPU: ...") when no GPU is usable.
void require_gpu();
// Throws UsageError when index is out of range.
DeviceInfo query_device(int index);

// Pure helpers (unit-tested without a GPU).
std::string slugify(const std::string& name);
struct DatasheetPeak {
  double gbps = 0;
  double bf16_tflops = 0;
};
// Looks the part up by name; gbps == 0 when unknown.
DatasheetPeak datasheet_peak(const std::string& name);
// Double-data-rate bandwidth from clock (kHz) and bus width (bits), in GB/s.
double bandwidth_from_clock(int memory_clock_khz, int bus_width_bits);

}  // namespace kbench
