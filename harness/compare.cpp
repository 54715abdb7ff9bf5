// kbench compare: load two result sets, match their points, judge each against a threshold
// and the noise the rows themselves recorded, and format the report. compare.h states the
// verdict rule; the functions below follow it top to bottom.
#include "harness/compare.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "harness/errors.h"
#include "harness/output.h"

namespace kbench {

// ----- options -------------------------------------------------------------------------------

double CompareOptions::threshold_for(const std::string& op) const {
  const auto it = op_threshold_pct.find(op);
  return it == op_threshold_pct.end() ? threshold_pct : it->second;
}

double parse_threshold_pct(const std::string& text, const std::string& what) {
  std::string digits = text;
  if (!digits.empty() && digits.back() == '%') digits.pop_back();
  double v = 0;
  // from_chars, not stod: no locale, no leading blanks, and the whole text must be the number.
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() ||
      !std::isfinite(v) || v < 0) {
    throw UsageError("bad " + what + " '" + text + "' (want a percentage >= 0, like 5 or 5%)");
  }
  return v;
}

std::map<std::string, double> parse_op_thresholds(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const std::string& item : items) {
    size_t start = 0;
    while (true) {  // each item may itself be a comma list
      const size_t comma = item.find(',', start);
      const std::string piece = item.substr(start, comma - start);
      const size_t eq = piece.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw UsageError("bad --op-threshold '" + piece + "' (want OP=PCT, like rmsnorm_bwd=8%)");
      }
      const std::string op = piece.substr(0, eq);
      const double pct =
          parse_threshold_pct(piece.substr(eq + 1), "--op-threshold '" + piece + "'");
      if (!out.emplace(op, pct).second) {
        throw UsageError("--op-threshold gives op '" + op + "' twice");
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// ----- loading -------------------------------------------------------------------------------

ResultSet load_result_set(const std::string& path) {
  ResultSet set;
  set.name = path;
  set.rows = read_results_csv(path, &set.lines);  // keeps lines: duplicate keys name both
  return set;
}

// ----- matching and judging ------------------------------------------------------------------

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::faster: return "faster";
    case Verdict::slower: return "slower";
    case Verdict::same: return "same";
    case Verdict::added: return "new";
    case Verdict::missing: return "missing";
    case Verdict::failed: return "failed";
    case Verdict::skipped: return "skipped";
  }
  return "?";
}

int CompareReport::exit_code() const { return regressed() ? kExitFailed : kExitOk; }

