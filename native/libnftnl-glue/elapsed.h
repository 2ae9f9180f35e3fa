// The clocks a commit's timings are read from: wall time since a point, and
// the calling thread's CPU time (on a loaded machine the two differ by a lot).
#pragma once

#include <chrono>
#include <ctime>

namespace knp {

inline double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

inline double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace knp
