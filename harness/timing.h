// GPU-correct timing driven by Google Benchmark: one registered benchmark per point
// (RegisterBenchmark + UseManualTime + Iterations + Repetitions), device events around the
// launch, the L2 flushed (cold) or a busy-wait queued (hot) before each sample outside the
// timed interval, and the SM clock sampled between samples.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/buffer.h"
#include "harness/device.h"
#include "harness/stats.h"

namespace kbench {

// Two device events around the work a callable enqueues on a stream: the one place kbench
// turns device work into milliseconds. Event failures throw RuntimeFailure.
class EventPair {
 public:
  explicit EventPair(gpuStream_t stream);
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;

  // Records start, calls enqueue, records stop, waits for stop: the elapsed device time.
  double time_ms(const std::function<void()>& enqueue);

 private:
  gpuStream_t stream_;
  gpuEvent_t start_ = nullptr, stop_ = nullptr;
};

struct TimingOptions {
  bool cold_l2 = true;
  int samples = 0;            // fixed sample count; 0: derive from target_ms
  int min_samples = 10;
  int max_samples = 1000;
  double target_ms = 20;      // kernel time to accumulate per point when samples == 0
  double max_noise_pct = 0;   // > 0: when noise exceeds it, measure again with max_samples
  int repetitions = 1;        // Google Benchmark repetitions (samples pooled across them)
};

struct Measurement {
  SampleStats us;             // per-sample kernel times in microseconds
  double sm_clock_mhz = 0;    // median of the clock samples; 0 when unknown
  std::string note;           // throttling / noise remarks, "" when none
};

class Timer {
 public:
  Timer(const DeviceInfo& device, gpuStream_t stream);
  ~Timer();  // out of line: Collector is incomplete here
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Times `launch` (which enqueues work on the stream). `name` names the benchmark.
  Measurement measure(const std::string& name, const std::function<void()>& launch,
                      const TimingOptions& options);

  // Writes every run so far as Google Benchmark JSON (valid input for its compare.py).
  void write_gbench_json(const std::string& path) const;

 private:
  struct Collector;
  double time_once_us(const std::function<void()>& launch, bool cold);
  void prepare_sample(bool cold);
  std::vector<double> run_benchmark(const std::string& name, const std::function<void()>& launch,
                                    int samples, const TimingOptions& options,
                                    std::vector<unsigned>& clocks);

  DeviceInfo device_;
  gpuStream_t stream_;
  EventPair events_;
  DeviceBuffer flush_buffer_;
  int64_t spin_cycles_ = 0;
  std::unique_ptr<Collector> collector_;
};

}  // namespace kbench