namespace {

using Key = std::vector<std::string>;

Key point_key(const ResultRow& r, bool with_device) {
  Key k{r.op, r.impl, r.dtype, r.shape, r.l2};
  if (with_device) k.push_back(r.device_slug);
  return k;
}

std::string describe_key(const Key& k) {
  std::string s =
      k[0] + " " + k[1] + " " + k[2] + " " + k[3] + " l2=" + (k[4].empty() ? "-" : k[4]);
  if (k.size() > 5) s += " device=" + k[5];
  return s;
}

// Where row i came from: "line 7" for a file, "row 7" for rows in memory.
std::string where(const ResultSet& set, size_t i) {
  return set.lines.empty() ? "row " + std::to_string(i + 1)
                           : "line " + std::to_string(set.lines[i]);
}

// Key -> row index. A second row with the same key is an error: which of the two is the
// reference would otherwise depend on the file's order.
std::map<Key, size_t> index_rows(const ResultSet& set, bool with_device) {
  std::map<Key, size_t> index;
  for (size_t i = 0; i < set.rows.size(); ++i) {
    const Key key = point_key(set.rows[i], with_device);
    const auto [it, inserted] = index.emplace(key, i);
    if (!inserted) {
      throw UsageError(set.name + ": duplicate point " + describe_key(key) + " on " +
                       where(set, it->second) + " and " + where(set, i));
    }
  }
  return index;
}

template <typename Field>
std::vector<std::string> distinct(const ResultSet& set, Field field) {
  std::vector<std::string> out;
  for (const ResultRow& r : set.rows) {
    if (std::find(out.begin(), out.end(), r.*field) == out.end()) out.push_back(r.*field);
  }
  return out;
}

bool has_timing(const ResultRow& r) {
  // A failed row was still timed; a skipped or errored one was not.
  return (r.status == "pass" || r.status == "fail") && std::isfinite(r.median_us) &&
         r.median_us > 0;
}

// Standard error of the row's median in µs (see compare.h): from p10/p90 when recorded, since
// they ignore the rare outliers (a context switch, a clock dip) that inflate stddev; else from
// stddev; 0 when the row recorded neither, so the threshold alone decides.
double median_standard_error(const ResultRow& r) {
  if (r.samples <= 0) return 0;
  const double n = static_cast<double>(r.samples);
  if (std::isfinite(r.p10_us) && std::isfinite(r.p90_us) && r.p90_us >= r.p10_us) {
    const double sigma = (r.p90_us - r.p10_us) / 2.563;  // p90 - p10 = 2.563 sigma (normal)
    return 1.2533 * sigma / std::sqrt(n);                // median: sqrt(pi/2) x the mean's
  }
  if (std::isfinite(r.stddev_us) && r.stddev_us >= 0) return r.stddev_us / std::sqrt(n);
  return 0;
}

std::string fixed(double v, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Both rows are present and timed: faster, slower or same by threshold and noise margin.
void judge_timing(PointComparison& p, double noise_sigmas) {
  const ResultRow& b = *p.baseline;
  const ResultRow& c = *p.current;
  const double delta_us = c.median_us - b.median_us;
  p.change_pct = 100.0 * delta_us / b.median_us;
  const double sb = median_standard_error(b), sc = median_standard_error(c);
  p.noise_margin_us = noise_sigmas * std::sqrt(sb * sb + sc * sc);

  const bool beyond_noise = std::fabs(delta_us) > p.noise_margin_us;
  if (p.change_pct > p.threshold_pct && beyond_noise) {
    p.verdict = Verdict::slower;
    p.failure = true;
  } else if (p.change_pct < -p.threshold_pct && beyond_noise) {
    p.verdict = Verdict::faster;
  } else {
    p.verdict = Verdict::same;
    // Past the threshold but not past the noise: say so, or the reader wonders why.
    if (std::fabs(p.change_pct) > p.threshold_pct) {
      p.note = "within noise (" + fixed(delta_us, "%+.3g") + " us, margin " +
               fixed(p.noise_margin_us, "%.3g") + " us)";
    }
  }
  if (b.status == "fail")
    p.note += std::string(p.note.empty() ? "" : "; ") + "baseline failed its check";
}

// The verdict of one point; the order of the checks is the order of precedence.
void judge(PointComparison& p, const CompareOptions& options) {
  p.threshold_pct = options.threshold_for(p.op);
  if (p.current && (p.current->status == "fail" || p.current->status == "error")) {
    p.verdict = Verdict::failed;  // a wrong result fails the gate, new point or not
    p.failure = true;
    p.note = p.current->note.empty() ? "status " + p.current->status : p.current->note;
  } else if (p.current && p.current->status == "skip") {
    p.verdict = Verdict::skipped;
    p.note = p.current->note;
  } else if (!p.current) {
    p.verdict = Verdict::missing;
    p.failure = options.fail_on_missing;
    p.note = "only in baseline";
  } else if (!p.baseline) {
    p.verdict = Verdict::added;
    p.note = "only in current";
  } else if (!has_timing(*p.current)) {
    p.verdict = Verdict::skipped;
    p.note = "current row has no timing";
  } else if (!has_timing(*p.baseline)) {
    p.verdict = Verdict::added;  // nothing to compare with: like a point new in current
    p.note = "baseline has no timing (status " + p.baseline->status + ")";
  } else {
    judge_timing(p, options.noise_sigmas);
  }
}

PointComparison make_point(const ResultRow& key_row, bool with_device) {
  PointComparison p;
  p.op = key_row.op;
  p.impl = key_row.impl;
  p.dtype = key_row.dtype;
  p.shape = key_row.shape;
  p.l2 = key_row.l2;
  if (with_device) p.device_slug = key_row.device_slug;
  return p;
}

void count(CompareSummary& s, const PointComparison& p) {
  switch (p.verdict) {
    case Verdict::faster: ++s.faster; break;
    case Verdict::slower: ++s.slower; break;
    case Verdict::same: ++s.same; break;
    case Verdict::added: ++s.added; break;
    case Verdict::missing: ++s.missing; break;
    case Verdict::failed: ++s.failed; break;
    case Verdict::skipped: ++s.skipped; break;
  }
  s.failures += p.failure;
  s.in_both += p.baseline && p.current;
}

}  // namespace

CompareReport compare_results(const ResultSet& baseline, const ResultSet& current,
                              const CompareOptions& options) {
  CompareReport report;
  report.baseline_name = baseline.name;
  report.current_name = current.name;
  report.baseline_devices = distinct(baseline, &ResultRow::device);
  report.current_devices = distinct(current, &ResultRow::device);
  report.options = options;
  // One device per file: match across devices (an H100 baseline against an H200 run). A file
  // holding several devices cannot be keyed without the device, so then the slug joins the key.
  report.match_on_device_slug = distinct(baseline, &ResultRow::device_slug).size() > 1 ||
                                distinct(current, &ResultRow::device_slug).size() > 1;
  const bool with_device = report.match_on_device_slug;

  const auto base_index = index_rows(baseline, with_device);
  const auto cur_index = index_rows(current, with_device);

  for (const ResultRow& b : baseline.rows) {
    PointComparison p = make_point(b, with_device);
    p.baseline = b;
    const auto it = cur_index.find(point_key(b, with_device));
    if (it != cur_index.end()) p.current = current.rows[it->second];
    judge(p, options);
    report.points.push_back(std::move(p));
  }
  for (const ResultRow& c : current.rows) {
    if (base_index.count(point_key(c, with_device))) continue;
    PointComparison p = make_point(c, with_device);
    p.current = c;
    judge(p, options);
    report.points.push_back(std::move(p));
  }
  for (const PointComparison& p : report.points) count(report.summary, p);

  // A misspelt --op-threshold would silently leave the global threshold in force.
  for (const auto& entry : options.op_threshold_pct) {
    const std::string& op = entry.first;  // not a structured binding: clang 15 (hipcc) cannot capture those
    const bool used = std::any_of(report.points.begin(), report.points.end(),
                                  [&](const PointComparison& p) { return p.op == op; });
    if (!used) report.warnings.push_back("--op-threshold names op '" + op + "', in neither file");
  }
  return report;
}

CompareReport compare_results(const std::vector<ResultRow>& baseline,
                              const std::vector<ResultRow>& current,
                              const CompareOptions& options) {
  return compare_results(ResultSet{"baseline", baseline, {}}, ResultSet{"current", current, {}},
                         options);
}

// ----- formatting ----------------------------------------------------------------------------

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i > 0 ? sep : "") + items[i];
  return out;
}

