// kbench plot: the SVG is well-formed XML, draws one marker per passing point, each device's
// measured (solid) and datasheet (dashed) ceilings, axis labels and device names; filters that
// leave nothing and files without the needed columns are UsageErrors naming them; text is
// escaped. All from synthetic rows, no GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "harness/errors.h"
#include "harness/output.h"
#include "harness/plot.h"

namespace kbench {
namespace {

// --- a small well-formedness checker: balanced tags, quoted attributes, valid entities ---

// Returns "" when `xml` is well formed, else what is wrong and where.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> stack;
  size_t i = 0;
  auto text_ok = [&](size_t from, size_t to) -> std::string {
    for (size_t k = from; k < to; ++k) {
      if (xml[k] == '<') return "stray '<'";  // '>' is legal in text and attribute values
      if (xml[k] == '&') {
        const size_t semi = xml.find(';', k);
        if (semi == std::string::npos || semi > to) return "bare & at " + std::to_string(k);
        const std::string ent = xml.substr(k + 1, semi - k - 1);
        if (ent != "amp" && ent != "lt" && ent != "gt" && ent != "quot" && ent != "apos" &&
            ent.rfind('#', 0) != 0)
          return "unknown entity &" + ent + ";";
      }
    }
    return "";
  };
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    const size_t text_end = lt == std::string::npos ? xml.size() : lt;
    if (std::string p = text_ok(i, text_end); !p.empty()) return p + " in text";
    if (lt == std::string::npos) break;
    if (xml.compare(lt, 5, "<?xml") == 0) {
      const size_t end = xml.find("?>", lt);
      if (end == std::string::npos) return "unterminated declaration";
      i = end + 2;
      continue;
    }
    if (xml.compare(lt, 4, "<!--") == 0) {
      const size_t end = xml.find("-->", lt);
      if (end == std::string::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    const bool closing = xml[lt + 1] == '/';
    size_t k = lt + (closing ? 2 : 1);
    const size_t name_start = k;
    while (k < xml.size() && (std::isalnum(static_cast<unsigned char>(xml[k])) || xml[k] == '-' ||
                              xml[k] == ':' || xml[k] == '_'))
      ++k;
    const std::string name = xml.substr(name_start, k - name_start);
    if (name.empty()) return "tag without a name at " + std::to_string(lt);
    // Attributes: name="value" or name='value'; a > inside quotes does not end the tag.
    bool self_closing = false;
    for (;;) {
      while (k < xml.size() && std::isspace(static_cast<unsigned char>(xml[k]))) ++k;
      if (k >= xml.size()) return "unterminated tag <" + name;
      if (xml[k] == '>') break;
      if (xml[k] == '/' && k + 1 < xml.size() && xml[k + 1] == '>') {
        self_closing = true;
        ++k;
        break;
      }
      if (closing) return "attribute in closing tag </" + name;
      const size_t an = k;
      while (k < xml.size() && xml[k] != '=' && !std::isspace(static_cast<unsigned char>(xml[k])) &&
             xml[k] != '>')
        ++k;
      if (k == an || k >= xml.size() || xml[k] != '=') return "bad attribute in <" + name;
      ++k;
      if (k >= xml.size() || (xml[k] != '"' && xml[k] != '\''))
        return "unquoted attribute in <" + name;
      const char q = xml[k];
      const size_t close = xml.find(q, k + 1);
      if (close == std::string::npos) return "unterminated attribute in <" + name;
      if (std::string p = text_ok(k + 1, close); !p.empty()) return p + " in attribute of <" + name;
      k = close + 1;
    }
    i = k + 1;
    if (closing) {
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes " + (stack.empty() ? "nothing" : "<" + stack.back() + ">");
      stack.pop_back();
    } else if (!self_closing) {
      stack.push_back(name);
    }
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return "";
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

ResultRow row(const std::string& device, const std::string& op, const std::string& impl,
              const std::string& dtype, double bytes, double gbps,
              const std::string& status = "pass") {
  ResultRow r;
  r.kbench_version = "0.1.0";
  r.device = device;
  r.device_slug = device == "NVIDIA H200" ? "nvidia-h200" : "nvidia-h100-80gb-hbm3";
  r.op = op, r.impl = impl, r.dtype = dtype, r.l2 = "cold";
  r.m = 2;
  r.n = static_cast<int64_t>(bytes / 4);
  r.shape = "2x" + std::to_string(r.n);
  r.bytes = bytes;
  r.gbps = gbps;
  r.median_us = bytes / (gbps * 1e3);
  r.flops = bytes / 2;
  r.intensity = r.flops / r.bytes;
  r.tflops = r.flops / (r.median_us * 1e6);
  r.peak_gbps = device == "NVIDIA H200" ? 4800 : 3350;
  r.ceiling_gbps = device == "NVIDIA H200" ? 4305 : 3192;
  r.status = status;
  return r;
}

std::vector<ResultRow> two_devices() {
  std::vector<ResultRow> rows;
  for (const char* dev : {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}) {
    for (const char* impl : {"v1_naive", "v3_vec16"}) {
      for (double b : {1e6, 1e7, 1e8})
        rows.push_back(row(dev, "rmsnorm", impl, "bf16", b, b / 1e5 + 500));
    }
  }
  return rows;
}

TEST(PlotXmlChecker, CatchesBrokenXml) {
  EXPECT_EQ(xml_problem("<a x=\"1>2\"><b/><c y='q'>t &amp; u</c></a>"), "");
  EXPECT_NE(xml_problem("<a><b></a>"), "");
  EXPECT_NE(xml_problem("<a>x < y</a>"), "");
  EXPECT_NE(xml_problem("<a>fish & chips</a>"), "");
  EXPECT_NE(xml_problem("<a x=1></a>"), "");
  EXPECT_NE(xml_problem("<a>"), "");
}

TEST(Plot, RooflineHasOneMarkerPerPassingPointAndBothDevicesRoofs) {
  std::vector<ResultRow> rows = two_devices();
  rows.push_back(row("NVIDIA H200", "rmsnorm", "v1_naive", "bf16", 2e8, 900, "fail"));
  ResultRow untimed = row("NVIDIA H200", "rmsnorm", "v1_naive", "bf16", 3e8, 900);
  untimed.median_us = std::numeric_limits<double>::quiet_NaN();
  rows.push_back(untimed);
  PlotOptions o;
  o.ceilings = {Ceiling{"nvidia-h200", "NVIDIA H200", "", "", "", 4305, 4305, 4100, 775}};
  const std::string svg = render_plot(rows, o);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("viewBox=\"0 0 1000 650\""), std::string::npos);
  EXPECT_NE(svg.find("<style>"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"point\""), 12u);  // fail and untimed rows are not drawn
  EXPECT_EQ(count(svg, "class=\"ceiling measured\""), 2u);
  EXPECT_EQ(count(svg, "class=\"ceiling datasheet\""), 2u);
  EXPECT_NE(svg.find("arithmetic intensity (FLOP/byte)"), std::string::npos);
  EXPECT_NE(svg.find("achieved GFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(svg.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(svg.find("kbench 0.1.0"), std::string::npos);
  EXPECT_NE(svg.find("775 TFLOP/s"), std::string::npos);  // measured compute roof from the file
  EXPECT_NE(svg.find("989 TFLOP/s"), std::string::npos);  // datasheet compute roof
  // One op: coloured by impl, both impls in the legend; several devices: shapes differ.
  EXPECT_NE(svg.find(">v3_vec16<"), std::string::npos);
  EXPECT_GT(count(svg, "<rect class=\"point\""), 0u);
  EXPECT_GT(count(svg, "<circle class=\"point\""), 0u);
}

TEST(Plot, BandwidthDrawsOnePolylinePerSeriesWithEndLabels) {
  PlotOptions o;
  o.kind = PlotKind::bandwidth;
  const std::string svg = render_plot(two_devices(), o);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"series\""), 4u);  // (impl, dtype, device)
  EXPECT_EQ(count(svg, "class=\"point\""), 12u);
  EXPECT_EQ(count(svg, "class=\"ceiling measured\""), 2u);
  EXPECT_EQ(count(svg, "class=\"ceiling datasheet\""), 2u);
  EXPECT_NE(svg.find("achieved bandwidth (GB/s)"), std::string::npos);
  EXPECT_NE(svg.find("bytes moved"), std::string::npos);
  EXPECT_NE(svg.find(">100 MB<"), std::string::npos);
  // Largest size on H200: 1e8 / 1e5 + 500 = 1500 GB/s of a 4305 GB/s ceiling.
  EXPECT_NE(svg.find("v1_naive bf16 H200: 34.8%"), std::string::npos);
}

// --x n: the same series over the row length, the readable view of a fixed-size sweep.
TEST(Plot, BandwidthAgainstRowLength) {
  PlotOptions o;
  o.kind = PlotKind::bandwidth;
  o.x_is_n = true;
  const std::string svg = render_plot(two_devices(), o);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"point\""), 12u);
  EXPECT_NE(svg.find("row length N"), std::string::npos);
  EXPECT_EQ(svg.find("bytes moved"), std::string::npos);
}

TEST(Plot, BandwidthWithSeveralOpsNeedsOp) {
  std::vector<ResultRow> rows = two_devices();
  rows.push_back(row("NVIDIA H200", "softmax", "v1_naive", "bf16", 1e6, 100));
  PlotOptions o;
  o.kind = PlotKind::bandwidth;
  try {
    render_plot(rows, o);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--op"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
  }
  o.op = "softmax";
  EXPECT_EQ(count(render_plot(rows, o), "class=\"point\""), 1u);
}

TEST(Plot, OnePointStillHasAxesAroundIt) {
  const std::vector<ResultRow> rows = {
      row("NVIDIA H200", "rmsnorm", "v1_naive", "bf16", 1e8, 3000)};
  for (PlotKind kind : {PlotKind::roofline, PlotKind::bandwidth}) {
    PlotOptions o;
    o.kind = kind;
    const std::string svg = render_plot(rows, o);
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count(svg, "class=\"point\""), 1u);
    EXPECT_GE(count(svg, "class=\"tick-label"), 4u);
    EXPECT_EQ(svg.find("nan"), std::string::npos);
    EXPECT_EQ(svg.find("inf"), std::string::npos);
  }
}

