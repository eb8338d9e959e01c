// ncclCollConfig_t's launchCompletionEvent on real GPUs (coll_config_harness.h): the event completes
// while the collective still waits for a late peer (also across two emulated hosts), on every
// operation, through a CUDA graph and awaited inside the capture; with one rank, where collectives
// are copies, too.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "coll_config_harness.h"

namespace {

using namespace collconfig;  // NOLINT(google-build-using-namespace): this family's harness

// Whether rank me's output of `op` needs rank 0's call (so that its stream cannot finish first).
bool needsRankZero(Op op, int me, int root) {
  switch (op) {
    case Op::kAllReduce:
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAlltoAll:
      return true;
    case Op::kReduce:
    case Op::kGather:
      return me == root;
    default:
      return false;
  }
}

// The event completes once the collective's kernel has begun everywhere on this rank, long before
// the collective itself, which waits for rank 0: rank 0 calls two seconds after the others, which
// must see their events complete within one second while their streams (where the output needs
// rank 0) are still busy. Then every result is exact.
// A launch event completes once the kernel has begun, while it still waits for a late peer: rank 0
// calls each operation 2 s after the others. (A launch with programmatic dependent launch would
// have the driver record it only at the kernel's end: launch/data_path_context.h.)
int launchEventWithALatePeer(int nranks, int ranksPerHost) {
  return withRanks(
      nranks, Mode::kProcesses,
      [&](std::vector<Rank>& ranks) {
        Rank& r = ranks[0];
        CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
        cudaEvent_t event = nullptr;
        CHILD_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        const ncclCollConfig_t config = configWith([event](ncclCollConfig_t& c) { c.launchCompletionEvent = event; });
        uint64_t seed = 700;
        for (Op op : kOps) {
          // Connections made and every rank here: a plain call of each kind, synchronized.
          if (runCalls(ranks, {{op, kSmall, nullptr}}, seed++, "warm-up") != 0) return 1;
          const Call call{op, kSmall, &config};
          if (prepare(r, call, seed) != 0) return 1;
          if (r.rank == 0) std::this_thread::sleep_for(std::chrono::seconds(2));
          CHILD_NCCL(issue(r, call));
          if (r.rank != 0) {
            const auto start = std::chrono::steady_clock::now();
            cudaError_t q = cudaEventQuery(event);
            while (q == cudaErrorNotReady && std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
              q = cudaEventQuery(event);
            }
            if (q != cudaSuccess) {
              std::fprintf(stderr, "rank %d: %s: launch event not complete after 1 s: %s\n", r.rank, opName(op),
                           cudaGetErrorString(q));
              return 1;
            }
            if (needsRankZero(op, r.rank, rootOf(r.nranks)) && cudaStreamQuery(r.stream) != cudaErrorNotReady) {
              std::fprintf(stderr, "rank %d: %s finished before rank 0 called it\n", r.rank, opName(op));
              return 1;
            }
          }
          if (check(r, call, seed++, true, "late peer") != 0) return 1;
          CHILD_CUDA(cudaEventSynchronize(event));
        }
        CHILD_CUDA(cudaEventDestroy(event));
        return 0;
      },
      ranksPerHost);
}

TEST_P(CollConfigTest, LaunchEventCompletesWhileTheCollectiveWaitsForALatePeer) {
  EXPECT_EQ(0, launchEventWithALatePeer(n(), 0));
}

// Every operation with an event, in every mode, and inside a group of several: each event is
// complete once the stream is; a group's sends and receives on one communicator carry one event
// (another: ncclInvalidUsage, the group refused).
TEST_P(CollConfigTest, LaunchEventOnEveryOperation) {
  for (Mode mode : {Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n(), mode, [&](std::vector<Rank>& ranks) {
                std::vector<cudaEvent_t> events(ranks.size() * 2);
                for (size_t i = 0; i < ranks.size(); i++) {
                  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                  CHILD_CUDA(cudaEventCreateWithFlags(&events[2 * i], cudaEventDisableTiming));
                  CHILD_CUDA(cudaEventCreateWithFlags(&events[2 * i + 1], cudaEventDisableTiming));
                }
                for (Op op : kOps) {
                  for (size_t count : {kSmall, kLarge}) {
                    std::vector<ncclCollConfig_t> configs(ranks.size());
                    for (size_t i = 0; i < ranks.size(); i++) {
                      configs[i] = configWith([&](ncclCollConfig_t& c) { c.launchCompletionEvent = events[2 * i]; });
                      if (prepare(ranks[i], {op, count, nullptr}, 800) != 0) return 1;
                    }
                    CHILD_NCCL(ncclGroupStart());
                    for (size_t i = 0; i < ranks.size(); i++) {
                      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                      CHILD_NCCL(issue(ranks[i], {op, count, &configs[i]}));
                    }
                    CHILD_NCCL(ncclGroupEnd());
                    for (size_t i = 0; i < ranks.size(); i++) {
                      if (check(ranks[i], {op, count, nullptr}, 800, true, "with an event") != 0) return 1;
                      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                      CHILD_CUDA(cudaEventQuery(events[2 * i]));
                    }
                  }
                }
                // Two point-to-point collectives of one group with different events: refused.
                std::vector<ncclCollConfig_t> a(ranks.size()), b(ranks.size());
                for (size_t i = 0; i < ranks.size(); i++) {
                  a[i] = configWith([&](ncclCollConfig_t& c) { c.launchCompletionEvent = events[2 * i]; });
                  b[i] = configWith([&](ncclCollConfig_t& c) { c.launchCompletionEvent = events[2 * i + 1]; });
                  if (prepare(ranks[i], {Op::kAlltoAll, kSmall, nullptr}, 801) != 0) return 1;
                }
                CHILD_NCCL(ncclGroupStart());
                for (size_t i = 0; i < ranks.size(); i++) {
                  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                  CHILD_NCCL(issue(ranks[i], {Op::kAlltoAll, kSmall, &a[i]}));
                  CHILD_EXPECT(issue(ranks[i], {Op::kGather, kSmall, &b[i]}) == ncclInvalidUsage);
                }
                CHILD_EXPECT(ncclGroupEnd() == ncclInvalidUsage);
                for (size_t i = 0; i < ranks.size(); i++) {
                  if (check(ranks[i], {Op::kAlltoAll, kSmall, nullptr}, 801, false, "two events") != 0) return 1;
                  CHILD_CUDA(cudaEventDestroy(events[2 * i]));
                  CHILD_CUDA(cudaEventDestroy(events[2 * i + 1]));
                }
                return 0;
              }));
  }
}