std::string device_list(const std::vector<std::string>& devices) {
  std::vector<std::string> named;
  for (const auto& d : devices) named.push_back(d.empty() ? "unnamed device" : d);
  return named.empty() ? "no rows" : join(named, ", ");
}

std::string pct_text(double v) { return std::string(fixed(v, "%.4g")) + "%"; }

// "threshold 5% (rmsnorm_bwd: 8%), beyond 3 sigma of the medians' noise"
std::string rule_line(const CompareOptions& o) {
  std::string s = "threshold " + pct_text(o.threshold_pct);
  std::vector<std::string> overrides;
  for (const auto& [op, pct] : o.op_threshold_pct) overrides.push_back(op + ": " + pct_text(pct));
  if (!overrides.empty()) s += " (" + join(overrides, ", ") + ")";
  s += ", and beyond " + fixed(o.noise_sigmas, "%.3g") + " sigma of the medians' noise";
  if (o.fail_on_missing) s += "; missing points fail";
  return s;
}

std::string devices_line(const CompareReport& r) {
  return "comparing " + device_list(r.baseline_devices) + " (baseline) with " +
         device_list(r.current_devices) + " (current)";
}

std::string median_text(const std::optional<ResultRow>& row) {
  return row && has_timing(*row) ? fixed(row->median_us, "%.2f") : "-";
}

