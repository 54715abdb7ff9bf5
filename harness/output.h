// Reporters: one interface, plug-ins for the console table, CSV and JSON, all fed the same
// ResultRow records as they are produced (nvbench's printer_base, google/benchmark's
// BenchmarkReporter). CSV and JSON flush after every row so a crash loses nothing measured.
#pragma once
#include <fstream>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "harness/result.h"

namespace kbench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void add(const ResultRow& row) = 0;
  virtual void finish() {}
};

// Aligned table on a stream: op impl dtype shape l2 median_us GB/s %ceil %peak max_err status.
// Rows print as they arrive (the header once, first).
class ConsoleTable : public Reporter {
 public:
  explicit ConsoleTable(std::ostream& os, bool with_timing = true);
  void add(const ResultRow& row) override;

 private:
  std::ostream& os_;
  bool with_timing_;
  bool header_done_ = false;
};

// RFC 4180 CSV with csv_columns() as header. Throws UsageError when the file cannot be opened.
class CsvWriter : public Reporter {
 public:
  explicit CsvWriter(const std::string& path);
  void add(const ResultRow& row) override;

 private:
  std::ofstream out_;
};

// A JSON array of row objects (numbers as numbers, NaN as null). The file is valid JSON
// after every add: the closing bracket is rewritten each time. A path that cannot be
// rewritten (/dev/stdout, a pipe) is streamed instead and closed by finish().
class JsonWriter : public Reporter {
 public:
  explicit JsonWriter(const std::string& path);
  void add(const ResultRow& row) override;
  void finish() override;

 private:
  std::string path_;
  std::vector<std::string> objects_;
  bool stream_ = false;  // path is a device or pipe
  bool closed_ = false;  // stream mode: the closing bracket is written
};

class MultiReporter : public Reporter {
 public:
  void attach(std::unique_ptr<Reporter> r) { parts_.push_back(std::move(r)); }
  void add(const ResultRow& row) override;
  void finish() override;

 private:
  std::vector<std::unique_ptr<Reporter>> parts_;
};

// Writes `text` to `path`, replacing it (or appending: a stream target such as a redirected
// stdout is written at its end): UsageError when it cannot be opened, RuntimeFailure when the
// write fails (a full disk). For reports, charts and streamed JSON.
void write_text_file(const std::string& path, const std::string& text, bool append = false);

// CSV field quoting and line splitting, shared with the CSV reader.
std::string csv_escape(const std::string& field);
std::vector<std::string> csv_split_line(const std::string& line);  // throws UsageError on bad quoting
// Escapes s for use inside a JSON string literal; adds no surrounding quotes.
std::string json_escape(const std::string& s);

// Reads a kbench CSV (header + rows). Throws UsageError naming the file and line for a missing
// file, a header without kbench's identity columns, a bad field count or a bad number.
// `row_lines`, when given, receives the line each row starts on (for error messages).
// Also rejects a status other than pass, fail, skip or error.
std::vector<ResultRow> read_results_csv(const std::string& path,
                                        std::vector<size_t>* row_lines = nullptr);

}  // namespace kbench