TEST(Plot, RangesAndTicks) {
  double lo = 0, hi = 0;
  log_range(0.5, 0.5, lo, hi);
  EXPECT_LT(lo, 0.5);
  EXPECT_GT(hi, 0.5);
  log_range(3, 7000, lo, hi);
  EXPECT_DOUBLE_EQ(lo, 2);
  EXPECT_DOUBLE_EQ(hi, 10000);
  const std::vector<Tick> t = log_ticks(1, 1000);
  ASSERT_EQ(t.size(), 10u);  // 1 2 5 10 20 50 100 200 500 1000
  EXPECT_TRUE(t[0].major && !t[1].major && !t[2].major && t[3].major);
  double top = 0, step = 0;
  linear_range(4800, top, step);
  EXPECT_DOUBLE_EQ(step, 1000);
  EXPECT_DOUBLE_EQ(top, 5000);
  Scale s{1, 100, 0, 200, true};
  EXPECT_DOUBLE_EQ(s(10), 100);
  std::set<std::string> colors;
  for (size_t i = 0; i < 10; ++i) colors.insert(palette_color(i));
  EXPECT_EQ(colors.size(), 10u);
}

TEST(Plot, TextIsEscaped) {
  std::vector<ResultRow> rows = {
      row("NVIDIA H200", "rmsnorm", "v<9> \"a&b\" 'q'", "bf16", 1e8, 3000)};
  for (PlotKind kind : {PlotKind::roofline, PlotKind::bandwidth}) {
    PlotOptions o;
    o.kind = kind;
    const std::string svg = render_plot(rows, o);
    EXPECT_EQ(xml_problem(svg), "") << svg;
    EXPECT_NE(svg.find("v&lt;9&gt; &quot;a&amp;b&quot; &apos;q&apos;"), std::string::npos);
    EXPECT_EQ(svg.find("v<9>"), std::string::npos);
  }
  EXPECT_EQ(xml_escape("a<b&c>\"'"), "a&lt;b&amp;c&gt;&quot;&apos;");
}

