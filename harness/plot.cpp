// SVG charts from result rows. Layout: a 1000x650 canvas, the plot area on the left, a panel
// on the right for the legend and the series' end labels (so nothing covers data), the title
// on top. Every element is written by a small function; all text goes through xml_escape.
#include "harness/plot.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/output.h"

namespace kbench {
namespace {

// Canvas and plot area (pixels).
constexpr double kWidth = 1000, kHeight = 650;
constexpr double kLeft = 80, kTop = 62, kRight = 690, kBottom = 580;
constexpr double kPanel = 712;      // right panel: legend, end labels
constexpr double kCharWidth = 0.6;  // average sans-serif glyph width per px of font size

std::string num(double v) {  // pixel coordinate
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Distinct values of one field, in first-seen order.
template <typename Get>
std::vector<std::string> distinct(const std::vector<ResultRow>& rows, Get get) {
  std::vector<std::string> out;
  for (const ResultRow& r : rows)
    if (!contains(out, get(r))) out.push_back(get(r));
  return out;
}

bool timed(const ResultRow& r) { return std::isfinite(r.median_us) && r.median_us > 0; }

// "NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3": the vendor word adds nothing inside a chart.
std::string short_device(const std::string& name) {
  for (const char* vendor : {"NVIDIA ", "AMD "})
    if (name.rfind(vendor, 0) == 0 && name.size() > std::string(vendor).size())
      return name.substr(std::string(vendor).size());
  return name;
}

// The shortest name that still tells the chart's devices apart: "H100" when the first words
// differ, else the vendor-less name.
std::string device_tag(const std::string& name, const std::vector<std::string>& devices) {
  auto first_word = [](const std::string& n) {
    const std::string s = short_device(n);
    return s.substr(0, s.find(' '));
  };
  for (const std::string& d : devices)
    if (d != name && first_word(d) == first_word(name)) return short_device(name);
  return first_word(name);
}

// Tick labels: 0.01, 0.1, 1, 10, 100, 1k, 10k, 1M ...
std::string si_label(double v) {
  if (v == 0) return "0";
  if (v >= 1e9) return fixed(v / 1e9, v / 1e9 < 10 && std::fmod(v / 1e9, 1) != 0 ? 1 : 0) + "G";
  if (v >= 1e6) return fixed(v / 1e6, v / 1e6 < 10 && std::fmod(v / 1e6, 1) != 0 ? 1 : 0) + "M";
  if (v >= 1e3) return fixed(v / 1e3, v / 1e3 < 10 && std::fmod(v / 1e3, 1) != 0 ? 1 : 0) + "k";
  if (v >= 1) return fixed(v, 0);
  const int digits = static_cast<int>(std::ceil(-std::log10(v) - 1e-9));
  if (digits <= 4) return fixed(v, digits);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0e", v);
  return buf;
}

std::string bytes_label(double v) {
  if (v >= 1e9) return si_label(v).substr(0, si_label(v).size() - 1) + " GB";
  if (v >= 1e6) return si_label(v).substr(0, si_label(v).size() - 1) + " MB";
  if (v >= 1e3) return si_label(v).substr(0, si_label(v).size() - 1) + " kB";
  return si_label(v) + " B";
}

// ---- SVG elements ----

struct Svg {
  std::ostringstream s;

  void line(double x1, double y1, double x2, double y2, const std::string& cls,
            const std::string& style = "") {
    s << "<line class=\"" << cls << "\" x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\""
      << num(x2) << "\" y2=\"" << num(y2) << "\""
      << (style.empty() ? "" : " style=\"" + style + "\"") << "/>\n";
  }
  void text(double x, double y, const std::string& t, const std::string& cls,
            const std::string& anchor = "start", const std::string& style = "",
            const std::string& transform = "") {
    s << "<text class=\"" << cls << "\" x=\"" << num(x) << "\" y=\"" << num(y) << "\"";
    if (anchor != "start") s << " text-anchor=\"" << anchor << "\"";
    if (!style.empty()) s << " style=\"" << style << "\"";
    if (!transform.empty()) s << " transform=\"" << transform << "\"";
    s << ">" << xml_escape(t) << "</text>\n";
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& cls,
                const std::string& style) {
    s << "<polyline class=\"" << cls << "\" style=\"" << style << "\" points=\"";
    for (size_t i = 0; i < pts.size(); ++i)
      s << (i ? " " : "") << num(pts[i].first) << "," << num(pts[i].second);
    s << "\"/>\n";
  }
  // A marker: circle, square, triangle, diamond ... by shape index; `tip` becomes a tooltip.
  void marker(double x, double y, size_t shape, const std::string& color, const std::string& cls,
              const std::string& tip) {
    const double r = 4.2;
    const std::string fill = " style=\"fill:" + color + "\"";
    const std::string head = "class=\"" + cls + "\"" + fill;
    switch (shape % 4) {
      case 0:
        s << "<circle " << head << " cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"" << num(r)
          << "\"";
        break;
      case 1:
        s << "<rect " << head << " x=\"" << num(x - r * 0.85) << "\" y=\"" << num(y - r * 0.85)
          << "\" width=\"" << num(r * 1.7) << "\" height=\"" << num(r * 1.7) << "\"";
        break;
      case 2:
        s << "<polygon " << head << " points=\"" << num(x) << "," << num(y - r * 1.15) << " "
          << num(x - r) << "," << num(y + r * 0.75) << " " << num(x + r) << "," << num(y + r * 0.75)
          << "\"";
        break;
      default:
        s << "<polygon " << head << " points=\"" << num(x) << "," << num(y - r * 1.2) << " "
          << num(x + r) << "," << num(y) << " " << num(x) << "," << num(y + r * 1.2) << " "
          << num(x - r) << "," << num(y) << "\"";
    }
    if (tip.empty()) {
      s << "/>\n";
    } else {
      s << "><title>" << xml_escape(tip) << "</title></"
        << (shape % 4 == 0   ? "circle"
            : shape % 4 == 1 ? "rect"
                             : "polygon")
        << ">\n";
    }
  }
};

const char* kStyle =
    "text{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;fill:#222}"
    ".bg{fill:#fff}"
    ".frame{fill:none;stroke:#444;stroke-width:1}"
    ".grid{stroke:#dcdcdc;stroke-width:1}"
    ".grid-minor{stroke:#f0f0f0;stroke-width:1}"
    ".tick{stroke:#444;stroke-width:1}"
    ".tick-label{font-size:11px}"
    ".tick-label.minor{font-size:9.5px;fill:#666}"
    ".axis-label{font-size:13px}"
    ".title{font-size:16px;font-weight:bold}"
    ".subtitle{font-size:11.5px;fill:#555}"
    ".ceiling{fill:none;stroke-width:1.6}"
    ".ceiling.datasheet,.legend-line.datasheet{stroke-dasharray:7 4}"
    ".legend-line{stroke-width:1.6}"
    ".ceiling-label{font-size:10.5px}"
    ".series{fill:none;stroke-width:1.8}"
    ".point{stroke:#fff;stroke-width:0.7}"
    ".legend{font-size:11px}"
    ".legend-head{font-size:11px;font-weight:bold}"
    ".end-label{font-size:11px}"
    ".leader{stroke-width:0.8;stroke-opacity:0.6}";

// Dark colours for each device's roofs / ceilings, distinct from the series palette.
const std::string& device_color(size_t i) {
  static const std::vector<std::string> c = {"#222222", "#a0522d", "#00677a", "#6b3d7d"};
  return c[i % c.size()];
}

struct Frame {
  Scale x, y;
};

// Grid, ticks, tick labels, frame and axis labels for one axis.
void draw_axis(Svg& svg, const Scale& sc, bool horizontal, const std::vector<Tick>& ticks,
               std::string (*label)(double), const std::string& title) {
  for (const Tick& t : ticks) {
    const double p = sc(t.value);
    const bool labelled =
        t.major ||
        std::none_of(ticks.begin(), ticks.end(), [](const Tick& u) { return u.major; }) ||
        std::count_if(ticks.begin(), ticks.end(), [](const Tick& u) { return u.major; }) < 2;
    if (horizontal) {
      svg.line(p, kTop, p, kBottom, t.major ? "grid" : "grid-minor");
      svg.line(p, kBottom, p, kBottom + (t.major ? 6 : 3), "tick");
      if (labelled)
        svg.text(p, kBottom + 19, label(t.value), t.major ? "tick-label" : "tick-label minor",
                 "middle");
    } else {
      svg.line(kLeft, p, kRight, p, t.major ? "grid" : "grid-minor");
      svg.line(kLeft - (t.major ? 6 : 3), p, kLeft, p, "tick");
      if (labelled)
        svg.text(kLeft - 9, p + 4, label(t.value), t.major ? "tick-label" : "tick-label minor",
                 "end");
    }
  }
  if (horizontal) {
    svg.text((kLeft + kRight) / 2, kBottom + 44, title, "axis-label", "middle");
  } else {
    const double cy = (kTop + kBottom) / 2;
    svg.text(20, cy, title, "axis-label", "middle", "", "rotate(-90 20 " + num(cy) + ")");
  }
}

std::string svg_open(const std::string& title) {
  std::ostringstream s;
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << kWidth
    << "\" height=\"" << kHeight << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\">\n"
    << "<title>" << xml_escape(title) << "</title>\n"
    << "<style>" << kStyle << "</style>\n"
    << "<defs><clipPath id=\"plot-area\"><rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\""
    << kRight - kLeft << "\" height=\"" << kBottom - kTop << "\"/></clipPath></defs>\n"
    << "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\"/>\n";
  return s.str();
}

void draw_titles(Svg& svg, const std::string& title, const std::string& subtitle) {
  svg.text(kLeft, 26, title, "title");
  svg.text(kLeft, 45, subtitle, "subtitle");
}

std::string versions_of(const std::vector<ResultRow>& rows) {
  std::vector<std::string> v = distinct(rows, [](const ResultRow& r) { return r.kbench_version; });
  v.erase(std::remove(v.begin(), v.end(), std::string()), v.end());
  return v.empty() ? "" : " (kbench " + join(v) + ")";
}

std::vector<std::string> sorted_devices(const std::vector<ResultRow>& rows) {
  std::vector<std::string> d = distinct(rows, [](const ResultRow& r) { return r.device; });
  std::sort(d.begin(), d.end());
  return d;
}

// Per device: measured and datasheet bandwidth (GB/s) and compute (TFLOP/s); 0 = unknown.
struct Roofs {
  std::string device, slug;
  double ceiling_gbps = 0, peak_gbps = 0, ceiling_tflops = 0, peak_tflops = 0;
};

Roofs roofs_for(const std::string& device, const std::vector<ResultRow>& rows,
                const std::vector<Ceiling>& ceilings) {
  Roofs f;
  f.device = device;
  for (const ResultRow& r : rows) {
    if (r.device != device) continue;
    if (f.slug.empty()) f.slug = r.device_slug;
    if (std::isfinite(r.ceiling_gbps)) f.ceiling_gbps = std::max(f.ceiling_gbps, r.ceiling_gbps);
    if (std::isfinite(r.peak_gbps)) f.peak_gbps = std::max(f.peak_gbps, r.peak_gbps);
  }
  if (f.slug.empty()) f.slug = slugify(device);
  for (const Ceiling& c : ceilings) {
    if (c.device_slug != f.slug) continue;
    if (c.copy_gbps > 0) f.ceiling_gbps = c.copy_gbps;
    if (c.gemm_bf16_tflops > 0) f.ceiling_tflops = c.gemm_bf16_tflops;
  }
  const DatasheetPeak ds = datasheet_peak(device);
  if (f.peak_gbps <= 0) f.peak_gbps = ds.gbps;
  f.peak_tflops = ds.bf16_tflops;
  return f;
}

// The roofline of one (bandwidth GB/s, compute TFLOP/s) pair, clipped to the frame, as pixels.
// Without a compute roof (tflops 0) the diagonal stops at `cap_tflops` (the datasheet roof)
// rather than pass through it.
std::vector<std::pair<double, double>> roof_points(const Frame& fr, double gbps, double tflops,
                                                   double cap_tflops = 0) {
  const double xlo = fr.x.d0, xhi = fr.x.d1, ylo = fr.y.d0, yhi = fr.y.d1;
  const double gflops = tflops * 1000;
  const double stop = gflops > 0 ? gflops : cap_tflops * 1000;
  const double top = stop > 0 ? std::min(stop, yhi) : yhi;
  std::vector<std::pair<double, double>> pts;
  const double x0 = std::max(xlo, ylo / gbps);  // diagonal enters at the left or the bottom
  const double x1 = std::min(xhi, top / gbps);  // and reaches the roof (or the top / right)
  if (x0 < x1) {
    pts.emplace_back(fr.x(x0), fr.y(gbps * x0));
    pts.emplace_back(fr.x(x1), fr.y(gbps * x1));
  }
  if (gflops > 0 && gflops >= ylo && gflops <= yhi && x1 < xhi) {
    if (pts.empty()) pts.emplace_back(fr.x(std::max(xlo, x1)), fr.y(gflops));
    pts.emplace_back(fr.x(xhi), fr.y(gflops));
  }
  return pts;
}

std::string gbps_text(double v) { return fixed(v, 0) + " GB/s"; }
std::string tflops_text(double v) { return fixed(v, 0) + " TFLOP/s"; }

// Legend rows in the right panel, from y downwards; returns the next free y.
struct Legend {
  Svg& svg;
  double y;
  void head(const std::string& t) {
    svg.text(kPanel, y + 4, t, "legend-head");
    y += 16;
  }
  void marker(size_t shape, const std::string& color, const std::string& t) {
    svg.marker(kPanel + 8, y, shape, color, "legend-marker", "");
    svg.text(kPanel + 20, y + 4, t, "legend");
    y += 15;
  }
  void line(const std::string& cls, const std::string& color, const std::string& t) {
    svg.line(kPanel, y, kPanel + 22, y, "legend-line " + cls, "stroke:" + color);
    svg.text(kPanel + 28, y + 4, t, "legend");
    y += 15;
  }
  void gap() { y += 7; }
};

std::string shorten(const std::string& s, size_t max_chars) {
  return s.size() <= max_chars ? s : s.substr(0, max_chars - 1) + "\xE2\x80\xA6";  // ellipsis
}

std::string render_roofline(const std::vector<ResultRow>& rows, const PlotOptions& o) {
  const std::vector<std::string> devices = sorted_devices(rows);
  const std::vector<std::string> ops = distinct(rows, [](const ResultRow& r) { return r.op; });
  const bool by_impl = ops.size() == 1;
  const std::vector<std::string> keys =
      by_impl ? distinct(rows, [](const ResultRow& r) { return r.impl; }) : ops;

  std::vector<Roofs> roofs;
  for (const std::string& d : devices) roofs.push_back(roofs_for(d, rows, o.ceilings));

  // Ranges: every point, and every roof's ridge point so the bend is on the chart.
  double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
  for (const ResultRow& r : rows) {
    xlo = std::min(xlo, r.intensity), xhi = std::max(xhi, r.intensity);
    ylo = std::min(ylo, r.tflops * 1000), yhi = std::max(yhi, r.tflops * 1000);
  }
  for (const Roofs& f : roofs) {
    for (double t : {f.ceiling_tflops, f.peak_tflops}) {
      if (t <= 0) continue;
      yhi = std::max(yhi, t * 1000);
      for (double g : {f.ceiling_gbps, f.peak_gbps})
        if (g > 0) xhi = std::max(xhi, t * 1000 / g);
    }
  }
  Frame fr;
  fr.x.log = fr.y.log = true;
  log_range(xlo / 1.5, xhi * 2, fr.x.d0, fr.x.d1);
  log_range(ylo / 1.5, yhi * 1.5, fr.y.d0, fr.y.d1);
  fr.x.p0 = kLeft, fr.x.p1 = kRight, fr.y.p0 = kBottom, fr.y.p1 = kTop;

  std::vector<std::string> short_names;
  for (const std::string& d : devices) short_names.push_back(short_device(d));
  // Beyond three ops the names would run off the page; the legend lists them.
  const std::string what = ops.size() <= 3 ? join(ops) : std::to_string(ops.size()) + " ops";
  const std::string title = "Roofline: " + what + " on " + join(devices) + versions_of(rows);
  Svg svg;
  draw_titles(svg, title,
              std::to_string(rows.size()) + " passing points; colour = " +
                  (by_impl ? "impl" : "op") + (devices.size() > 1 ? ", shape = device" : "") +
                  "; roofs: solid = measured ceiling, dashed = datasheet peak");
  draw_axis(svg, fr.x, true, log_ticks(fr.x.d0, fr.x.d1), si_label,
            "arithmetic intensity (FLOP/byte)");
  draw_axis(svg, fr.y, false, log_ticks(fr.y.d0, fr.y.d1), si_label, "achieved GFLOP/s");

  svg.s << "<g clip-path=\"url(#plot-area)\">\n";
  for (size_t i = 0; i < roofs.size(); ++i) {
    const Roofs& f = roofs[i];
    const std::string style = "stroke:" + device_color(i);
    if (f.ceiling_gbps > 0)
      svg.polyline(roof_points(fr, f.ceiling_gbps, f.ceiling_tflops, f.peak_tflops),
                   "ceiling measured", style);
    if (f.peak_gbps > 0)
      svg.polyline(roof_points(fr, f.peak_gbps, f.peak_tflops), "ceiling datasheet", style);
  }
  for (const ResultRow& r : rows) {
    const size_t key = std::find(keys.begin(), keys.end(), by_impl ? r.impl : r.op) - keys.begin();
    const size_t dev = std::find(devices.begin(), devices.end(), r.device) - devices.begin();
    svg.marker(fr.x(r.intensity), fr.y(r.tflops * 1000), devices.size() > 1 ? dev : 0,
               palette_color(key), "point",
               r.op + " " + r.impl + " " + r.dtype + " " + r.shape + " on " + r.device + ": " +
                   fixed(r.tflops * 1000, 1) + " GFLOP/s, " + fixed(r.gbps, 0) + " GB/s");
  }
  svg.s << "</g>\n";
  svg.s << "<rect class=\"frame\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\""
        << kRight - kLeft << "\" height=\"" << kBottom - kTop << "\"/>\n";

  Legend lg{svg, kTop + 4};
  lg.head(by_impl ? "impl (" + ops.front() + ")" : "op");
  for (size_t i = 0; i < keys.size(); ++i) lg.marker(0, palette_color(i), shorten(keys[i], 38));
  if (devices.size() > 1) {
    lg.gap();
    lg.head("device");
    for (size_t i = 0; i < devices.size(); ++i) lg.marker(i, "#777", shorten(short_names[i], 38));
  }
  lg.gap();
  lg.head("roofs");
  for (size_t i = 0; i < roofs.size(); ++i) {
    const Roofs& f = roofs[i];
    svg.text(kPanel, lg.y + 4, shorten(short_names[i], 40), "legend", "start",
             "fill:" + device_color(i) + ";font-weight:bold");
    lg.y += 15;
    if (f.ceiling_gbps > 0)
      lg.line("measured", device_color(i),
              "measured " + gbps_text(f.ceiling_gbps) +
                  (f.ceiling_tflops > 0 ? ", " + tflops_text(f.ceiling_tflops) : ""));
    if (f.peak_gbps > 0)
      lg.line("datasheet", device_color(i),
              "datasheet " + gbps_text(f.peak_gbps) +
                  (f.peak_tflops > 0 ? ", " + tflops_text(f.peak_tflops) : ""));
  }
  if (std::any_of(roofs.begin(), roofs.end(), [](const Roofs& f) { return f.peak_tflops > 0; })) {
    svg.text(kPanel, lg.y + 4, "compute roofs: bf16 dense", "legend", "start", "fill:#666");
    lg.y += 15;
  }
  return svg_open(title) + svg.s.str() + "</svg>\n";
}

std::string render_bandwidth(const std::vector<ResultRow>& all, const PlotOptions& o) {
  const std::vector<std::string> ops = distinct(all, [](const ResultRow& r) { return r.op; });
  if (ops.size() > 1)
    throw UsageError("--kind bandwidth draws one op; the data has " + join(ops) +
                     ": choose one with --op");
  // The x value of a row: bytes moved, or the row length N for a sweep of one size.
  auto xval = [&o](const ResultRow* r) { return o.x_is_n ? static_cast<double>(r->n) : r->bytes; };
  std::vector<ResultRow> rows;
  for (const ResultRow& r : all)
    if (xval(&r) > 0 && r.gbps > 0 && std::isfinite(r.gbps)) rows.push_back(r);
  if (rows.empty())
    throw UsageError(std::string("no rows with ") + (o.x_is_n ? "n" : "bytes") +
                     " and gbps for op " + ops.front() + " to draw");

  const std::vector<std::string> devices = sorted_devices(rows);
  const bool several_l2 = distinct(rows, [](const ResultRow& r) { return r.l2; }).size() > 1;
  std::vector<Roofs> roofs;
  for (const std::string& d : devices) roofs.push_back(roofs_for(d, rows, o.ceilings));

  // Series: (device, impl, dtype[, l2]) in sorted order; points sorted by bytes.
  struct Series {
    std::string device, impl, dtype, l2;
    std::vector<const ResultRow*> pts;
  };
  std::map<std::vector<std::string>, Series> by_key;
  for (const ResultRow& r : rows) {
    Series& s = by_key[{r.device, r.impl, r.dtype, several_l2 ? r.l2 : ""}];
    s.device = r.device, s.impl = r.impl, s.dtype = r.dtype, s.l2 = several_l2 ? r.l2 : "";
    s.pts.push_back(&r);
  }
  std::vector<Series> series;
  for (auto& kv : by_key) {
    std::stable_sort(kv.second.pts.begin(), kv.second.pts.end(),
                     [&](const ResultRow* a, const ResultRow* b) { return xval(a) < xval(b); });
    series.push_back(kv.second);
  }

  double xlo = INFINITY, xhi = 0, yhi = 0;
  for (const ResultRow& r : rows) {
    xlo = std::min(xlo, xval(&r)), xhi = std::max(xhi, xval(&r)), yhi = std::max(yhi, r.gbps);
  }
  for (const Roofs& f : roofs) yhi = std::max({yhi, f.ceiling_gbps, f.peak_gbps});
  Frame fr;
  fr.x.log = true;
  log_range(xlo / 1.3, xhi * 1.3, fr.x.d0, fr.x.d1);
  double ystep = 1;
  linear_range(yhi * 1.04, fr.y.d1, ystep);
  fr.y.d0 = 0;
  fr.x.p0 = kLeft, fr.x.p1 = kRight, fr.y.p0 = kBottom, fr.y.p1 = kTop;

  const std::vector<std::string> dtypes =
      distinct(rows, [](const ResultRow& r) { return r.dtype; });
  const std::string title = ops.front() + " bandwidth on " + join(devices) + versions_of(rows);
  Svg svg;
  draw_titles(svg, title,
              "dtype " + join(dtypes) + "; " + std::to_string(series.size()) +
                  " series, labels: % of the measured ceiling at the largest size; "
                  "solid = measured ceiling, dashed = datasheet peak");
  if (o.x_is_n)
    draw_axis(svg, fr.x, true, log_ticks(fr.x.d0, fr.x.d1), si_label,
              "row length N (elements; the sweep keeps M x N about constant)");
  else
    draw_axis(svg, fr.x, true, log_ticks(fr.x.d0, fr.x.d1), bytes_label,
              "bytes moved per call (minimum: inputs read once, outputs written once)");
  std::vector<Tick> yt;
  for (double v = 0; v <= fr.y.d1 + ystep * 1e-6; v += ystep) yt.push_back({v, true});
  draw_axis(svg, fr.y, false, yt, si_label, "achieved bandwidth (GB/s)");

  svg.s << "<g clip-path=\"url(#plot-area)\">\n";
  for (size_t i = 0; i < roofs.size(); ++i) {
    const Roofs& f = roofs[i];
    const std::string style = "stroke:" + device_color(i);
    if (f.ceiling_gbps > 0)
      svg.polyline({{kLeft, fr.y(f.ceiling_gbps)}, {kRight, fr.y(f.ceiling_gbps)}},
                   "ceiling measured", style);
    if (f.peak_gbps > 0)
      svg.polyline({{kLeft, fr.y(f.peak_gbps)}, {kRight, fr.y(f.peak_gbps)}}, "ceiling datasheet",
                   style);
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    std::vector<std::pair<double, double>> pts;
    for (const ResultRow* r : s.pts) pts.emplace_back(fr.x(xval(r)), fr.y(r->gbps));
    svg.polyline(pts, "series", "stroke:" + palette_color(i));
    const size_t dev = std::find(devices.begin(), devices.end(), s.device) - devices.begin();
    for (const ResultRow* r : s.pts)
      svg.marker(fr.x(xval(r)), fr.y(r->gbps), devices.size() > 1 ? dev : 0, palette_color(i),
                 "point",
                 r->impl + " " + r->dtype + " " + r->shape + " on " + r->device + ": " +
                     fixed(r->gbps, 0) + " GB/s, " + fixed(r->median_us, 2) + " us");
  }
  svg.s << "</g>\n";
  svg.s << "<rect class=\"frame\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\""
        << kRight - kLeft << "\" height=\"" << kBottom - kTop << "\"/>\n";

  // Ceiling labels inside the plot: measured at the left (small sizes sit low), datasheet at
  // the right (above the data, which stays under the ceiling).
  for (size_t i = 0; i < roofs.size(); ++i) {
    const Roofs& f = roofs[i];
    const std::string who = devices.size() > 1 ? device_tag(f.device, devices) + " " : "";
    const std::string style = "fill:" + device_color(i);
    if (f.ceiling_gbps > 0)
      svg.text(kLeft + 6, fr.y(f.ceiling_gbps) - 4,
               who + "measured ceiling " + gbps_text(f.ceiling_gbps), "ceiling-label", "start",
               style);
    if (f.peak_gbps > 0)
      svg.text(kRight - 6, fr.y(f.peak_gbps) - 4, who + "datasheet peak " + gbps_text(f.peak_gbps),
               "ceiling-label", "end", style);
  }

  // End labels in the right panel, at the height of each series' last point, pushed apart
  // so they never overlap, with a leader line back to the point.
  struct Label {
    double want, y;
    size_t series;
    std::string text;
  };
  std::vector<Label> labels;
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const ResultRow& last = *s.pts.back();
    const size_t dev = std::find(devices.begin(), devices.end(), s.device) - devices.begin();
    const Roofs& f = roofs[dev];
    std::string name = s.impl + " " + s.dtype;
    if (several_l2) name += " " + s.l2;
    if (devices.size() > 1) name += " " + device_tag(s.device, devices);
    std::string value = f.ceiling_gbps > 0 ? fixed(100 * last.gbps / f.ceiling_gbps, 1) + "%"
                        : f.peak_gbps > 0  ? fixed(100 * last.gbps / f.peak_gbps, 1) + "% of peak"
                                           : gbps_text(last.gbps);
    const size_t room = static_cast<size_t>((kWidth - kPanel - 4) / (11 * kCharWidth));
    name = shorten(name, room > value.size() + 3 ? room - value.size() - 2 : 8);
    labels.push_back({fr.y(last.gbps), 0, i, name + ": " + value});
  }
  std::sort(labels.begin(), labels.end(),
            [](const Label& a, const Label& b) { return a.want < b.want; });
  const double gap = 14;
  double next = kTop + 4;
  for (Label& l : labels) next = (l.y = std::max(l.want, next)) + gap;
  // Pushed past the bottom: shift the stack back up.
  if (!labels.empty() && labels.back().y > kBottom) {
    double limit = kBottom;
    for (size_t i = labels.size(); i-- > 0;) {
      labels[i].y = std::min(labels[i].y, limit);
      limit = labels[i].y - gap;
    }
  }
  for (const Label& l : labels) {
    const Series& s = series[l.series];
    const std::string color = palette_color(l.series);
    svg.line(fr.x(xval(s.pts.back())) + 5, l.want, kPanel - 3, l.y, "leader", "stroke:" + color);
    svg.text(kPanel, l.y + 4, l.text, "end-label", "start", "fill:" + color);
  }

  // Line styles and device shapes under the label column, below the plot's bottom edge.
  Legend lg{svg, kBottom + 22};
  lg.line("measured", "#444", "measured ceiling (kbench calibrate)");
  lg.line("datasheet", "#444", "datasheet peak");
  if (devices.size() > 1) {
    std::string shapes;
    const char* names[] = {"circle", "square", "triangle", "diamond"};
    for (size_t i = 0; i < devices.size(); ++i)
      shapes +=
          (i ? ", " : "") + std::string(names[i % 4]) + " = " + device_tag(devices[i], devices);
    svg.text(kPanel, lg.y + 4, shorten(shapes, 44), "legend");
  }
  return svg_open(title) + svg.s.str() + "</svg>\n";
}

// Keeps the rows whose field (or, for devices, slug) is in `wanted` (all when empty); throws
// naming the flag and the values there are when nothing is left.
using Field = std::string (*)(const ResultRow&);
std::vector<ResultRow> filter_by(const std::vector<ResultRow>& rows,
                                 const std::vector<std::string>& wanted, const std::string& flag,
                                 const std::string& what, Field field, Field alias = nullptr) {
  if (wanted.empty()) return rows;
  std::vector<ResultRow> out;
  for (const ResultRow& r : rows) {
    for (const std::string& w : wanted) {
      const bool hit =
          alias ? lower(field(r)) == lower(w) || lower(alias(r)) == lower(w) : field(r) == w;
      if (hit) {
        out.push_back(r);
        break;
      }
    }
  }
  if (out.empty()) {
    std::vector<std::string> have;
    for (const ResultRow& r : rows)
      if (!contains(have, field(r))) have.push_back(field(r));
    throw UsageError("no rows for " + flag + " " + join(wanted, ",") + " (" + what +
                     " in the data: " + join(have) + ")");
  }
  return out;
}

}  // namespace

double Scale::operator()(double v) const {
  if (log) {
    const double a = std::log10(d0), b = std::log10(d1);
    return p0 + (std::log10(v) - a) / (b - a) * (p1 - p0);
  }
  return p0 + (v - d0) / (d1 - d0) * (p1 - p0);
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 (tab, newline, CR are).
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

void log_range(double lo, double hi, double& out_lo, double& out_hi) {
  if (!(lo > 0) || !std::isfinite(lo)) lo = hi > 0 && std::isfinite(hi) ? hi : 1;
  if (!(hi > 0) || !std::isfinite(hi)) hi = lo;
  if (hi < lo) std::swap(lo, hi);
  if (hi / lo < 2.5) {  // one point, or nearly: pad so the axes have a span
    const double mid = std::sqrt(lo * hi);
    lo = mid / 1.6, hi = mid * 1.6;
  }
  // Snap outwards to the 1-2-5 sequence, so the ends are round numbers.
  const double steps[] = {1, 2, 5, 10};
  const double dlo = std::pow(10, std::floor(std::log10(lo)));
  out_lo = dlo;
  for (double s : steps)
    if (s * dlo <= lo * (1 + 1e-9)) out_lo = s * dlo;
  const double dhi = std::pow(10, std::floor(std::log10(hi)));
  out_hi = 10 * dhi;
  for (int i = 3; i >= 0; --i)
    if (steps[i] * dhi >= hi * (1 - 1e-9)) out_hi = steps[i] * dhi;
}

std::vector<Tick> log_ticks(double lo, double hi) {
  std::vector<Tick> ticks;
  const int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  for (int d = d0; d <= d1; ++d) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, d);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back({v, m == 1.0});
    }
  }
  return ticks;
}

