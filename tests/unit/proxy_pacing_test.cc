// How the proxy spends its time between steps: an idle proxy sleeps, longer once its launches have
// ended; a kick, a peer's data or a kernel that starts late wakes it at once; it does not spin beside
// data it has no slot for.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "proxy/proxy.h"
#include "proxy_test_util.h"
#include "scoped_env.h"
#include "util/params.h"

namespace braid::proxy {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
}

// CPU seconds the whole process uses in 0.5 s, after 50 ms in which its proxies go past their spin
// window (2 ms by default) and fall asleep.
double cpuOfHalfASecondIdle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double before = cpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return cpuSeconds() - before;
}

TEST_F(ProxyTest, AnIdleProxySleepsAndAKickWakesItAtOnce) {
  HostFifo sendSide, recvSide;
  Proxy sender("sender proxy", nullptr);
  Proxy receiver("receiver proxy", nullptr);
  sender.add({fifoOf(&sendSide, true)});
  receiver.add({fifoOf(&recvSide, false)});
  const double used = cpuOfHalfASecondIdle();
  EXPECT_LT(used, 0.1) << "two idle proxies used " << used << " s of CPU in 0.5 s";
  // A step after the idle time still goes through.
  sendSide.buff[0] = 42;
  sendSide.sizes[0] = 1;
  sender.kick();
  store(&sendSide.tail, 1);
  ASSERT_TRUE(waitFor(&recvSide.tail, 1, std::chrono::seconds(5)));
  EXPECT_EQ(recvSide.buff[0], 42);
}

// Proxies that never spin and sleep up to 200 ms (BRAID_PROXY_LAUNCH_WINDOW_MS as given), so that
// a wake that does not come shows as tens of milliseconds on any machine. The caller restores the
// environment and calls paramsReset() when its proxies are gone.
void useLongSleepsWithoutSpin(testing::ScopedEnv* env, const char* launchWindowMs) {
  env->clear({"BRAID_PROXY_SPIN_US", "BRAID_PROXY_MAX_SLEEP_US", "BRAID_PROXY_LAUNCH_WINDOW_MS"});
  setenv("BRAID_PROXY_SPIN_US", "0", 1);
  setenv("BRAID_PROXY_MAX_SLEEP_US", "200000", 1);
  setenv("BRAID_PROXY_LAUNCH_WINDOW_MS", launchWindowMs, 1);
  paramsReset();
}