TEST(Plot, EmptySelectionNamesTheFilterAndWhatExists) {
  const std::vector<ResultRow> rows = two_devices();
  auto message = [&](const PlotOptions& o) -> std::string {
    try {
      render_plot(rows, o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "no error";
  };
  PlotOptions o;
  o.op = "softmax";
  EXPECT_EQ(message(o), "no rows for --op softmax (ops in the data: rmsnorm)");
  o = {};
  o.impls = {"v9"};
  EXPECT_NE(message(o).find("--impl v9 (impls in the data: v1_naive, v3_vec16)"),
            std::string::npos);
  o = {};
  o.dtypes = {"fp8"};
  EXPECT_NE(message(o).find("--dtype fp8"), std::string::npos);
  o = {};
  o.devices = {"mi300x"};
  EXPECT_NE(
      message(o).find("--device mi300x (devices in the data: NVIDIA H100 80GB HBM3, NVIDIA H200)"),
      std::string::npos);
  o = {};
  o.devices = {"NVIDIA-H200"};  // slugs match too, case-insensitively
  EXPECT_EQ(count(render_plot(rows, o), "class=\"point\""), 6u);
  std::vector<ResultRow> failing = {row("NVIDIA H200", "rmsnorm", "v1", "bf16", 1e8, 1, "fail")};
  EXPECT_THROW(render_plot(failing, PlotOptions{}), UsageError);
}

// A path in the temp directory, removed at the end.
struct TempCsv {
  std::string path =
      (std::filesystem::temp_directory_path() / ("kbench_plot_test_" + std::to_string(::getpid()) +
                                                 "_" + std::to_string(counter++) + ".csv"))
          .string();
  ~TempCsv() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  static inline int counter = 0;
};

TEST(Plot, LoadsCsvAndNamesMissingColumns) {
  TempCsv full;
  {
    CsvWriter w(full.path);
    for (const ResultRow& r : two_devices()) w.add(r);
  }
  EXPECT_EQ(load_plot_rows({full.path}, PlotKind::roofline).size(), 12u);
  EXPECT_EQ(load_plot_rows({full.path, full.path}, PlotKind::bandwidth).size(), 24u);

  // The same CSV without the intensity column: roofline names it, bandwidth does not need it.
  TempCsv partial;
  {
    std::ifstream in(full.path);
    std::ofstream out(partial.path);
    std::string line;
    bool header = true;
    size_t drop = 0;
    while (std::getline(in, line)) {
      std::vector<std::string> f = csv_split_line(line);
      if (header) {
        drop = std::find(f.begin(), f.end(), "intensity") - f.begin();
        header = false;
      }
      f.erase(f.begin() + static_cast<long>(drop));
      std::string joined;
      for (size_t i = 0; i < f.size(); ++i) joined += (i ? "," : "") + csv_escape(f[i]);
      out << joined << "\n";
    }
  }
  try {
    load_plot_rows({full.path, partial.path}, PlotKind::roofline);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(partial.path), std::string::npos) << m;
    EXPECT_NE(m.find("'intensity'"), std::string::npos) << m;
  }
  EXPECT_EQ(load_plot_rows({partial.path}, PlotKind::bandwidth).size(), 12u);
  EXPECT_THROW(load_plot_rows({"/nonexistent/x.csv"}, PlotKind::roofline), UsageError);
}

}  // namespace
}  // namespace kbench