void linear_range(double hi, double& out_hi, double& step) {
  if (!(hi > 0) || !std::isfinite(hi)) hi = 1;
  const double raw = hi / 6;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  step = 10 * mag;
  for (double m : {5.0, 2.0, 1.0})
    if (m * mag >= raw) step = m * mag;
  out_hi = std::ceil(hi / step - 1e-9) * step;
}

const std::string& palette_color(size_t i) {
  // Tableau's tab10 (dark enough for text on white), then two more that stay distinct from it.
  static const std::vector<std::string> c = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                             "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                             "#bcbd22", "#17becf", "#393b79", "#b8860b"};
  return c[i % c.size()];
}

PlotKind parse_plot_kind(const std::string& s) {
  if (s == "roofline") return PlotKind::roofline;
  if (s == "bandwidth") return PlotKind::bandwidth;
  throw UsageError("unknown --kind '" + s + "' (valid: roofline, bandwidth)");
}

std::vector<std::string> plot_required_columns(PlotKind kind) {
  std::vector<std::string> cols = {"op", "impl", "dtype", "shape", "status"};
  if (kind == PlotKind::roofline) {
    cols.insert(cols.end(), {"intensity", "tflops"});
  } else {
    cols.insert(cols.end(), {"bytes", "gbps"});
  }
  return cols;
}

