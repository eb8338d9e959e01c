#include "proxy/pacer.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/ready_scan.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::proxy {
namespace {

constexpr int kFirstSleepUs = 20;
constexpr int kLaunchWindowSleepUs = 50;       // the longest sleep within BRAID_PROXY_LAUNCH_WINDOW_MS of a kick
constexpr int64_t kMaxSleepUsBound = 1000000;  // BRAID_PROXY_MAX_SLEEP_US below it: a timespec of < 1 s
// Once every launch has ended (proxy.h, "Idle"): a sleep lasts at most 1/64 of the time nothing
// happened, and at most kIdleSleepUs.
constexpr int64_t kQuietPerSleep = 64;
constexpr int64_t kIdleSleepUs = 100000;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ProxyPacer::ProxyPacer(const std::string& name, const LaunchCounts* launches)
    : launches_(launches),
      spinUs_(std::max<int64_t>(paramInt(ParamId::kProxySpinUs), 0)),
      maxSleepUs_(static_cast<int>(
          std::clamp<int64_t>(paramInt(ParamId::kProxyMaxSleepUs), kFirstSleepUs, kMaxSleepUsBound - 1))),
      launchWindow_(std::chrono::milliseconds(std::max<int64_t>(paramInt(ParamId::kProxyLaunchWindowMs), 0))),
      lastProgress_(Clock::now()),
      lastKick_(lastProgress_ - launchWindow_),
      sleepUs_(kFirstSleepUs) {
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) {
    WARN("%s: eventfd failed (%s): the proxy naps at most %d us at a time instead of sleeping", name.c_str(),
         std::strerror(errno), kFirstSleepUs);
  }
}

ProxyPacer::~ProxyPacer() {
  if (wakeFd_ >= 0) close(wakeFd_);
}

// A launch's kick writes the eventfd only while the thread sleeps (a system call per launch
// otherwise). With both sides sequentially consistent, either the sleeper sees the new count
// before it sleeps or the kicker sees sleeping_ and wakes it.
void ProxyPacer::kick() {
  kicks_.fetch_add(1);
  if (sleeping_.load()) wake();
}

void ProxyPacer::wake() {
  if (wakeFd_ < 0) return;
  const uint64_t one = 1;
  (void)!write(wakeFd_, &one, sizeof(one));  // EAGAIN: the counter is full, so it is readable anyway
}

void ProxyPacer::afterPass(bool moved, const std::atomic<bool>& changes) {
  const uint64_t kicks = kicks_.load(std::memory_order_relaxed);
  const Clock::time_point now = Clock::now();
  if (moved || kicks != seenKicks_) {
    if (kicks != seenKicks_) lastKick_ = now;
    lastProgress_ = now;
    seenKicks_ = kicks;
    sleepUs_ = kFirstSleepUs;
    watchSockets_ = true;
    return;
  }
  if (now - lastProgress_ < std::chrono::microseconds(spinUs_)) {
    cpuRelax();
    return;
  }
  const int longest = longestSleepUs(now);
  sleepUs_ = std::min(sleepUs_, longest);
  if (sleepUntilWoken(changes)) {
    // A peer's data: poll for a spin window, and watch the sockets again only once a step moves.
    lastProgress_ = Clock::now();
    sleepUs_ = kFirstSleepUs;
    watchSockets_ = false;
  } else {
    sleepUs_ = std::min(sleepUs_ * 2, longest);
  }
}

// The longest sleep now (proxy.h, "Idle"). Within the launch window, or while a launch has not
// ended, a kernel may start any moment.
int ProxyPacer::longestSleepUs(Clock::time_point now) const {
  if (now - lastKick_ < launchWindow_ || (launches_ != nullptr && launches_->pending())) {
    return std::min(maxSleepUs_, kLaunchWindowSleepUs);
  }
  if (launches_ == nullptr) return maxSleepUs_;  // nobody says when the launches end
  const int64_t quietUs =
      std::chrono::duration_cast<std::chrono::microseconds>(now - std::max(lastKick_, lastProgress_)).count();
  return static_cast<int>(std::max<int64_t>(maxSleepUs_, std::min(quietUs / kQuietPerSleep, kIdleSleepUs)));
}

// Ended early by the eventfd (a kick or a change) or, while watchSockets_, by data on a socket this
// thread progresses.
bool ProxyPacer::sleepUntilWoken(const std::atomic<bool>& changes) {
  const int sleepUs = wakeFd_ < 0 ? std::min(sleepUs_, kFirstSleepUs) : sleepUs_;
  sleeping_.store(true);
  if (kicks_.load() != seenKicks_ || changes.load(std::memory_order_acquire)) {
    sleeping_.store(false);
    return false;
  }
  const int socketsFd = watchSockets_ ? net::ReadyScan::threadLocal().readyFd() : -1;
  pollfd fds[2] = {{wakeFd_, POLLIN, 0}, {socketsFd, POLLIN, 0}};  // a negative fd is ignored
  const timespec timeout{0, static_cast<long>(sleepUs) * 1000};
  const int ready = ppoll(fds, 2, &timeout, nullptr);
  sleeping_.store(false);
  if (ready <= 0) return false;
  if ((fds[0].revents & POLLIN) != 0) {
    uint64_t count = 0;
    (void)!read(wakeFd_, &count, sizeof(count));
  }
  return (fds[1].revents & POLLIN) != 0;
}

}  // namespace braid::proxy
