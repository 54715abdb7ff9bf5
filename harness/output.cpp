// Reporters (console table, CSV, JSON) and the CSV reader that compare and plot use.
#include "harness/output.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "harness/errors.h"

namespace kbench {

// ----- console table -----------------------------------------------------------------------

namespace {

enum class Align { left, right };

struct Cell {
  std::string text;
  int width;
  Align align;
};

// Cells separated by two spaces. A text wider than its cell pushes the rest right rather
// than being cut: a long op name stays readable.
std::string format_line(const std::vector<Cell>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    const size_t pad = c.text.size() < static_cast<size_t>(c.width) ? c.width - c.text.size() : 0;
    if (i > 0) line += "  ";
    if (c.align == Align::right) line.append(pad, ' ');
    line += c.text;
    // No trailing blanks after the last cell.
    if (c.align == Align::left && i + 1 < cells.size()) line.append(pad, ' ');
  }
  return line;
}

std::string num(double v, const char* fmt) {
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

bool measured(const ResultRow& r) { return r.status == "pass" || r.status == "fail"; }

std::vector<Cell> table_cells(const std::string& op, const std::string& impl,
                              const std::string& dtype, const std::string& shape) {
  return {{op, 23, Align::left},  // fits fused_linear_rowsum_bwd
          {impl, 18, Align::left},
          {dtype, 5, Align::left},
          {shape, 15, Align::left}};
}

}  // namespace

ConsoleTable::ConsoleTable(std::ostream& os, bool with_timing)
    : os_(os), with_timing_(with_timing) {}

void ConsoleTable::add(const ResultRow& row) {
  if (!header_done_) {
    std::vector<Cell> h = table_cells("op", "impl", "dtype", "shape");
    if (with_timing_) {
      h.insert(h.end(), {{"l2", 4, Align::left},
                         {"median_us", 10, Align::right},
                         {"GB/s", 8, Align::right},
                         {"%ceil", 6, Align::right},
                         {"%peak", 6, Align::right}});
    }
    h.insert(h.end(), {{"max_err", 9, Align::right}, {"status", 6, Align::left}});
    os_ << format_line(h) << '\n';
    header_done_ = true;
  }

  // A skipped or failed-to-run point has no numbers worth showing, whatever its fields hold.
  const bool has_numbers = measured(row);
  auto value = [&](double v, const char* fmt) { return has_numbers ? num(v, fmt) : "-"; };

  std::vector<Cell> cells = table_cells(row.op, row.impl, row.dtype, row.shape);
  if (with_timing_) {
    cells.insert(cells.end(), {{row.l2.empty() ? "-" : row.l2, 4, Align::left},
                               {value(row.median_us, "%.2f"), 10, Align::right},
                               {value(row.gbps, "%.1f"), 8, Align::right},
                               {value(row.ceiling_pct, "%.1f"), 6, Align::right},
                               {value(row.peak_pct, "%.1f"), 6, Align::right}});
  }
  cells.push_back({value(row.max_abs_err, "%.2e"), 9, Align::right});
  // Anything but a pass says why (skip reason, error text, failure description).
  std::string status = row.status;
  if (row.status != "pass" && !row.note.empty()) status += "  " + row.note;
  cells.push_back({status, 6, Align::left});
  os_ << format_line(cells) << '\n';
  os_.flush();  // a long sweep shows progress row by row
}

// ----- CSV -----------------------------------------------------------------------------------

namespace {

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_escape(fields[i]);
  }
  return line;
}

}  // namespace

CsvWriter::CsvWriter(const std::string& path) : out_(path, std::ios::out | std::ios::trunc) {
  if (!out_) throw UsageError("cannot open '" + path + "' for writing");
  out_ << csv_line(csv_columns()) << '\n';
  out_.flush();
}

void CsvWriter::add(const ResultRow& row) {
  out_ << csv_line(row_fields(row)) << '\n';
  out_.flush();
  if (!out_) throw RuntimeFailure("writing a CSV row failed");
}

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';  // RFC 4180: a quote inside a quoted field is doubled
    out += c;
  }
  out += '"';
  return out;
}

std::vector<std::string> csv_split_line(const std::string& line) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (true) {
    std::string field;
    if (i < line.size() && line[i] == '"') {
      // Quoted field: runs to the next lone quote; "" is a literal quote.
      ++i;
      while (true) {
        if (i >= line.size()) throw UsageError("unterminated quoted field");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      if (i < line.size() && line[i] != ',') {
        throw UsageError("unexpected text after a closing quote at column " +
                         std::to_string(i + 1));
      }
    } else {
      while (i < line.size() && line[i] != ',') {
        if (line[i] == '"') {
          throw UsageError("stray quote in an unquoted field at column " +
                           std::to_string(i + 1));
        }
        field += line[i++];
      }
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) break;
    ++i;  // the comma; a trailing comma leaves one more, empty, field
    if (i == line.size()) {
      fields.emplace_back();
      break;
    }
  }
  return fields;
}

// ----- JSON ----------------------------------------------------------------------------------

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;  // UTF-8 passes through unchanged
        }
    }
  }
  return out;
}

namespace {

// One row as a JSON object on one line. Numeric columns are JSON numbers; what JSON cannot
// spell (NaN, written as an empty field, and infinities) is null.
std::string json_object(const ResultRow& row) {
  const auto& names = csv_columns();
  const auto fields = row_fields(row);
  std::string obj = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) obj += ", ";
    obj += "\"" + json_escape(names[i]) + "\": ";
    const std::string& f = fields[i];
    if (!is_numeric_column(names[i])) {
      obj += "\"" + json_escape(f) + "\"";
    } else if (f.empty() || f.find_first_of("in") != std::string::npos) {
      obj += "null";  // "", "inf", "-inf", "nan"
    } else {
      obj += f;
    }
  }
  return obj + "}";
}

