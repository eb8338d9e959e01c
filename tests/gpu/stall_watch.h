// For multi-threaded GPU tests: a watch that fails a run which stops making progress, printing where
// every thread is (its ThreadState) and its stack, instead of leaving a hang for the alarm to kill
// without a word.
#pragma once

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <thread>

namespace gputest {

// Where each thread is, for the report of a run that stops making progress: which call it is in
// (or last returned from), in which iteration, on which operation and count.
struct ThreadState {
  std::atomic<const char*> step{"init"};
  std::atomic<uint64_t> iteration{0};
  std::atomic<int> op{-1};
  std::atomic<size_t> count{0};
};

inline std::atomic<int> stacksPrinted{0};

// SIGUSR1 handler: this thread's stack as "frame LIBRARY+OFFSET" lines. To name a frame:
// addr2line -f -C -e LIBRARY OFFSET-1.
inline void printOwnStack(int) {
  void* frames[40];
  const int n = backtrace(frames, 40);
  for (int i = 0; i < n; i++) {
    Dl_info info{};
    if (dladdr(frames[i], &info) == 0 || info.dli_fname == nullptr) continue;
    char line[512];
    const int len =
        std::snprintf(line, sizeof(line), "    frame %s+0x%lx\n", info.dli_fname,
                      static_cast<unsigned long>(static_cast<char*>(frames[i]) - static_cast<char*>(info.dli_fbase)));
    if (len > 0) (void)!write(2, line, static_cast<size_t>(len));
  }
  stacksPrinted++;
}

// Fails the run (exit 1, from the child process) with every thread's state when no operation has
// completed for `stallSeconds`, instead of leaving a hang for the alarm to kill without a word.
inline void watchProgress(const std::atomic<long>& ops, const std::atomic<int>& running, const ThreadState* states,
                          const pthread_t* threads, int nThreads, int stallSeconds) {
  void* warm[2];
  backtrace(warm, 2);  // loads what backtrace needs outside the signal handler
  std::signal(SIGUSR1, printOwnStack);
  long last = -1;
  auto lastChange = std::chrono::steady_clock::now();
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const long now = ops.load();
    if (now != last) {
      last = now;
      lastChange = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - lastChange < std::chrono::seconds(stallSeconds)) continue;
    std::fprintf(stderr, "no operation completed for %d s (%ld checked); threads:\n", stallSeconds, now);
    for (int t = 0; t < nThreads; t++) {
      std::fprintf(stderr, "  thread %d: %s, iteration %llu, op %d, count %zu\n", t, states[t].step.load(),
                   static_cast<unsigned long long>(states[t].iteration.load()), states[t].op.load(),
                   states[t].count.load());
      const int before = stacksPrinted.load();
      pthread_kill(threads[t], SIGUSR1);
      for (int wait = 0; wait < 100 && stacksPrinted.load() == before; wait++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    std::fflush(stderr);
    _exit(1);
  }
}

}  // namespace gputest