std::string change_text(const PointComparison& p) {
  return std::isnan(p.change_pct) ? "-" : fixed(p.change_pct, "%+.1f") + "%";
}

std::string margin_text(const PointComparison& p) {
  return std::isnan(p.noise_margin_us) ? "-" : fixed(p.noise_margin_us, "%.2f");
}

// Each device's own ceiling, shown when the two rows come from different devices: a change in
// µs across GPUs says little, the share of each GPU's speed of light says more.
bool shows_ceiling(const PointComparison& p) {
  return p.baseline && p.current && p.baseline->device != p.current->device &&
         std::isfinite(p.baseline->ceiling_pct) && std::isfinite(p.current->ceiling_pct);
}

std::string ceiling_text(const PointComparison& p) {
  if (!shows_ceiling(p)) return "-";
  return fixed(p.baseline->ceiling_pct, "%.1f") + "% -> " +
         fixed(p.current->ceiling_pct, "%.1f") + "%";
}

bool any_ceiling(const CompareReport& r) {
  return std::any_of(r.points.begin(), r.points.end(), shows_ceiling);
}

std::string summary_counts(const CompareSummary& s) {
  return std::to_string(s.total()) + " points: " + std::to_string(s.faster) + " faster, " +
         std::to_string(s.slower) + " slower, " + std::to_string(s.same) + " same, " +
         std::to_string(s.added) + " new, " + std::to_string(s.missing) + " missing, " +
         std::to_string(s.failed) + " failed, " + std::to_string(s.skipped) + " skipped";
}

std::string gate_text(const CompareReport& r) {
  if (!r.regressed()) return "PASS";
  if (r.summary.failures == 0) return "FAIL (no point in both files: nothing compared)";
  return "FAIL (" + std::to_string(r.summary.failures) + " point" +
         (r.summary.failures == 1 ? "" : "s") + " slower or failed" +
         (r.options.fail_on_missing ? " or missing" : "") + ")";
}

// The columns of one point, shared by the terminal and Markdown tables.
std::vector<std::string> point_cells(const CompareReport& r, const PointComparison& p,
                                     bool with_ceiling) {
  std::vector<std::string> cells = {p.op, p.impl, p.dtype, p.shape, p.l2.empty() ? "-" : p.l2};
  if (r.match_on_device_slug) cells.push_back(p.device_slug.empty() ? "-" : p.device_slug);
  cells.insert(cells.end(), {median_text(p.baseline), median_text(p.current), change_text(p),
                             margin_text(p), verdict_name(p.verdict)});
  if (with_ceiling) cells.push_back(ceiling_text(p));
  cells.push_back(p.note);
  return cells;
}

std::vector<std::string> header_cells(const CompareReport& r, bool with_ceiling, bool markdown) {
  const std::string us = markdown ? " µs" : "_us";
  std::vector<std::string> cells = {"op", "impl", "dtype", "shape", "l2"};
  if (r.match_on_device_slug) cells.push_back("device");
  cells.insert(cells.end(), {"baseline" + us, "current" + us, "change", "noise" + us, "verdict"});
  if (with_ceiling) cells.push_back("%ceiling (b -> c)");
  cells.push_back("note");
  return cells;
}

// Columns 5.. (after op impl dtype shape l2 [device]) up to the verdict are numbers.
bool right_aligned(const CompareReport& r, size_t column) {
  const size_t first = r.match_on_device_slug ? 6 : 5;
  return column >= first && column < first + 4;
}

}  // namespace

