// Result rows and reporters: CSV field formatting and quoting, the CSV round trip through
// CsvWriter and read_results_csv, JSON validity after every row, the console table, and the
// reader's error messages (which must name file and line).
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/errors.h"
#include "harness/output.h"
#include "harness/result.h"

namespace kbench {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A fresh path in the temp directory, removed (with its .tmp sibling) when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& ext) {
    // A per-process random tag keeps parallel test runs (ctest -j) apart.
    static const unsigned tag = std::random_device{}();
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("kbench_test_" + std::to_string(tag) + "_" + std::to_string(counter++) + ext))
                .string();
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    std::filesystem::remove(path_ + ".tmp", ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

ResultRow sample_row() {
  ResultRow r;
  r.kbench_version = "0.1.0";
  r.timestamp = "2024-05-01T12:00:00Z";
  r.device = "NVIDIA H100 80GB HBM3";
  r.device_slug = "h100-sxm";
  r.arch = "sm_90";
  r.sm_count = 132;
  r.driver = "550.54";
  r.runtime = "12.4";
  r.op = "rmsnorm";
  r.impl = "v3_vec16_warp";
  r.dtype = "bf16";
  r.shape = "4096x8192";
  r.m = 4096;
  r.n = 8192;
  r.k = 0;
  r.l2 = "cold";
  r.samples = 200;
  r.median_us = 12.5;
  r.mean_us = 12.625;
  r.min_us = 12.25;
  r.p10_us = kNan;  // not measured
  r.p90_us = 13;
  r.stddev_us = 0.125;
  r.noise_pct = 0.990099;
  r.sm_clock_mhz = 1980;
  r.bytes = 134234112;
  r.flops = 100663296;
  r.gbps = 10738.7;
  r.tflops = 8.05306;
  r.intensity = 0.75;
  r.peak_gbps = 3350;
  r.peak_pct = 320.558;
  r.ceiling_gbps = 3000;
  r.ceiling_pct = 357.957;
  r.max_abs_err = 0.0078125;
  r.max_rel_err = 0.00390625;
  r.rel_l2_err = 1.5e-07;
  r.atol = 1e-05;
  r.rtol = 0.0078125;
  r.status = "pass";
  r.note = "has \"quotes\", commas, and\na newline";
  return r;
}

// ----- a small JSON validator (RFC 8259 grammar, no semantics) ------------------------------

struct JsonChecker {
  const std::string& s;
  size_t i = 0;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool lit(const char* word) {
    const std::string w = word;
    if (s.compare(i, w.size(), w) != 0) return false;
    i += w.size();
    return true;
  }
  bool string() {
    if (i >= s.size() || s[i] != '"') return false;
    for (++i; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i;
        if (i >= s.size()) return false;
        if (s[i] == 'u') {
          for (int k = 0; k < 4; ++k) {
            if (++i >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
          }
        } else if (std::string("\"\\/bfnrt").find(s[i]) == std::string::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool digits() {
    const size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i > start;
  }
  bool number() {
    if (i < s.size() && s[i] == '-') ++i;
    if (i < s.size() && s[i] == '0') {
      ++i;
    } else if (!digits()) {
      return false;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      if (!digits()) return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (!digits()) return false;
    }
    return true;
  }
  template <typename Item>
  bool sequence(char open, char close, Item item) {
    if (s[i] != open) return false;
    ++i;
    ws();
    if (i < s.size() && s[i] == close) {
      ++i;
      return true;
    }
    while (true) {
      ws();
      if (!item()) return false;
      ws();
      if (i >= s.size()) return false;
      if (s[i] == close) {
        ++i;
        return true;
      }
      if (s[i++] != ',') return false;
    }
  }
  bool value() {
    ws();
    if (i >= s.size()) return false;
    switch (s[i]) {
      case '{':
        return sequence('{', '}', [&] {
          if (!string()) return false;
          ws();
          if (i >= s.size() || s[i++] != ':') return false;
          return value();
        });
      case '[': return sequence('[', ']', [&] { return value(); });
      case '"': return string();
      case 't': return lit("true");
      case 'f': return lit("false");
      case 'n': return lit("null");
      default: return number();
    }
  }
  bool document() {
    if (!value()) return false;
    ws();
    return i == s.size();
  }
};

bool valid_json(const std::string& s) { return JsonChecker{s}.document(); }

TEST(Output, JsonCheckerSelfTest) {
  EXPECT_TRUE(valid_json("[]"));
  EXPECT_TRUE(valid_json("[{\"a\": 1.5e-07, \"b\": null, \"c\": \"x\\\"y\"}]\n"));
  EXPECT_FALSE(valid_json("[{\"a\": 1,}]"));
  EXPECT_FALSE(valid_json("[{\"a\": nan}]"));
  EXPECT_FALSE(valid_json("[{\"a\": \"x\ny\"}]"));
  EXPECT_FALSE(valid_json("[{\"a\": 1}"));
  EXPECT_FALSE(valid_json("[1] 2"));
}

// ----- fields ----------------------------------------------------------------------------

TEST(Output, ColumnsInSchemaOrder) {
  const std::vector<std::string> expected = {
      "kbench_version", "timestamp", "device", "device_slug", "arch", "sm_count", "driver",
      "runtime", "op", "impl", "dtype", "shape", "m", "n", "k", "l2", "samples", "median_us",
      "mean_us", "min_us", "p10_us", "p90_us", "stddev_us", "noise_pct", "sm_clock_mhz",
      "bytes", "flops", "gbps", "tflops", "intensity", "peak_gbps", "peak_pct", "ceiling_gbps",
      "ceiling_pct", "max_abs_err", "max_rel_err", "rel_l2_err", "atol", "rtol", "status",
      "note"};
  EXPECT_EQ(csv_columns(), expected);
  EXPECT_TRUE(is_numeric_column("median_us"));
  EXPECT_TRUE(is_numeric_column("sm_count"));
  EXPECT_FALSE(is_numeric_column("driver"));
  EXPECT_FALSE(is_numeric_column("no_such_column"));
}

std::string field(const ResultRow& r, const std::string& column) {
  const auto& cols = csv_columns();
  const auto fields = row_fields(r);
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i] == column) return fields[i];
  }
  ADD_FAILURE() << "no column " << column;
  return "";
}

TEST(Output, RowFieldFormatting) {
  ResultRow r = sample_row();
  r.median_us = 12.3456789;
  r.bytes = 123456789012.0;
  r.flops = 2.5;
  EXPECT_EQ(row_fields(r).size(), csv_columns().size());
  EXPECT_EQ(field(r, "median_us"), "12.3457");
  EXPECT_EQ(field(r, "p10_us"), "");  // NaN
  EXPECT_EQ(field(r, "bytes"), "123456789012");
  EXPECT_EQ(field(r, "flops"), "2.5");
  EXPECT_EQ(field(r, "atol"), "1e-05");
  EXPECT_EQ(field(r, "sm_count"), "132");
  EXPECT_EQ(field(r, "m"), "4096");
  EXPECT_EQ(field(r, "op"), "rmsnorm");
}

TEST(Output, RowFromFieldsIsTheInverse) {
  const ResultRow r = sample_row();
  const ResultRow back = row_from_fields(csv_columns(), row_fields(r));
  EXPECT_EQ(row_fields(back), row_fields(r));
  EXPECT_EQ(back.sm_count, 132);
  EXPECT_EQ(back.n, 8192);
  EXPECT_EQ(back.median_us, 12.5);
  EXPECT_TRUE(std::isnan(back.p10_us));
  EXPECT_EQ(back.note, r.note);

  // Unknown columns ignored, missing ones keep defaults, order free.
  const ResultRow partial =
      row_from_fields({"status", "extra", "median_us", "op"}, {"fail", "zzz", "3.5", "softmax"});
  EXPECT_EQ(partial.status, "fail");
  EXPECT_EQ(partial.median_us, 3.5);
  EXPECT_EQ(partial.op, "softmax");
  EXPECT_EQ(partial.impl, "");
  EXPECT_EQ(partial.m, 0);

  try {
    row_from_fields({"op", "median_us"}, {"x", "12us"});
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("median_us"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("12us"), std::string::npos) << e.what();
  }
  EXPECT_THROW(row_from_fields({"m"}, {"4.5"}), UsageError);
  EXPECT_THROW(row_from_fields({"m"}, {"99999999999999999999"}), UsageError);
}

// ----- CSV quoting -------------------------------------------------------------------------

TEST(Output, CsvEscape) {
  EXPECT_EQ(csv_escape("plain"), "plain");
  EXPECT_EQ(csv_escape(""), "");
  EXPECT_EQ(csv_escape("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_escape("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_escape("two\nlines"), "\"two\nlines\"");
}

TEST(Output, CsvSplitLine) {
  EXPECT_EQ(csv_split_line("a,b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(csv_split_line(""), (std::vector<std::string>{""}));
  EXPECT_EQ(csv_split_line("a,,"), (std::vector<std::string>{"a", "", ""}));
  EXPECT_EQ(csv_split_line(",a"), (std::vector<std::string>{"", "a"}));
  EXPECT_EQ(csv_split_line("\"a,b\",\"say \"\"hi\"\"\",\"\""),
            (std::vector<std::string>{"a,b", "say \"hi\"", ""}));
  const std::vector<std::string> tricky = {"x", "a,b", "\"", "\"\"", "", " sp ", "l1\nl2"};
  std::string line;
  for (size_t i = 0; i < tricky.size(); ++i) line += (i ? "," : "") + csv_escape(tricky[i]);
  EXPECT_EQ(csv_split_line(line), tricky);

  EXPECT_THROW(csv_split_line("\"unterminated"), UsageError);
  EXPECT_THROW(csv_split_line("a,\"b"), UsageError);
  EXPECT_THROW(csv_split_line("\"a\"b,c"), UsageError);
  EXPECT_THROW(csv_split_line("a\"b,c"), UsageError);
}

TEST(Output, JsonEscape) {
  EXPECT_EQ(json_escape("plain"), "plain");
  EXPECT_EQ(json_escape("q\"b\\"), "q\\\"b\\\\");
  EXPECT_EQ(json_escape("a\nb\tc\r"), "a\\nb\\tc\\r");
  EXPECT_EQ(json_escape(std::string("\x01", 1)), "\\u0001");
  EXPECT_EQ(json_escape("µs"), "µs");
}

// ----- CSV files ---------------------------------------------------------------------------

TEST(Output, CsvRoundTrip) {
  TempFile f(".csv");
  ResultRow a = sample_row();
  ResultRow b = sample_row();
  b.impl = "v1_naive";
  b.status = "skip";
  b.note = "needs N % 8 == 0, got \"4097\"";
  b.median_us = b.gbps = b.max_abs_err = kNan;
  {
    CsvWriter w(f.path());
    w.add(a);
    // Flushed after each row: the file already holds header and first row.
    EXPECT_EQ(read_results_csv(f.path()).size(), 1u);
    w.add(b);
    w.finish();
  }
  const std::string text = slurp(f.path());
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "kbench_version,timestamp,device,device_slug,arch,sm_count,driver,runtime,op,impl,"
            "dtype,shape,m,n,k,l2,samples,median_us,mean_us,min_us,p10_us,p90_us,stddev_us,"
            "noise_pct,sm_clock_mhz,bytes,flops,gbps,tflops,intensity,peak_gbps,peak_pct,"
            "ceiling_gbps,ceiling_pct,max_abs_err,max_rel_err,rel_l2_err,atol,rtol,status,note");

  const auto rows = read_results_csv(f.path());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(row_fields(rows[0]), row_fields(a));
  EXPECT_EQ(row_fields(rows[1]), row_fields(b));
  EXPECT_EQ(rows[0].note, a.note);
  EXPECT_EQ(rows[1].note, "needs N % 8 == 0, got \"4097\"");
  EXPECT_TRUE(std::isnan(rows[1].median_us));
  EXPECT_EQ(rows[0].bytes, 134234112);
}

TEST(Output, CsvWriterBadPath) {
  EXPECT_THROW(CsvWriter("/nonexistent_dir_kbench/x.csv"), UsageError);
}

TEST(Output, ReadCsvAcceptsMinimalHeaderCrlfAndBlankLines) {
  TempFile f(".csv");
  write_file(f.path(),
             "\n"
             "op,impl,dtype,shape,l2,median_us,status,torch_version\r\n"
             "rmsnorm,torch_compile,bf16,4096x8192,cold,15.5,pass,2.3\r\n"
             "\r\n"
             "   \n"
             "softmax,torch_eager,fp16,1x2,cold,,skip,2.3\n");
  const auto rows = read_results_csv(f.path());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].impl, "torch_compile");
  EXPECT_EQ(rows[0].median_us, 15.5);
  EXPECT_EQ(rows[0].status, "pass");
  EXPECT_TRUE(std::isnan(rows[1].median_us));
  EXPECT_EQ(rows[1].shape, "1x2");
}

// The UsageError message of read_results_csv on a file with the given text.
std::string read_error(const std::string& text, std::string* path_out = nullptr) {
  TempFile f(".csv");
  write_file(f.path(), text);
  if (path_out) *path_out = f.path();
  try {
    read_results_csv(f.path());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Output, ReadCsvErrorsNameFileAndLine) {
  const std::string header = "op,impl,dtype,shape,l2,median_us,status\n";
  const std::string good = "rmsnorm,v1,bf16,4x4,cold,1.5,pass\n";
  std::string path;

  std::string msg = read_error(header + good + "\n" + "rmsnorm,\"v1,bf16,4x4,cold,1.5,pass\n", &path);
  EXPECT_EQ(msg.rfind(path + ":4: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("unterminated"), std::string::npos) << msg;

  msg = read_error(header + good + "rmsnorm,v1,bf16,4x4,cold,pass\n", &path);
  EXPECT_EQ(msg, path + ":3: expected 7 fields, got 6");

  msg = read_error(header + good + good + "rmsnorm,v1,bf16,4x4,cold,fast,pass\n", &path);
  EXPECT_EQ(msg, path + ":4: column 'median_us': bad number 'fast'");

  // A quoted newline makes one record of two lines; the next record is numbered correctly.
  msg = read_error(header + "rmsnorm,\"v1\nx\",bf16,4x4,cold,1,pass\nrmsnorm,v1,bf16,4x4,cold,x,pass\n",
                   &path);
  EXPECT_EQ(msg.rfind(path + ":4: ", 0), 0u) << msg;
}

TEST(Output, ReadCsvRejectsOtherFiles) {
  std::string path;
  std::string msg = read_error("impl,dtype,shape,l2,median_us,status\nv1,bf16,4x4,cold,1,pass\n", &path);
  EXPECT_EQ(msg, path + ": not a kbench results CSV (missing column 'op')");
  msg = read_error("op,impl,dtype,shape,l2,status\n", &path);
  EXPECT_EQ(msg, path + ": not a kbench results CSV (missing column 'median_us')");
  msg = read_error("", &path);
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
  EXPECT_THROW(read_results_csv("/nonexistent_dir_kbench/none.csv"), UsageError);
}

// ----- JSON files --------------------------------------------------------------------------

TEST(Output, JsonValidAfterEveryRow) {
  TempFile f(".json");
  JsonWriter w(f.path());
  EXPECT_EQ(slurp(f.path()), "[]\n");
  ResultRow a = sample_row();
  w.add(a);
  const std::string one = slurp(f.path());
  EXPECT_TRUE(valid_json(one)) << one;
  EXPECT_NE(one.find("\"median_us\": 12.5,"), std::string::npos) << one;
  EXPECT_NE(one.find("\"p10_us\": null,"), std::string::npos) << one;
  EXPECT_NE(one.find("\"sm_count\": 132,"), std::string::npos) << one;
  EXPECT_NE(one.find("\"bytes\": 134234112,"), std::string::npos) << one;
  EXPECT_NE(one.find("\"rel_l2_err\": 1.5e-07,"), std::string::npos) << one;
  EXPECT_NE(one.find("\"driver\": \"550.54\","), std::string::npos) << one;  // text stays text
  EXPECT_NE(one.find("\"note\": \"has \\\"quotes\\\", commas, and\\na newline\"}"),
            std::string::npos)
      << one;

  ResultRow b = sample_row();
  b.max_abs_err = std::numeric_limits<double>::infinity();  // JSON has no infinity
  b.status = "fail";
  w.add(b);
  w.finish();
  const std::string two = slurp(f.path());
  EXPECT_TRUE(valid_json(two)) << two;
  EXPECT_NE(two.find("\"max_abs_err\": null,"), std::string::npos) << two;
  EXPECT_EQ(two.rfind("[\n  {", 0), 0u);
  EXPECT_FALSE(std::filesystem::exists(f.path() + ".tmp"));
}

#ifdef __linux__
// `kbench run --format json|csv` writes to /dev/stdout, which cannot be rewritten: the JSON
// array is streamed and closed by finish(). CaptureStdout points fd 1 at a temporary file.
TEST(Output, WritersToDevStdout) {
  testing::internal::CaptureStdout();
  {
    JsonWriter w("/dev/stdout");
    w.add(sample_row());
    w.add(sample_row());
    w.finish();
    w.finish();  // idempotent
  }
  const std::string json = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(valid_json(json)) << json;
  EXPECT_EQ(json.rfind("[\n  {\"kbench_version\": \"0.1.0\"", 0), 0u) << json;
  EXPECT_EQ(json.substr(json.size() - 4), "}\n]\n");

  testing::internal::CaptureStdout();
  {
    JsonWriter w("/dev/stdout");
    w.finish();
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "[]\n");

  testing::internal::CaptureStdout();
  {
    CsvWriter w("/dev/stdout");
    w.add(sample_row());
  }
  const std::string csv = testing::internal::GetCapturedStdout();
  EXPECT_EQ(csv.rfind("kbench_version,timestamp,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n0.1.0,2024-05-01T12:00:00Z,"), std::string::npos) << csv;
}
#endif

TEST(Output, JsonWriterBadPath) {
  EXPECT_THROW(JsonWriter("/nonexistent_dir_kbench/x.json"), UsageError);
}

// ----- console -----------------------------------------------------------------------------

TEST(Output, ConsoleTable) {
  std::ostringstream os;
  ConsoleTable t(os);
  ResultRow a = sample_row();
  a.gbps = kNan;
  t.add(a);
  ResultRow s = sample_row();
  s.impl = "v2_vec";
  s.status = "skip";
  s.note = "needs N % 8 == 0";
  t.add(s);

  std::vector<std::string> lines;
  std::istringstream in(os.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << os.str();
  for (const char* col :
       {"op", "impl", "dtype", "shape", "l2", "median_us", "GB/s", "%ceil", "%peak", "max_err",
        "status"}) {
    EXPECT_NE(lines[0].find(col), std::string::npos) << col;
  }
  EXPECT_NE(lines[1].find("rmsnorm"), std::string::npos);
  EXPECT_NE(lines[1].find("12.50"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(" - "), std::string::npos) << lines[1];  // NaN GB/s
  EXPECT_NE(lines[1].find("pass"), std::string::npos);
  EXPECT_EQ(lines[1].find("quotes"), std::string::npos);  // a pass row keeps it short
  EXPECT_NE(lines[2].find("skip  needs N % 8 == 0"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[2].find("12.50"), std::string::npos) << lines[2];  // nothing measured
  // Columns line up: the status column starts at the same place on every row.
  EXPECT_EQ(lines[0].find("status"), lines[1].find("pass"));
  EXPECT_EQ(lines[0].find("status"), lines[2].find("skip"));
}

TEST(Output, ConsoleTableWithoutTiming) {
  std::ostringstream os;
  ConsoleTable t(os, false);
  t.add(sample_row());
  const std::string text = os.str();
  EXPECT_EQ(text.find("median_us"), std::string::npos) << text;
  EXPECT_EQ(text.find("GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("max_err"), std::string::npos) << text;
  EXPECT_NE(text.find("7.81e-03"), std::string::npos) << text;
}

// ----- fan-out -----------------------------------------------------------------------------

struct Counter : Reporter {
  int* adds;
  int* finishes;
  Counter(int* a, int* f) : adds(a), finishes(f) {}
  void add(const ResultRow&) override { ++*adds; }
  void finish() override { ++*finishes; }
};

TEST(Output, MultiReporterForwards) {
  int adds = 0, finishes = 0;
  MultiReporter m;
  m.attach(std::make_unique<Counter>(&adds, &finishes));
  m.attach(std::make_unique<Counter>(&adds, &finishes));
  m.add(sample_row());
  m.add(sample_row());
  m.finish();
  EXPECT_EQ(adds, 4);
  EXPECT_EQ(finishes, 2);
}

}  // namespace
}  // namespace kbench