// The sending GPU publishes a 16-byte step (then `kick`s its proxy, when given, as its launch
// would); the receiving GPU waits for it and releases the slot. Milliseconds from publication to
// arrival, or a negative value after 5 s.
double msToMoveOneStep(HostFifo* sendSide, HostFifo* recvSide, uint64_t step, Proxy* kick) {
  sendSide->sizes[step % kNetSizeSlots] = 16;
  const auto t0 = Clock::now();
  store(&sendSide->tail, step + 1);
  if (kick != nullptr) kick->kick();
  if (!waitFor(&recvSide->tail, step + 1, std::chrono::seconds(5))) return -1;
  store(&recvSide->head, step + 1);
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A step from a peer while the receiving proxy sleeps (no launch kicked it, as when the peer runs
// late): the socket's data ends the sleep at once instead of at the next timed poll. Sleeps of up to
// 200 ms and no spin window make the difference plain on any machine: after 400 ms of idle time the
// receiver is in a 200 ms sleep that ends ~127 ms after the step arrives.
TEST_F(ProxyTest, AStepFromAPeerWakesASleepingReceiverAtOnce) {
  testing::ScopedEnv env;
  useLongSleepsWithoutSpin(&env, "0");
  HostFifo sendSide, recvSide;
  std::vector<double> ms;
  {
    Proxy sender("sender proxy", nullptr);
    Proxy receiver("receiver proxy", nullptr);
    sender.add({fifoOf(&sendSide, true)});
    receiver.add({fifoOf(&recvSide, false)});
    for (uint64_t step = 0; step < 5; ++step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      ms.push_back(msToMoveOneStep(&sendSide, &recvSide, step, &sender));
      ASSERT_GE(ms.back(), 0) << "step " << step;
    }
  }
  env.restore();
  paramsReset();
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 50.0) << "the receiver saw the step only at the end of its sleep (worst " << ms.back()
                                     << " ms)";
}

// A kernel that starts long after its launch kicked the proxy (the host ahead of the GPU): within
// the launch window the sender sleeps at most 50 us, so its first step leaves at once, not at the
// end of a long sleep (without the window, 200 ms after the kick it is in a sleep that ends at
// 328 ms). Prints what the proxies cost in the window.
TEST_F(ProxyTest, AKernelThatStartsLongAfterItsLaunchIsSentAtOnce) {
  testing::ScopedEnv env;
  useLongSleepsWithoutSpin(&env, "1000");
  HostFifo sendSide, recvSide;
  std::vector<double> ms;
  double cpu = 0;
  double idle = 0;
  {
    Proxy sender("sender proxy", nullptr);
    Proxy receiver("receiver proxy", nullptr);
    sender.add({fifoOf(&sendSide, true)});
    receiver.add({fifoOf(&recvSide, false)});
    for (uint64_t step = 0; step < 3; ++step) {
      sender.kick();  // the launch
      const double before = cpuSeconds();
      const auto kicked = Clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the GPU is busy with earlier work
      cpu += cpuSeconds() - before;
      idle += std::chrono::duration<double>(Clock::now() - kicked).count();
      ms.push_back(msToMoveOneStep(&sendSide, &recvSide, step, nullptr));  // the kernel starts
      ASSERT_GE(ms.back(), 0) << "step " << step;
    }
  }
  env.restore();
  paramsReset();
  std::sort(ms.begin(), ms.end());
  std::printf("a late kernel's step: median %.2f ms; the process used %.1f%% of a core in the launch window\n",
              ms[ms.size() / 2], 100 * cpu / idle);
  EXPECT_LT(ms[ms.size() / 2], 20.0) << "the sender saw the step only at the end of a long sleep (worst " << ms.back()
                                     << " ms)";
}

// The same, past any launch window: while the peer watch has not seen the launch end (LaunchCounts
// differ), the sender still sleeps at most 50 us, so a kernel that starts 400 ms after its kick is
// sent at once (without the counts it would wait for the end of a 200 ms sleep).
TEST_F(ProxyTest, AKernelThatStartsAfterTheWindowIsSentAtOnceWhileItsLaunchHasNotEnded) {
  testing::ScopedEnv env;
  useLongSleepsWithoutSpin(&env, "0");
  HostFifo sendSide, recvSide;
  LaunchCounts launches;
  std::vector<double> ms;
  {
    Proxy sender("sender proxy", nullptr, &launches);
    Proxy receiver("receiver proxy", nullptr);
    sender.add({fifoOf(&sendSide, true)});
    receiver.add({fifoOf(&recvSide, false)});
    for (uint64_t step = 0; step < 3; ++step) {
      sender.kick();  // the launch
      launches.issued.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(400));         // the GPU is busy with earlier work
      ms.push_back(msToMoveOneStep(&sendSide, &recvSide, step, nullptr));  // the kernel starts
      ASSERT_GE(ms.back(), 0) << "step " << step;
      launches.completed.store(launches.issued.load());  // the watch sees it end
    }
  }
  env.restore();
  paramsReset();
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 20.0) << "the sender slept through a pending launch (worst " << ms.back() << " ms)";
}

// Sleeps (voluntary context switches: each ppoll that times out is one) of the whole process in
// 1.5 s, after 0.5 s in which its proxies fell asleep.
long sleepsInAnIdleSecondAndAHalf() {
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  return after.ru_nvcsw - before.ru_nvcsw;
}

