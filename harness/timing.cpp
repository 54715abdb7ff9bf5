#include "harness/timing.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <fstream>
#include <optional>

#include "harness/errors.h"
#include "harness/gpu_kernels.h"
#include "harness/nvml.h"

namespace kbench {

// Keeps what Google Benchmark reports so it can be re-emitted as one JSON document.
struct Timer::Collector : benchmark::BenchmarkReporter {
  std::optional<Context> context;
  std::vector<Run> runs;
  bool ReportContext(const Context& c) override {
    if (!context) context.emplace(c);
    return true;
  }
  void ReportRuns(const std::vector<Run>& r) override { runs.insert(runs.end(), r.begin(), r.end()); }
};

namespace {

// Google Benchmark reads its flags once; kbench drives everything through the API.
void init_google_benchmark() {
  static const bool done = [] {
    static char name[] = "kbench";
    static char* argv[] = {name, nullptr};
    int argc = 1;
    benchmark::Initialize(&argc, argv);
    return true;
  }();
  (void)done;
}

}  // namespace

EventPair::EventPair(gpuStream_t stream) : stream_(stream) {
  KB_GPU_CHECK(gpuEventCreate(&start_));
  KB_GPU_CHECK(gpuEventCreate(&stop_));
}

EventPair::~EventPair() {
  if (start_) (void)gpuEventDestroy(start_);
  if (stop_) (void)gpuEventDestroy(stop_);
}

double EventPair::time_ms(const std::function<void()>& enqueue) {
  KB_GPU_CHECK(gpuEventRecord(start_, stream_));
  enqueue();
  KB_GPU_CHECK(gpuEventRecord(stop_, stream_));
  KB_GPU_CHECK(gpuEventSynchronize(stop_));
  float ms = 0;
  KB_GPU_CHECK(gpuEventElapsedTime(&ms, start_, stop_));
  return ms;
}

Timer::Timer(const DeviceInfo& device, gpuStream_t stream)
    : device_(device),
      stream_(stream),
      events_(stream),
      flush_buffer_(flush_buffer_bytes(device.l2_bytes)),
      collector_(std::make_unique<Collector>()) {
  init_google_benchmark();
  KB_GPU_CHECK(gpuMemset(flush_buffer_.get(), 1, flush_buffer_.bytes()));
  // About 20 us of busy-wait: longer than a launch's host latency.
  spin_cycles_ = std::max<int64_t>(20000, int64_t{device.sm_clock_khz} * 20 / 1000);
}

Timer::~Timer() = default;

void Timer::prepare_sample(bool cold) {
  if (cold)
    launch_flush_l2(flush_buffer_.get(), flush_buffer_.bytes(), device_.sm_count, stream_);
  else
    launch_spin(spin_cycles_, stream_);
}

double Timer::time_once_us(const std::function<void()>& launch, bool cold) {
  prepare_sample(cold);  // still running on the GPU while the host enqueues the rest
  return events_.time_ms(launch) * 1e3;
}

std::vector<double> Timer::run_benchmark(const std::string& name,
                                         const std::function<void()>& launch, int samples,
                                         const TimingOptions& options,
                                         std::vector<unsigned>& clocks) {
  std::vector<double> times;
  std::exception_ptr failure;
  const int clock_every = std::max(1, samples / 16);
  auto body = [&](benchmark::State& state) {
    int i = 0;
    for (auto _ : state) {
      try {
        const double us = time_once_us(launch, options.cold_l2);
        state.SetIterationTime(us * 1e-6);
        times.push_back(us);
        if (i++ % clock_every == 0) clocks.push_back(Nvml::instance().sm_clock_mhz(device_.pci_bus_id));
      } catch (...) {
        failure = std::current_exception();
        state.SkipWithError("GPU error while timing");
        break;
      }
    }
  };
  benchmark::RegisterBenchmark(name.c_str(), body)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->Iterations(samples)
      ->Repetitions(std::max(1, options.repetitions));
  benchmark::RunSpecifiedBenchmarks(collector_.get());
  benchmark::ClearRegisteredBenchmarks();
  if (failure) std::rethrow_exception(failure);
  return times;
}

Measurement Timer::measure(const std::string& name, const std::function<void()>& launch,
                           const TimingOptions& options) {
  // Warm-up (module load, first-touch) and an estimate of one launch's time.
  double estimate_us = 1e30;
  for (int i = 0; i < 3; ++i) estimate_us = std::min(estimate_us, time_once_us(launch, options.cold_l2));

  int samples = options.samples;
  if (samples <= 0)
    samples = static_cast<int>(std::clamp<double>(std::ceil(options.target_ms * 1e3 / estimate_us),
                                                  options.min_samples, options.max_samples));
  std::vector<unsigned> clocks;
  std::vector<double> times = run_benchmark(name, launch, samples, options, clocks);
  Measurement m;
  m.us = summarize(times);
  if (options.max_noise_pct > 0 && m.us.noise_pct > options.max_noise_pct &&
      samples < options.max_samples) {
    times = run_benchmark(name, launch, options.max_samples, options, clocks);
    m.us = summarize(times);
    m.note = "re-measured with " + std::to_string(options.max_samples) + " samples (noise)";
  }
  if (options.max_noise_pct > 0 && m.us.noise_pct > options.max_noise_pct)
    m.note = "noisy: " + std::to_string(static_cast<int>(m.us.noise_pct)) + "% > limit";

  clocks.erase(std::remove(clocks.begin(), clocks.end(), 0u), clocks.end());
  if (!clocks.empty()) {
    std::vector<double> mhz(clocks.begin(), clocks.end());
    m.sm_clock_mhz = summarize(mhz).median;
    const unsigned max_mhz = Nvml::instance().max_sm_clock_mhz(device_.pci_bus_id);
    const auto slow = std::count_if(clocks.begin(), clocks.end(),
                                    [&](unsigned c) { return c < 0.9 * max_mhz; });
    if (max_mhz > 0 && slow > 0) {
      if (!m.note.empty()) m.note += "; ";
      m.note += "throttled: " + std::to_string(slow) + "/" + std::to_string(clocks.size()) +
                " clock samples under 90% of " + std::to_string(max_mhz) + " MHz";
    }
  }
  return m;
}

void Timer::write_gbench_json(const std::string& path) const {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw UsageError("cannot write Google Benchmark JSON to '" + path + "'");
  if (!collector_->context) return;
  benchmark::JSONReporter json;
  json.SetOutputStream(&out);
  json.SetErrorStream(&out);
  json.ReportContext(*collector_->context);
  json.ReportRuns(collector_->runs);
  json.Finalize();
}

}  // namespace kbench
