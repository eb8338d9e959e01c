// braid-perf's rank launcher: steps streamed from processes and threads, in order; a failed worker
// fails the run after the steps it reported.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "launcher.h"
#include "options.h"

namespace braidperf {
namespace {

// Workers report {worker, first rank, cycle, first byte of that cycle's id}; steps must arrive in
// order, complete, in worker order, with one id per cycle shared by every worker.
void checkLauncher(const Layout& layout, int failWorker, int* stepsSeen, bool* ok) {
  LaunchConfig cfg;
  cfg.layout = layout;
  cfg.graceSec = 5;
  std::atomic<int> made{0};
  IdMaker makeId = [&made](ncclUniqueId* id) {
    std::memset(id, 0, sizeof(*id));
    id->internal[0] = static_cast<char>(40 + made++);
    return true;
  };
  WorkerBody body = [failWorker](const WorkerInfo& info, const IdSource& ids, const Emit& emit) {
    for (int cycle = 0; cycle < 3; cycle++) {
      if (info.worker == failWorker && cycle == 1) return false;
      ncclUniqueId id;
      if (!ids(cycle, &id)) return false;
      emit({double(info.worker), double(info.firstRank), double(cycle), double(id.internal[0])});
    }
    return true;
  };
  *stepsSeen = 0;
  OnStep onStep = [&](int step, const std::vector<std::vector<double>>& records) {
    EXPECT_EQ(step, *stepsSeen);
    ASSERT_EQ(static_cast<int>(records.size()), layout.workers());
    for (int w = 0; w < layout.workers(); w++) {
      EXPECT_EQ(records[w][0], w);
      EXPECT_EQ(records[w][1], w * layout.gpus);
      EXPECT_EQ(records[w][2], step);
      EXPECT_EQ(records[w][3], records[0][3]);
    }
    EXPECT_EQ(records[0][3], 40 + step);
    (*stepsSeen)++;
  };
  *ok = runWorkers(cfg, body, onStep, makeId);
}

TEST(PerfLauncher, StreamsStepsFromProcessesAndThreads) {
  for (Layout l : {Layout{1, 3, 1}, Layout{2, 2, 1}, Layout{3, 1, 2}}) {
    int steps = 0;
    bool ok = false;
    checkLauncher(l, -1, &steps, &ok);
    EXPECT_TRUE(ok);
    EXPECT_EQ(steps, 3) << l.procs << "x" << l.threads << "x" << l.gpus;
  }
}

TEST(PerfLauncher, AFailedWorkerFailsTheRunAfterTheStepsItReported) {
  for (Layout l : {Layout{1, 2, 1}, Layout{2, 2, 1}}) {
    int steps = 0;
    bool ok = true;
    checkLauncher(l, 1, &steps, &ok);
    EXPECT_FALSE(ok);
    EXPECT_EQ(steps, 1) << l.procs << "x" << l.threads;
  }
}

}  // namespace
}  // namespace braidperf