std::string format_table(const CompareReport& r) {
  const bool with_ceiling = any_ceiling(r);
  std::vector<std::vector<std::string>> lines = {header_cells(r, with_ceiling, false)};
  for (const PointComparison& p : r.points) lines.push_back(point_cells(r, p, with_ceiling));

  std::vector<size_t> width(lines[0].size(), 0);
  for (const auto& cells : lines)
    for (size_t i = 0; i < cells.size(); ++i) width[i] = std::max(width[i], cells[i].size());

  std::string out = "baseline: " + r.baseline_name + " (" + device_list(r.baseline_devices) + ")\n";
  out += "current:  " + r.current_name + " (" + device_list(r.current_devices) + ")\n";
  if (r.devices_differ()) out += devices_line(r) + "\n";
  if (r.match_on_device_slug)
    out += "a file holds several devices: points are matched per device\n";
  out += "slower/faster: " + rule_line(r.options) + "\n\n";
  for (const auto& cells : lines) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      const size_t pad = width[i] - cells[i].size();
      if (i > 0) line += "  ";
      if (right_aligned(r, i)) line.append(pad, ' ');
      line += cells[i];
      if (!right_aligned(r, i)) line.append(pad, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);  // no trailing blanks (the note is often empty)
    out += line + "\n";
  }
  for (const std::string& w : r.warnings) out += "warning: " + w + "\n";
  out += "\n" + summary_counts(r.summary) + " -> " + gate_text(r) + "\n";
  return out;
}

namespace {

// A cell of a GitHub table: a pipe would end the cell, a newline the row, and < could open an
// HTML tag (a lone > cannot, so "50% -> 47%" stays readable).
std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '|': out += "\\|"; break;
      case '\n':
      case '\r': out += ' '; break;
      case '<': out += "&lt;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string md_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) {
    line += ' ';  // appended piece by piece: GCC 12 warns (-Wrestrict) on " " + temporary
    line += md_escape(c);
    line += " |";
  }
  return line + "\n";
}

std::string md_table(const CompareReport& r, const std::vector<const PointComparison*>& points,
                     bool with_ceiling) {
  const auto header = header_cells(r, with_ceiling, true);
  std::string out = md_row(header) + "|";
  for (size_t i = 0; i < header.size(); ++i) out += right_aligned(r, i) ? "---:|" : "---|";
  out += "\n";
  for (const PointComparison* p : points) {
    auto cells = point_cells(r, *p, with_ceiling);
    const size_t verdict_col = r.match_on_device_slug ? 10 : 9;
    if (p->failure) cells[verdict_col] = "**" + cells[verdict_col] + "**";  // what to look at
    out += md_row(cells);
  }
  return out;
}

}  // namespace

std::string format_markdown(const CompareReport& r) {
  const bool with_ceiling = any_ceiling(r);
  std::vector<const PointComparison*> changed, unchanged;
  for (const PointComparison& p : r.points)
    (p.verdict == Verdict::same ? unchanged : changed).push_back(&p);

  std::string out = "### kbench compare: " + gate_text(r) + "\n\n";
  out += "Baseline `" + r.baseline_name + "` (" + device_list(r.baseline_devices) + "), current `" +
         r.current_name + "` (" + device_list(r.current_devices) + ").\n";
  if (r.devices_differ()) out += "**" + devices_line(r) + "**.\n";
  if (r.match_on_device_slug) out += "Points are matched per device.\n";
  out += "Slower/faster: " + rule_line(r.options) + ".\n\n";

  if (changed.empty()) {
    out += "No point changed beyond its threshold and noise.\n\n";
  } else {
    out += md_table(r, changed, with_ceiling) + "\n";
  }
  if (!unchanged.empty()) {
    // Unchanged points folded away: the pull request shows what moved.
    out += "<details><summary>" + std::to_string(unchanged.size()) + " unchanged point" +
           (unchanged.size() == 1 ? "" : "s") + "</summary>\n\n" +
           md_table(r, unchanged, with_ceiling) + "\n</details>\n\n";
  }
  for (const std::string& w : r.warnings) out += "Warning: " + md_escape(w) + "\n\n";
  out += "**" + summary_counts(r.summary) + "**\n";
  return out;
}

namespace {

// JSON number: locale-free shortest-ish text (6 significant digits, as the CSV); NaN and
// infinities, which JSON cannot spell, are null.
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return std::string(buf, res.ptr);
}

std::string json_string(const std::string& s) { return "\"" + json_escape(s) + "\""; }

std::string json_bool(bool b) { return b ? "true" : "false"; }

std::string json_string_array(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back(json_string(s));
  return "[" + join(quoted, ", ") + "]";
}

