// A minimal parallel loop for host-side work (input generation, references, checks): splits
// [0, count) into one contiguous chunk per hardware thread.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace kbench {

inline unsigned host_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// Calls body(begin, end) on disjoint chunks, concurrently; small ranges run inline.
template <class Body>
void parallel_for(int64_t count, Body body, int64_t min_chunk = 1) {
  const int64_t threads = std::min<int64_t>(host_threads(), (count + min_chunk - 1) / min_chunk);
  if (threads <= 1) {
    if (count > 0) body(int64_t{0}, count);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (count + threads - 1) / threads;
  for (int64_t begin = 0; begin < count; begin += chunk)
    pool.emplace_back(body, begin, std::min(count, begin + chunk));
  for (auto& t : pool) t.join();
}

}  // namespace kbench