// Once every launch has ended (LaunchCounts agree), nothing of ours needs an idle proxy before the
// next kick: its sleeps grow with the quiet time (1/64 of it, up to 100 ms) instead of stopping at
// BRAID_PROXY_MAX_SLEEP_US (1 ms). Two proxies wake ~200 times in 1.5 s instead of ~3,000, and a
// kick still wakes them at once.
TEST_F(ProxyTest, AnIdleProxyWhoseLaunchesHaveEndedWakesRarely) {
  HostFifo sendSide, recvSide;
  long withoutCounts = 0;
  {
    Proxy sender("sender proxy", nullptr);
    Proxy receiver("receiver proxy", nullptr);
    withoutCounts = sleepsInAnIdleSecondAndAHalf();
  }
  LaunchCounts launches;
  launches.issued.store(3);
  launches.completed.store(3);
  Proxy sender("sender proxy", nullptr, &launches);
  Proxy receiver("receiver proxy", nullptr, &launches);
  sender.add({fifoOf(&sendSide, true)});
  receiver.add({fifoOf(&recvSide, false)});
  const long withCounts = sleepsInAnIdleSecondAndAHalf();
  std::printf("sleeps of two idle proxies in 1.5 s: %ld without launch counts, %ld once their launches ended\n",
              withoutCounts, withCounts);
  EXPECT_LT(withCounts * 5, withoutCounts);
  sendSide.buff[0] = 42;
  sendSide.sizes[0] = 1;
  const auto t0 = Clock::now();
  sender.kick();
  store(&sendSide.tail, 1);
  ASSERT_TRUE(waitFor(&recvSide.tail, 1, std::chrono::seconds(5)));
  EXPECT_EQ(recvSide.buff[0], 42);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_LT(ms, 50.0) << "a kick did not end a long sleep at once";
}

// Data the GPU has no slot for stays unread in the receiver's socket, which stays readable: the
// receiving proxy must not take that for news and spin, but go back to timed sleeps.
TEST_F(ProxyTest, DataWithoutAFreeSlotDoesNotKeepTheReceiverBusy) {
  HostFifo sendSide, recvSide;
  Proxy sender("sender proxy", nullptr);
  Proxy receiver("receiver proxy", nullptr);
  sender.add({fifoOf(&sendSide, true)});
  receiver.add({fifoOf(&recvSide, false)});
  constexpr uint64_t kSteps = kSlots + 4;    // the receiving GPU never consumes: 4 steps find no slot
  constexpr uint32_t kStepBytes = 32 << 10;  // on the control socket, read into no buffer ahead
  for (uint64_t step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(waitFor(&sendSide.head, step + 1 > kSlots ? step + 1 - kSlots : 0, std::chrono::seconds(5)));
    sendSide.sizes[step % kNetSizeSlots] = kStepBytes;
    store(&sendSide.tail, step + 1);
    sender.kick();
  }
  ASSERT_TRUE(waitFor(&recvSide.tail, kSlots, std::chrono::seconds(5)));
  ASSERT_TRUE(waitFor(&sendSide.head, kSteps, std::chrono::seconds(5)));  // all sent: in the receiver's socket
  const double used = cpuOfHalfASecondIdle();
  EXPECT_LT(used, 0.1) << "the proxies used " << used << " s of CPU in 0.5 s beside unread data";
  EXPECT_EQ(load(&recvSide.tail), kSlots);
  store(&recvSide.head, kSlots);  // the GPU consumes its slots: the rest arrives
  EXPECT_TRUE(waitFor(&recvSide.tail, kSteps, std::chrono::seconds(5)));
}

// What a CUDA graph's host node holds: it kicks while its proxy lives, and does nothing (no crash)
// once the proxy is gone, as when a graph is replayed after its communicator was destroyed.

}  // namespace
}  // namespace braid::proxy
