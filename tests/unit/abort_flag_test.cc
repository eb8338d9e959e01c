// A communicator's abort flag (watch/abort_flag.h): the host waits see only their own bit, the
// kernels' word mirrors only theirs, whenever it is lent, and nothing is written to a word taken
// back.
#include "watch/abort_flag.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "util/socket.h"

namespace braid::watch {
namespace {

TEST(AbortFlag, HostWaitsSeeOnlyTheirBit) {
  AbortFlag flag;
  const Deadline deadline = Deadline::never(flag.hostWord());
  EXPECT_FALSE(deadline.aborted());
  flag.raise(kAbortKernels);  // a revoke: the bootstrap stays up
  EXPECT_TRUE(flag.raised(kAbortKernels));
  EXPECT_FALSE(flag.raised(kAbortHostWaits));
  EXPECT_FALSE(flag.raised(kAbortAll));
  EXPECT_FALSE(deadline.aborted());
  EXPECT_TRUE(deadlineSleep(1, deadline));
  flag.raise(kAbortHostWaits);
  EXPECT_TRUE(flag.raised(kAbortAll));
  EXPECT_TRUE(deadline.aborted());
  EXPECT_FALSE(deadlineSleep(1, deadline));
}

TEST(AbortFlag, TheKernelsWordMirrorsTheirBitWheneverItIsLent) {
  AbortFlag flag;
  int word = 0;
  flag.lendKernelWord(&word);
  flag.raise(kAbortHostWaits);  // a cancelled connect: kernels launched before go on
  EXPECT_EQ(word, 0);
  flag.raise(kAbortKernels);
  EXPECT_EQ(word, 1);
  flag.raise(kAbortAll);  // again: nothing changes
  EXPECT_EQ(word, 1);

  AbortFlag late;
  late.raise(kAbortAll);
  int lentAfter = 0;
  late.lendKernelWord(&lentAfter);
  EXPECT_EQ(lentAfter, 1) << "a word lent after the abort starts raised";

  AbortFlag takenBack;
  int gone = 0;
  takenBack.lendKernelWord(&gone);
  takenBack.lendKernelWord(nullptr);
  takenBack.raise(kAbortAll);
  EXPECT_EQ(gone, 0) << "a word taken back is never written";
}

TEST(AbortFlag, RaisesFromManyThreadsAllLand) {
  AbortFlag flag;
  int word = 0;
  flag.lendKernelWord(&word);
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int i = 0; i < 8; i++) {
    threads.emplace_back([&flag, i] { flag.raise(i % 2 == 0 ? kAbortHostWaits : kAbortKernels); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(flag.raised(kAbortAll));
  EXPECT_EQ(__atomic_load_n(&word, __ATOMIC_ACQUIRE), 1);
  EXPECT_EQ(flag.hostWord()->load(), kAbortAll);
}

}  // namespace
}  // namespace braid::watch
