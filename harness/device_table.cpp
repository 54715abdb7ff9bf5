// The pure part of device.h: slugs and the datasheet table (no runtime calls).
#include <cctype>

#include "harness/device.h"

namespace kbench {

std::string slugify(const std::string& name) {
  std::string slug;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "unknown" : slug;
}

namespace {

struct KnownPart {
  const char* name_contains;  // matched against the device name, first match wins
  double gbps;
  double bf16_tflops;  // dense
};

// Vendor datasheets. More specific names first.
constexpr KnownPart kKnownParts[] = {
    {"GH200", 4000, 989},        {"H200", 4800, 989},
    {"H100 NVL", 3900, 835},     {"H100 PCIe", 2000, 756},
    {"H100", 3350, 989},         {"H800", 3350, 989},
    {"B200", 8000, 2250},        {"A100-SXM4-80GB", 2039, 312},
    {"A100 80GB PCIe", 1935, 312}, {"A100", 1555, 312},
    {"A10G", 600, 70},           {"L40S", 864, 362},
    {"L4", 300, 121},            {"RTX 4090", 1008, 165},
    {"MI300X", 5300, 1307},      {"MI250X", 3277, 383},
    {"MI250", 3277, 362},        {"MI210", 1638, 181},
};

}  // namespace

DatasheetPeak datasheet_peak(const std::string& name) {
  for (const KnownPart& part : kKnownParts)
    if (name.find(part.name_contains) != std::string::npos) return {part.gbps, part.bf16_tflops};
  return {};
}

double bandwidth_from_clock(int memory_clock_khz, int bus_width_bits) {
  return 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
}

}  // namespace kbench