// Captures AllReduce and AlltoAll with a launch-completion event on each rank and replays each
// graph twice on fresh inputs: exact results. With sideWait, a second stream of the same capture
// waits for the event (as NCCL's users overlap work with a collective) and sets a flag, which each
// replay must have set.
int capturedWithEvent(std::vector<Rank>& ranks, bool sideWait) {
  Rank& r = ranks[0];
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  cudaEvent_t event = nullptr;
  cudaEvent_t join = nullptr;
  cudaStream_t side = nullptr;
  uint32_t* flag = nullptr;
  CHILD_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CHILD_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CHILD_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CHILD_CUDA(cudaMalloc(&flag, 4));
  const ncclCollConfig_t config = configWith([event](ncclCollConfig_t& c) { c.launchCompletionEvent = event; });
  for (Op op : {Op::kAllReduce, Op::kAlltoAll}) {
    const Call call{op, kSmall, &config};
    if (runCalls(ranks, {{op, kSmall, nullptr}}, 900, "warm-up") != 0) return 1;
    CHILD_CUDA(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
    CHILD_NCCL(issue(r, call));
    if (sideWait) {
      CHILD_CUDA(cudaStreamWaitEvent(side, event, 0));
      CHILD_CUDA(cudaMemsetAsync(flag, 0x11, 4, side));
      CHILD_CUDA(cudaEventRecord(join, side));
      CHILD_CUDA(cudaStreamWaitEvent(r.stream, join, 0));
    }
    cudaGraph_t graph = nullptr;
    CHILD_CUDA(cudaStreamEndCapture(r.stream, &graph));
    cudaGraphExec_t exec = nullptr;
    CHILD_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHILD_CUDA(cudaGraphDestroy(graph));
    for (uint64_t seed : {901, 902}) {
      CHILD_CUDA(gputest::poisonSync(flag, 0, 4));
      if (prepare(r, call, seed) != 0) return 1;
      CHILD_CUDA(cudaGraphLaunch(exec, r.stream));
      if (check(r, call, seed, true, sideWait ? "captured, a stream waiting for the event" : "captured") != 0) {
        return 1;
      }
      uint32_t got = 0;
      CHILD_CUDA(cudaMemcpy(&got, flag, 4, cudaMemcpyDeviceToHost));
      CHILD_EXPECT(got == (sideWait ? 0x11111111u : 0u));
      CHILD_CUDA(cudaEventQuery(event));
    }
    CHILD_CUDA(cudaGraphExecDestroy(exec));
  }
  CHILD_CUDA(cudaFree(flag));
  CHILD_CUDA(cudaStreamDestroy(side));
  CHILD_CUDA(cudaEventDestroy(join));
  CHILD_CUDA(cudaEventDestroy(event));
  return 0;
}

TEST_P(CollConfigTest, LaunchEventInACapturedGraph) {
  EXPECT_EQ(0,
            withRanks(n(), Mode::kProcesses, [](std::vector<Rank>& ranks) { return capturedWithEvent(ranks, false); }));
}

TEST_P(CollConfigTest, LaunchEventAwaitedInsideTheCapture) {
  EXPECT_EQ(0,
            withRanks(n(), Mode::kProcesses, [](std::vector<Rank>& ranks) { return capturedWithEvent(ranks, true); }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, CollConfigTest, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

// The same across two emulated hosts, which may share one GPU: the kernels wait on the network.
TEST(CollConfigAcrossHosts, LaunchEventCompletesWhileTheCollectiveWaitsForALatePeer) {
  if (!gputest::emulatedHostsFit(2, 1)) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, launchEventWithALatePeer(2, 1));
}

}  // namespace

// One rank: collectives are copies (no kernel) and AlltoAll, Gather, Scatter self copies; every
// config still applies its checks, and the launch event completes.
TEST(CollConfigOneRank, EveryOperationWithAnEvent) {
  if (gputest::gpuCount() < 1) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, withRanks(1, Mode::kProcesses, [](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
              cudaEvent_t event = nullptr;
              CHILD_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
              // A forced selection (collectives only: AlltoAll, Gather and Scatter refuse one).
              const ncclCollConfig_t config = configWith([event](ncclCollConfig_t& c) {
                c.launchCompletionEvent = event;
                c.minCTAs = c.maxCTAs = 1;
              });
              ncclCollConfig_t selecting = config;
              selecting.algSelection = "ring";
              const ncclCollConfig_t bad = configWith([](ncclCollConfig_t& c) { c.magic = 0; });
              std::vector<Call> calls;
              for (Op op : kOps) {
                const bool p2p = op == Op::kAlltoAll || op == Op::kGather || op == Op::kScatter;
                calls.push_back({op, kSmall, p2p ? &config : &selecting});
                calls.push_back({op, kSmall, &bad, ncclInvalidArgument, "config->magic"});
              }
              if (runCalls(ranks, calls, 1000, "one rank") != 0) return 1;
              CHILD_CUDA(cudaEventQuery(event));
              CHILD_CUDA(cudaEventDestroy(event));
              return 0;
            }));
}

// One rank, captured: the copies that stand for the kernel record the event too, and it stays
// valid after the graph's replays.
TEST(CollConfigOneRank, LaunchEventInACapturedGraph) {
  if (gputest::gpuCount() < 1) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, withRanks(1, Mode::kProcesses, [](std::vector<Rank>& ranks) { return capturedWithEvent(ranks, true); }));
}
