// kbench plot: results rows -> one standalone SVG 1.1 chart (no scripts, no external fonts),
// read from CSV column names only, so rows of any provider (kbench impls, torch_eager, ...)
// draw alike and no kernel name is listed anywhere.
//   roofline:  log-log, x = arithmetic intensity (FLOP/byte), y = achieved GFLOP/s; per device
//              a bandwidth diagonal + compute roof, measured (solid) and datasheet (dashed).
//   bandwidth: one op, x = bytes moved or row length N (log), y = achieved GB/s (linear), one
//              polyline per (impl, dtype, device), horizontal ceiling (solid) and datasheet
//              peak (dashed).
// Everything here is pure (rows + options in, SVG text out) except load_plot_rows.
#pragma once
#include <string>
#include <vector>

#include "harness/ceilings.h"
#include "harness/result.h"

namespace kbench {

enum class PlotKind { roofline, bandwidth };

struct PlotOptions {
  PlotKind kind = PlotKind::roofline;
  std::string op;                    // empty: every op in the data (bandwidth needs exactly one)
  std::vector<std::string> impls;    // empty: all
  std::vector<std::string> dtypes;   // empty: all
  std::vector<std::string> devices;  // device names or slugs, case-insensitive; empty: all
  std::vector<Ceiling> ceilings;     // from --ceilings; override the rows' ceiling_gbps
  bool x_is_n = false;               // bandwidth: x = row length N (the `n` column), not bytes
};

PlotKind parse_plot_kind(const std::string& s);  // "roofline" | "bandwidth", else UsageError

// Columns a kind needs; load_plot_rows names the first one a file lacks.
std::vector<std::string> plot_required_columns(PlotKind kind);

// Reads every file (read_results_csv) after checking its header has plot_required_columns.
// Throws UsageError naming the file and the missing column.
std::vector<ResultRow> load_plot_rows(const std::vector<std::string>& paths, PlotKind kind);

// The rows that draw: filters in the order op, impl, dtype, device, then status pass with a
// timing (and, for roofline, positive intensity and tflops). Throws UsageError naming the
// filter that left nothing and the values that exist.
std::vector<ResultRow> select_plot_rows(const std::vector<ResultRow>& rows, const PlotOptions& o);

// The whole chart. Throws UsageError for an empty selection, or bandwidth with several ops.
std::string render_plot(const std::vector<ResultRow>& rows, const PlotOptions& o);

// --- building blocks, exposed for tests ---

std::string xml_escape(const std::string& s);

// Maps a data value to a pixel coordinate; log scales take log10 of both.
struct Scale {
  double d0 = 0, d1 = 1;  // data domain
  double p0 = 0, p1 = 1;  // pixel range (p1 < p0 for y)
  bool log = false;
  double operator()(double v) const;
};

struct Tick {
  double value = 0;
  bool major = false;  // major ticks carry a label and a grid line
};

// Log range that covers [lo, hi] (lo, hi > 0), snapped out to whole decades; lo == hi is
// padded first so one point still gets axes.
void log_range(double lo, double hi, double& out_lo, double& out_hi);
// Decades are major; 2 and 5 of each decade are minor (labelled too when the range holds
// fewer than two decade ticks).
std::vector<Tick> log_ticks(double lo, double hi);
// 0 .. a round number above hi, and ticks at a 1/2/5 x 10^k step (about six of them).
void linear_range(double hi, double& out_hi, double& step);

// ≥10 distinct colours (Tableau 10 + 2), cycled.
const std::string& palette_color(size_t i);

}  // namespace kbench