std::vector<ResultRow> load_plot_rows(const std::vector<std::string>& paths, PlotKind kind) {
  std::vector<ResultRow> rows;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw UsageError(path +
                       (std::filesystem::exists(path, ec) ? ": not a file" : ": no such file"));
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line) && line.find_first_not_of(" \t\r") == std::string::npos) {
    }
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> header;
    try {
      header = csv_split_line(line);
    } catch (const UsageError& e) {
      throw UsageError(path + ": " + e.what());
    }
    for (const std::string& col : plot_required_columns(kind))
      if (!contains(header, col))
        throw UsageError(path + ": missing column '" + col + "' (needed for --kind " +
                         (kind == PlotKind::roofline ? "roofline" : "bandwidth") + ")");
    std::vector<ResultRow> part = read_results_csv(path);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

std::vector<ResultRow> select_plot_rows(const std::vector<ResultRow>& all, const PlotOptions& o) {
  if (all.empty()) throw UsageError("no rows to plot: the results files hold no data rows");
  std::vector<ResultRow> rows =
      filter_by(all, o.op.empty() ? std::vector<std::string>{} : std::vector<std::string>{o.op},
                "--op", "ops", [](const ResultRow& r) { return r.op; });
  rows = filter_by(rows, o.impls, "--impl", "impls", [](const ResultRow& r) { return r.impl; });
  rows = filter_by(rows, o.dtypes, "--dtype", "dtypes", [](const ResultRow& r) { return r.dtype; });
  rows = filter_by(
      rows, o.devices, "--device", "devices", [](const ResultRow& r) { return r.device; },
      [](const ResultRow& r) { return r.device_slug; });

  std::vector<ResultRow> out;
  std::map<std::string, int> statuses;
  size_t no_flops = 0;
  for (const ResultRow& r : rows) {
    if (r.status != "pass" || !timed(r)) {
      ++statuses[r.status + (r.status == "pass" ? " without timing" : "")];
      continue;
    }
    if (o.kind == PlotKind::roofline && !(r.intensity > 0 && r.tflops > 0)) {
      ++no_flops;
      continue;
    }
    out.push_back(r);
  }
  if (out.empty()) {
    std::string why;
    for (const auto& kv : statuses)
      why += (why.empty() ? "" : ", ") + std::to_string(kv.second) + " " + kv.first;
    if (no_flops)
      why += (why.empty() ? "" : ", ") + std::to_string(no_flops) +
             " without flops (try --kind bandwidth)";
    throw UsageError("no passing, timed rows to plot after the filters (" + why + ")");
  }
  return out;
}

std::string render_plot(const std::vector<ResultRow>& rows, const PlotOptions& o) {
  const std::vector<ResultRow> sel = select_plot_rows(rows, o);
  return o.kind == PlotKind::roofline ? render_roofline(sel, o) : render_bandwidth(sel, o);
}

}  // namespace kbench