// A row's number, or null for a point that side does not have.
std::string side_number(const std::optional<ResultRow>& row, double ResultRow::*field) {
  return row ? json_number((*row).*field) : "null";
}

std::string side_status(const std::optional<ResultRow>& row) {
  return row ? json_string(row->status) : "null";
}

std::string json_point(const CompareReport& r, const PointComparison& p) {
  std::string o = "{\"op\": " + json_string(p.op) + ", \"impl\": " + json_string(p.impl) +
                  ", \"dtype\": " + json_string(p.dtype) + ", \"shape\": " + json_string(p.shape) +
                  ", \"l2\": " + json_string(p.l2);
  if (r.match_on_device_slug) o += ", \"device_slug\": " + json_string(p.device_slug);
  o += ", \"baseline_us\": " +
       (p.baseline && has_timing(*p.baseline) ? json_number(p.baseline->median_us) : "null");
  o += ", \"current_us\": " +
       (p.current && has_timing(*p.current) ? json_number(p.current->median_us) : "null");
  o += ", \"change_pct\": " + json_number(p.change_pct);
  o += ", \"noise_margin_us\": " + json_number(p.noise_margin_us);
  o += ", \"threshold_pct\": " + json_number(p.threshold_pct);
  o += ", \"baseline_ceiling_pct\": " + side_number(p.baseline, &ResultRow::ceiling_pct);
  o += ", \"current_ceiling_pct\": " + side_number(p.current, &ResultRow::ceiling_pct);
  o += ", \"baseline_status\": " + side_status(p.baseline);
  o += ", \"current_status\": " + side_status(p.current);
  o += ", \"verdict\": " + json_string(verdict_name(p.verdict));
  o += ", \"failure\": " + json_bool(p.failure);
  o += ", \"note\": " + json_string(p.note) + "}";
  return o;
}

}  // namespace

std::string format_json(const CompareReport& r) {
  const CompareOptions& o = r.options;
  std::vector<std::string> overrides;
  for (const auto& [op, pct] : o.op_threshold_pct)
    overrides.push_back(json_string(op) + ": " + json_number(pct));
  std::vector<std::string> points;
  for (const PointComparison& p : r.points) points.push_back(json_point(r, p));
  const CompareSummary& s = r.summary;

  std::string out = "{\n";
  out += "  \"baseline\": {\"name\": " + json_string(r.baseline_name) +
         ", \"devices\": " + json_string_array(r.baseline_devices) + "},\n";
  out += "  \"current\": {\"name\": " + json_string(r.current_name) +
         ", \"devices\": " + json_string_array(r.current_devices) + "},\n";
  out += "  \"options\": {\"threshold_pct\": " + json_number(o.threshold_pct) +
         ", \"op_threshold_pct\": {" + join(overrides, ", ") +
         "}, \"noise_sigmas\": " + json_number(o.noise_sigmas) +
         ", \"fail_on_missing\": " + json_bool(o.fail_on_missing) + "},\n";
  out += "  \"devices_differ\": " + json_bool(r.devices_differ()) +
         ", \"match_on_device_slug\": " + json_bool(r.match_on_device_slug) + ",\n";
  out += "  \"points\": [" + (points.empty() ? "" : "\n    " + join(points, ",\n    ") + "\n  ") +
         "],\n";
  out += "  \"summary\": {\"points\": " + std::to_string(s.total()) +
         ", \"faster\": " + std::to_string(s.faster) + ", \"slower\": " + std::to_string(s.slower) +
         ", \"same\": " + std::to_string(s.same) + ", \"new\": " + std::to_string(s.added) +
         ", \"missing\": " + std::to_string(s.missing) +
         ", \"failed\": " + std::to_string(s.failed) +
         ", \"skipped\": " + std::to_string(s.skipped) +
         ", \"failures\": " + std::to_string(s.failures) +
         ", \"in_both\": " + std::to_string(s.in_both) +
         ", \"regressed\": " + json_bool(r.regressed()) +
         ", \"exit_code\": " + std::to_string(r.exit_code()) + "},\n";
  out += "  \"warnings\": " + json_string_array(r.warnings) + "\n";
  out += "}\n";
  return out;
}

}  // namespace kbench