// Writes to a temporary file and renames it over the target, so a reader (or a crash) never
// sees a half-written file.
void write_json_file(const std::string& path, const std::vector<std::string>& objects) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::out | std::ios::trunc);
    if (!out) throw UsageError("cannot open '" + tmp + "' for writing");
    out << "[";
    for (size_t i = 0; i < objects.size(); ++i) out << (i > 0 ? ",\n  " : "\n  ") << objects[i];
    out << (objects.empty() ? "]\n" : "\n]\n");
    out.close();
    if (!out) throw RuntimeFailure("writing '" + tmp + "' failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw RuntimeFailure("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

// /dev/stdout, a terminal or a pipe: no temporary file beside it, and what was written cannot
// be taken back, so such a target gets the array streamed once instead of rewritten.
bool is_stream_target(const std::string& path) {
  if (path.rfind("/dev/", 0) == 0) return true;
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  return !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
}

}  // namespace

JsonWriter::JsonWriter(const std::string& path) : path_(path), stream_(is_stream_target(path)) {
  if (stream_) {
    write_text_file(path_, "[", true);
  } else {
    write_json_file(path_, objects_);  // an empty array: valid from the start
  }
}

void JsonWriter::add(const ResultRow& row) {
  objects_.push_back(json_object(row));
  if (stream_) {
    write_text_file(path_, (objects_.size() > 1 ? ",\n  " : "\n  ") + objects_.back(), true);
  } else {
    write_json_file(path_, objects_);
  }
}

void JsonWriter::finish() {
  if (!stream_ || closed_) return;  // a regular file is complete after every add
  write_text_file(path_, objects_.empty() ? "]\n" : "\n]\n", true);
  closed_ = true;
}

// ----- fan-out -------------------------------------------------------------------------------

void MultiReporter::add(const ResultRow& row) {
  for (auto& p : parts_) p->add(row);
}

void MultiReporter::finish() {
  for (auto& p : parts_) p->finish();
}

// ----- reading results -----------------------------------------------------------------------

namespace {

bool is_blank(const std::string& s) {
  return s.find_first_not_of(" \t") == std::string::npos;
}

size_t count_quotes(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '"';
  return n;
}

// Reads one CSV record: a physical line, joined with the following ones while a quoted field
// is still open (RFC 4180 allows newlines inside quotes). `line_no` counts physical lines;
// `start` gets the line the record began on. Returns false at end of file.
bool read_record(std::istream& in, std::string& record, size_t& line_no, size_t& start) {
  std::string line;
  if (!std::getline(in, line)) return false;
  auto strip_cr = [](std::string& s) {
    if (!s.empty() && s.back() == '\r') s.pop_back();
  };
  strip_cr(line);
  record = line;
  start = ++line_no;
  // An odd count of quotes means a quoted field is still open.
  while (count_quotes(record) % 2 == 1 && std::getline(in, line)) {
    strip_cr(line);
    record += "\n" + line;
    ++line_no;
  }
  return true;
}

constexpr const char* kRequiredColumns[] = {"op", "impl", "dtype", "shape", "l2", "median_us",
                                            "status"};

bool known_status(const std::string& s) {
  return s == "pass" || s == "fail" || s == "skip" || s == "error";
}

}  // namespace

void write_text_file(const std::string& path, const std::string& text, bool append) {
  std::ofstream out(path, std::ios::out | (append ? std::ios::app : std::ios::trunc));
  if (!out) throw UsageError("cannot open '" + path + "' for writing");
  out << text;
  out.close();
  if (!out) throw RuntimeFailure("writing '" + path + "' failed");
}

std::vector<ResultRow> read_results_csv(const std::string& path, std::vector<size_t>* row_lines) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UsageError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw UsageError(path + ": is a directory");
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open file");

  std::string record;
  size_t line_no = 0, start = 0;
  auto at = [&](size_t line) { return path + ":" + std::to_string(line) + ": "; };

  // The header is the first non-blank record.
  std::vector<std::string> header;
  while (header.empty() && read_record(in, record, line_no, start)) {
    if (is_blank(record)) continue;
    if (record.rfind("\xEF\xBB\xBF", 0) == 0) record.erase(0, 3);  // spreadsheet UTF-8 BOM
    try {
      header = csv_split_line(record);
    } catch (const UsageError& e) {
      throw UsageError(at(start) + e.what());
    }
  }
  if (header.empty()) throw UsageError(path + ": empty file, not a kbench results CSV");
  for (const char* col : kRequiredColumns) {
    bool found = false;
    for (const auto& h : header) found = found || h == col;
    if (!found) {
      throw UsageError(path + ": not a kbench results CSV (missing column '" + col + "')");
    }
  }

  std::vector<ResultRow> rows;
  while (read_record(in, record, line_no, start)) {
    if (is_blank(record)) continue;
    try {
      ResultRow row = row_from_fields(header, csv_split_line(record));
      if (!known_status(row.status))
        throw UsageError("bad status '" + row.status + "' (valid: pass, fail, skip, error)");
      rows.push_back(std::move(row));
      if (row_lines) row_lines->push_back(start);
    } catch (const UsageError& e) {
      throw UsageError(at(start) + e.what());
    }
  }
  return rows;
}

}  // namespace kbench
