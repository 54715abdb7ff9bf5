#include "harness/ceilings.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/errors.h"
#include "harness/output.h"

namespace kbench {
namespace {

const std::vector<std::string> kColumns = {
    "device_slug", "device", "timestamp", "kbench_version", "method",
    "copy_gbps", "memcpy_gbps", "kernel_copy_gbps", "gemm_bf16_tflops"};

std::vector<std::string> to_fields(const Ceiling& c) {
  auto num = [](double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  return {c.device_slug, c.device, c.timestamp, c.kbench_version, c.method,
          num(c.copy_gbps), num(c.memcpy_gbps), num(c.kernel_copy_gbps),
          num(c.gemm_bf16_tflops)};
}

Ceiling from_fields(const std::vector<std::string>& header, const std::vector<std::string>& f,
                    const std::string& where) {
  Ceiling c;
  for (size_t i = 0; i < header.size() && i < f.size(); ++i) {
    const std::string& col = header[i];
    auto number = [&] {
      try {
        return f[i].empty() ? 0.0 : std::stod(f[i]);
      } catch (const std::exception&) {
        throw UsageError(where + ": bad number '" + f[i] + "' in column " + col);
      }
    };
    if (col == "device_slug") c.device_slug = f[i];
    else if (col == "device") c.device = f[i];
    else if (col == "timestamp") c.timestamp = f[i];
    else if (col == "kbench_version") c.kbench_version = f[i];
    else if (col == "method") c.method = f[i];
    else if (col == "copy_gbps") c.copy_gbps = number();
    else if (col == "memcpy_gbps") c.memcpy_gbps = number();
    else if (col == "kernel_copy_gbps") c.kernel_copy_gbps = number();
    else if (col == "gemm_bf16_tflops") c.gemm_bf16_tflops = number();
  }
  return c;
}

}  // namespace

std::string default_ceilings_path() {
  if (const char* env = std::getenv("KBENCH_CEILINGS"); env && *env) return env;
  return "results/ceilings.csv";
}

std::vector<Ceiling> load_ceilings(const std::string& path) {
  std::ifstream in(path);
  std::vector<Ceiling> out;
  if (!in) return out;
  std::string line;
  std::vector<std::string> header;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    std::vector<std::string> fields = csv_split_line(line);
    if (header.empty()) {
      header = fields;
      continue;
    }
    out.push_back(from_fields(header, fields, path + ":" + std::to_string(line_no)));
  }
  return out;
}

std::optional<Ceiling> find_ceiling(const std::string& path, const std::string& slug) {
  for (const Ceiling& c : load_ceilings(path))
    if (c.device_slug == slug) return c;
  return std::nullopt;
}

void store_ceiling(const std::string& path, const Ceiling& c) {
  std::vector<Ceiling> all = load_ceilings(path);
  bool replaced = false;
  for (Ceiling& old : all)
    if (old.device_slug == c.device_slug) old = c, replaced = true;
  if (!replaced) all.push_back(c);

  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw UsageError("cannot write ceilings file '" + path + "'");
  auto write_row = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << csv_escape(fields[i]);
    out << "\n";
  };
  write_row(kColumns);
  for (const Ceiling& row : all) write_row(to_fields(row));
}

}  // namespace kbench
