// CUDA graphs on real GPUs, as NCCL supports them: every collective, point-to-point and group
// operation captured under cudaStreamCaptureModeGlobal and ThreadLocal, by one process per GPU, one
// thread driving every GPU and a thread per GPU; a communicator's first operation (its lazy
// connection, peers never contacted before) inside the capture; replays with new inputs each time,
// checked exactly; eager operations on another stream interleaved with the replays; 10,000 replays;
// one graph holding the operations of two communicators; memory flat over 1,000
// capture/instantiate/destroy cycles; NCCL_GRAPH_MIXING_SUPPORT; replays across emulated hosts that
// wake the sleeping proxies.
//
// Data: element i of rank r's input at replay `it` is value(it, r, i), small signed integers, so
// every expected output is computed exactly on the host. Outputs are poisoned before every replay.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"

namespace {

using gputest::Mode;
using gputest::modeName;

constexpr unsigned kWatchdogSeconds = 300;
constexpr uint8_t kPoisonByte = 0xAB;

// The operations a graph may hold; each writes its own output buffer.
enum Op { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kSendRecv, kAlltoAll, kGather, kNumOps };
constexpr unsigned kAllOps = (1u << kNumOps) - 1;
const char* const kOpNames[kNumOps] = {"AllReduce",     "Broadcast", "Reduce",   "AllGather",
                                       "ReduceScatter", "SendRecv",  "AlltoAll", "Gather"};

int32_t value(int it, int rank, size_t i) {
  uint64_t x = (static_cast<uint64_t>(it) << 40) ^ (static_cast<uint64_t>(rank) << 32) ^ i;
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return static_cast<int32_t>(x % 2001) - 1000;
}

struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int nranks = 0;
  size_t count = 0;  // C: the input holds nranks * C elements, every output as many
  int32_t* in = nullptr;
  int32_t* out[kNumOps] = {};
  int32_t* eagerOut = nullptr;
  cudaStream_t eagerStream = nullptr;
  cudaEvent_t inputReady = nullptr;
  cudaEvent_t eagerDone = nullptr;
  cudaGraphExec_t exec = nullptr;
};

size_t elems(const Rank& r) { return static_cast<size_t>(r.nranks) * r.count; }

int allocate(Rank& r, int nranks, size_t count) {
  r.nranks = nranks;
  r.count = count;
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaMalloc(&r.in, elems(r) * sizeof(int32_t)));
  for (int32_t*& o : r.out) CHILD_CUDA(cudaMalloc(&o, elems(r) * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&r.eagerOut, elems(r) * sizeof(int32_t)));
  CHILD_CUDA(cudaStreamCreateWithFlags(&r.eagerStream, cudaStreamNonBlocking));
  CHILD_CUDA(cudaEventCreateWithFlags(&r.inputReady, cudaEventDisableTiming));
  CHILD_CUDA(cudaEventCreateWithFlags(&r.eagerDone, cudaEventDisableTiming));
  return 0;
}

int release(Rank& r) {
  CHILD_CUDA(cudaSetDevice(r.rank));
  if (r.exec != nullptr) CHILD_CUDA(cudaGraphExecDestroy(r.exec));
  CHILD_CUDA(cudaFree(r.in));
  for (int32_t* o : r.out) CHILD_CUDA(cudaFree(o));
  CHILD_CUDA(cudaFree(r.eagerOut));
  CHILD_CUDA(cudaStreamDestroy(r.eagerStream));
  CHILD_CUDA(cudaEventDestroy(r.inputReady));
  CHILD_CUDA(cudaEventDestroy(r.eagerDone));
  return 0;
}

// Enqueues `op` for every local rank (in one group, as one thread driving several GPUs must).
int issue(std::vector<Rank>& ranks, Op op, bool eager = false) {
  CHILD_NCCL(ncclGroupStart());
  for (Rank& r : ranks) {
    const int n = r.nranks;
    const size_t c = r.count;
    cudaStream_t s = eager ? r.eagerStream : r.stream;
    int32_t* out = eager ? r.eagerOut : r.out[op];
    switch (op) {
      case kAllReduce:
        CHILD_NCCL(ncclAllReduce(r.in, out, elems(r), ncclInt32, ncclSum, r.comm, s));
        break;
      case kBroadcast:
        CHILD_NCCL(ncclBroadcast(r.in, out, elems(r), ncclInt32, n - 1, r.comm, s));
        break;
      case kReduce:
        CHILD_NCCL(ncclReduce(r.in, out, elems(r), ncclInt32, ncclSum, 0, r.comm, s));
        break;
      case kAllGather:
        CHILD_NCCL(ncclAllGather(r.in, out, c, ncclInt32, r.comm, s));
        break;
      case kReduceScatter:
        CHILD_NCCL(ncclReduceScatter(r.in, out, c, ncclInt32, ncclSum, r.comm, s));
        break;
      case kSendRecv:
        CHILD_NCCL(ncclSend(r.in, c, ncclInt32, (r.rank + 1) % n, r.comm, s));
        CHILD_NCCL(ncclRecv(out, c, ncclInt32, (r.rank + n - 1) % n, r.comm, s));
        break;
      case kAlltoAll:
        CHILD_NCCL(ncclAlltoAll(r.in, out, c, ncclInt32, r.comm, s));
        break;
      case kGather:
        CHILD_NCCL(ncclGather(r.in, out, c, ncclInt32, n - 1, r.comm, s));
        break;
      default:
        return 1;
    }
  }
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// What rank `me` expects in element i of op's output at replay `it` (false: the element is not
// written, e.g. Reduce off the root).
bool expected(Op op, int it, int me, int n, size_t c, size_t i, int32_t* want) {
  auto sum = [&](size_t index) {
    uint32_t s = 0;
    for (int r = 0; r < n; r++) s += static_cast<uint32_t>(value(it, r, index));
    return static_cast<int32_t>(s);
  };
  switch (op) {
    case kAllReduce:
      *want = sum(i);
      return true;
    case kBroadcast:
      *want = value(it, n - 1, i);
      return true;
    case kReduce:
      *want = sum(i);
      return me == 0;
    case kAllGather:
      *want = value(it, static_cast<int>(i / c), i % c);
      return true;
    case kReduceScatter:
      *want = sum(me * c + i);
      return i < c;
    case kSendRecv:
      *want = value(it, (me + n - 1) % n, i);
      return i < c;
    case kAlltoAll:
      *want = value(it, static_cast<int>(i / c), me * c + i % c);
      return true;
    case kGather:
      *want = value(it, static_cast<int>(i / c), i % c);
      return me == n - 1;
    default:
      return false;
  }
}

int checkOutput(const Rank& r, Op op, int it, const int32_t* devOut) {
  std::vector<int32_t> host(elems(r));
  CHILD_CUDA(cudaMemcpy(host.data(), devOut, host.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
  int32_t poison;
  std::memset(&poison, kPoisonByte, sizeof(poison));
  int bad = 0;
  for (size_t i = 0; i < host.size(); i++) {
    int32_t want = poison;
    if (!expected(op, it, r.rank, r.nranks, r.count, i, &want)) want = poison;
    if (host[i] != want && bad++ < 4) {
      std::fprintf(stderr, "%s replay %d rank %d element %zu: expected %d got %d\n", kOpNames[op], it, r.rank, i, want,
                   host[i]);
    }
  }
  return bad == 0 ? 0 : 1;
}

// New inputs for replay `it` and poisoned outputs, on the rank's stream.
int prepareReplay(Rank& r, int it) {
  std::vector<int32_t> host(elems(r));
  for (size_t i = 0; i < host.size(); i++) host[i] = value(it, r.rank, i);
  CHILD_CUDA(cudaSetDevice(r.rank));
  // The previous eager operation read the input on the other stream.
  CHILD_CUDA(cudaStreamWaitEvent(r.stream, r.eagerDone, 0));
  CHILD_CUDA(cudaMemcpyAsync(r.in, host.data(), host.size() * sizeof(int32_t), cudaMemcpyHostToDevice, r.stream));
  for (int32_t* o : r.out) CHILD_CUDA(cudaMemsetAsync(o, kPoisonByte, elems(r) * sizeof(int32_t), r.stream));
  CHILD_CUDA(cudaMemsetAsync(r.eagerOut, kPoisonByte, elems(r) * sizeof(int32_t), r.stream));
  CHILD_CUDA(cudaEventRecord(r.inputReady, r.stream));
  return 0;
}

int beginCaptures(std::vector<Rank>& ranks, cudaStreamCaptureMode mode) {
  for (Rank& r : ranks) {
    CHILD_CUDA(cudaSetDevice(r.rank));
    CHILD_CUDA(cudaStreamBeginCapture(r.stream, mode));
  }
  return 0;
}

// Ends every rank's capture before instantiating any graph: under global capture, one thread may not
// instantiate while it still captures another stream.
int endCapturesAndInstantiate(std::vector<Rank>& ranks) {
  std::vector<cudaGraph_t> graphs;
  for (Rank& r : ranks) {
    CHILD_CUDA(cudaSetDevice(r.rank));
    cudaGraph_t graph = nullptr;
    CHILD_CUDA(cudaStreamEndCapture(r.stream, &graph));
    graphs.push_back(graph);
  }
  for (size_t i = 0; i < ranks.size(); i++) {
    Rank& r = ranks[i];
    CHILD_CUDA(cudaSetDevice(r.rank));
    if (r.exec != nullptr) CHILD_CUDA(cudaGraphExecDestroy(r.exec));
    CHILD_CUDA(cudaGraphInstantiate(&r.exec, graphs[i], 0));
    CHILD_CUDA(cudaGraphDestroy(graphs[i]));
  }
  return 0;
}

// Captures `ops` on every local rank's stream and instantiates one graph per rank.
int capture(std::vector<Rank>& ranks, unsigned ops, cudaStreamCaptureMode mode) {
  if (beginCaptures(ranks, mode) != 0) return 1;
  for (int op = 0; op < kNumOps; op++) {
    if ((ops >> op & 1) != 0 && issue(ranks, static_cast<Op>(op)) != 0) return 1;
  }
  return endCapturesAndInstantiate(ranks);
}

// Replays the graphs `replays` times with new inputs, every `eagerEvery`-th replay (0: never)
// followed by an eager AllReduce of the same input on another stream; checks every output.
int replayAndCheck(std::vector<Rank>& ranks, unsigned ops, int replays, int eagerEvery) {
  for (int it = 1; it <= replays; it++) {
    for (Rank& r : ranks) {
      if (prepareReplay(r, it) != 0) return 1;
      CHILD_CUDA(cudaGraphLaunch(r.exec, r.stream));
    }
    const bool eager = eagerEvery > 0 && it % eagerEvery == 0;
    if (eager) {
      for (Rank& r : ranks) {
        CHILD_CUDA(cudaSetDevice(r.rank));
        CHILD_CUDA(cudaStreamWaitEvent(r.eagerStream, r.inputReady, 0));
      }
      if (issue(ranks, kAllReduce, true) != 0) return 1;
      for (Rank& r : ranks) {
        CHILD_CUDA(cudaSetDevice(r.rank));
        CHILD_CUDA(cudaEventRecord(r.eagerDone, r.eagerStream));
      }
    }
    for (Rank& r : ranks) {
      CHILD_CUDA(cudaSetDevice(r.rank));
      CHILD_CUDA(cudaStreamSynchronize(r.stream));
      CHILD_CUDA(cudaStreamSynchronize(r.eagerStream));
      for (int op = 0; op < kNumOps; op++) {
        if ((ops >> op & 1) != 0 && checkOutput(r, static_cast<Op>(op), it, r.out[op]) != 0) return 1;
      }
      if (eager && checkOutput(r, kAllReduce, it, r.eagerOut) != 0) return 1;
    }
  }
  return 0;
}

int captureAndReplay(int n, Mode mode, cudaStreamCaptureMode captureMode, unsigned ops, size_t count, int replays,
                     int eagerEvery) {
  return gputest::withRanks<Rank>(n, mode, kWatchdogSeconds, [&](std::vector<Rank>& ranks) {
    for (Rank& r : ranks) {
      if (allocate(r, n, count) != 0) return 1;
    }
    // The communicators' first operations are the captured ones: they connect inside the capture.
    int rc = capture(ranks, ops, captureMode);
    if (rc == 0) rc = replayAndCheck(ranks, ops, replays, eagerEvery);
    for (Rank& r : ranks) rc |= release(r);
    return rc;
  });
}

class Graph : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < GetParam()) GTEST_SKIP() << "needs " << GetParam() << " GPUs";
  }
  int n() const { return GetParam(); }
};

const char* captureModeName(cudaStreamCaptureMode m) {
  return m == cudaStreamCaptureModeGlobal ? "global capture" : "thread-local capture";
}

// CUDA's capture rule: a thread per GPU needs thread-local capture (under global capture one thread's
// capture forbids the other threads' allocations); one process per GPU and one thread driving every
// GPU work under both.
TEST_P(Graph, EveryOperationCapturedAtFirstUseAndReplayedWithNewInputs) {
  const struct {
    Mode mode;
    cudaStreamCaptureMode capture;
  } cases[] = {{Mode::kProcesses, cudaStreamCaptureModeGlobal},
               {Mode::kProcesses, cudaStreamCaptureModeThreadLocal},
               {Mode::kOneThread, cudaStreamCaptureModeGlobal},
               {Mode::kOneThread, cudaStreamCaptureModeThreadLocal},
               {Mode::kThreads, cudaStreamCaptureModeThreadLocal}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(modeName(c.mode)) + ", " + captureModeName(c.capture));
    EXPECT_EQ(0, captureAndReplay(n(), c.mode, c.capture, kAllOps, 1001, 20, 3));
  }
}

TEST_P(Graph, TenThousandReplays) {
  EXPECT_EQ(0, captureAndReplay(n(), Mode::kProcesses, cudaStreamCaptureModeGlobal,
                                1u << kAllReduce | 1u << kSendRecv | 1u << kAlltoAll, 64, 10000, 97));
}

// Captured after eager work has connected everything, and eager work between the replays on the
// same communicator: the launch order keeps them apart.
TEST_P(Graph, CapturedAfterEagerWork) {
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, Mode::kProcesses, kWatchdogSeconds, [n](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              if (allocate(r, n, 4099) != 0) return 1;
              if (prepareReplay(r, 0) != 0) return 1;
              CHILD_CUDA(cudaStreamWaitEvent(r.eagerStream, r.inputReady, 0));
              for (int op = 0; op < kNumOps; op++) {
                if (issue(ranks, static_cast<Op>(op), true) != 0) return 1;
              }
              CHILD_CUDA(cudaEventRecord(r.eagerDone, r.eagerStream));
              int rc = capture(ranks, kAllOps, cudaStreamCaptureModeGlobal);
              if (rc == 0) rc = replayAndCheck(ranks, kAllOps, 10, 1);
              rc |= release(r);
              return rc;
            }));
}

// One graph per GPU holding the operations of two communicators over the same GPUs, built and
// launched by one thread.
TEST_P(Graph, TwoCommunicatorsInOneGraph) {
  const int n = this->n();
  EXPECT_EQ(0, gputest::runInChild([n] {
              alarm(kWatchdogSeconds);
              std::vector<ncclComm_t> a(n), b(n);
              CHILD_NCCL(ncclCommInitAll(a.data(), n, nullptr));
              CHILD_NCCL(ncclCommInitAll(b.data(), n, nullptr));
              std::vector<Rank> onA(n), onB(n);
              for (int r = 0; r < n; r++) {
                onA[r].rank = onB[r].rank = r;
                onA[r].comm = a[r];
                onB[r].comm = b[r];
                CHILD_CUDA(cudaSetDevice(r));
                CHILD_CUDA(cudaStreamCreateWithFlags(&onA[r].stream, cudaStreamNonBlocking));
                onB[r].stream = onA[r].stream;
                if (allocate(onA[r], n, 777) != 0) return 1;
                if (allocate(onB[r], n, 777) != 0) return 1;
              }
              if (beginCaptures(onA, cudaStreamCaptureModeGlobal) != 0) return 1;
              if (issue(onA, kAllReduce) != 0 || issue(onB, kAllGather) != 0 || issue(onA, kSendRecv) != 0) return 1;
              if (endCapturesAndInstantiate(onA) != 0) return 1;
              for (int it = 1; it <= 20; it++) {
                for (int r = 0; r < n; r++) {
                  if (prepareReplay(onA[r], it) != 0 || prepareReplay(onB[r], it) != 0) return 1;
                  CHILD_CUDA(cudaGraphLaunch(onA[r].exec, onA[r].stream));
                }
                for (int r = 0; r < n; r++) {
                  CHILD_CUDA(cudaSetDevice(r));
                  CHILD_CUDA(cudaStreamSynchronize(onA[r].stream));
                  if (checkOutput(onA[r], kAllReduce, it, onA[r].out[kAllReduce]) != 0) return 1;
                  if (checkOutput(onA[r], kSendRecv, it, onA[r].out[kSendRecv]) != 0) return 1;
                  if (checkOutput(onB[r], kAllGather, it, onB[r].out[kAllGather]) != 0) return 1;
                }
              }
              int rc = 0;
              for (int r = 0; r < n; r++) {
                onB[r].exec = nullptr;
                rc |= release(onA[r]) | release(onB[r]);
                CHILD_NCCL(ncclCommDestroy(a[r]));
                CHILD_NCCL(ncclCommDestroy(b[r]));
              }
              return rc;
            }));
}

// Device memory must not grow over 1,000 capture/instantiate/replay/destroy cycles (a captured
// operation holds nothing beyond its graph), host memory only within allocator noise.
TEST_P(Graph, MemoryFlatOverAThousandCaptureCycles) {
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, Mode::kProcesses, kWatchdogSeconds, [n](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              if (allocate(r, n, 256) != 0) return 1;
              const unsigned ops = 1u << kAllReduce | 1u << kSendRecv;
              size_t freeBefore = 0, freeAfter = 0, total = 0, rssBefore = 0;
              for (int cycle = 0; cycle < 1020; cycle++) {
                if (cycle == 20) {
                  CHILD_CUDA(cudaMemGetInfo(&freeBefore, &total));
                  rssBefore = gputest::residentBytes();
                }
                if (capture(ranks, ops, cudaStreamCaptureModeGlobal) != 0) return 1;
                if (replayAndCheck(ranks, ops, 1, 0) != 0) return 1;
                CHILD_CUDA(cudaGraphExecDestroy(r.exec));
                r.exec = nullptr;
              }
              CHILD_CUDA(cudaMemGetInfo(&freeAfter, &total));
              const size_t rssAfter = gputest::residentBytes();
              std::fprintf(stderr, "rank %d: device free %zu -> %zu bytes, host resident %zu -> %zu bytes\n", r.rank,
                           freeBefore, freeAfter, rssBefore, rssAfter);
              CHILD_EXPECT(freeAfter >= freeBefore);
              CHILD_EXPECT(rssAfter <= rssBefore + (16u << 20));
              return release(r);
            }));
}

// Counts the event record and wait nodes of one captured AllReduce.
int countEventNodes(Rank& r, size_t* records, size_t* waits) {
  CHILD_CUDA(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeGlobal));
  std::vector<Rank> one{r};
  if (issue(one, kAllReduce) != 0) return 1;
  cudaGraph_t graph = nullptr;
  CHILD_CUDA(cudaStreamEndCapture(r.stream, &graph));
  size_t count = 0;
  CHILD_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CHILD_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  *records = *waits = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    CHILD_CUDA(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeEventRecord) ++*records;
    if (type == cudaGraphNodeTypeWaitEvent) ++*waits;
  }
  CHILD_CUDA(cudaGraphDestroy(graph));
  return 0;
}

// NCCL_GRAPH_MIXING_SUPPORT=1 (default) orders a graph against the communicator's other work with
// external event nodes; 0 leaves them out. Both replay correctly.
// Across emulated hosts a replay makes no host call, so only the graph's host node
// (launch/replay_wake.h) wakes the proxies, which sleep up to 1 ms between polls once idle. Each
// replay follows 30 ms of idle; without the wake-up a replay waits for the proxies' polls (about
// 1 ms or more), with it the median stays far below that. Results are checked every time.
TEST_P(Graph, ReplaysAcrossEmulatedHostsWakeTheProxies) {
  if (colltest::againstReference()) GTEST_SKIP() << "times Braid's proxy wake-up";
  colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(
                   n, Mode::kProcesses, kWatchdogSeconds,
                   [n](std::vector<Rank>& ranks) {
                     Rank& r = ranks[0];
                     if (allocate(r, n, 16) != 0) return 1;
                     int rc = capture(ranks, 1u << kAllReduce, cudaStreamCaptureModeGlobal);
                     std::vector<double> us;
                     for (int it = 1; rc == 0 && it <= 15; it++) {
                       if (prepareReplay(r, it) != 0) return 1;
                       CHILD_CUDA(cudaStreamSynchronize(r.stream));
                       std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the proxies fall asleep
                       const auto start = std::chrono::steady_clock::now();
                       CHILD_CUDA(cudaGraphLaunch(r.exec, r.stream));
                       CHILD_CUDA(cudaStreamSynchronize(r.stream));
                       us.push_back(
                           std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
                       rc |= checkOutput(r, kAllReduce, it, r.out[kAllReduce]);
                     }
                     std::sort(us.begin(), us.end());
                     const double median = us.empty() ? 0.0 : us[us.size() / 2];
                     std::fprintf(stderr, "rank %d: replay after 30 ms idle, median %.0f us (%.0f-%.0f)\n", r.rank,
                                  median, us.empty() ? 0.0 : us.front(), us.empty() ? 0.0 : us.back());
                     CHILD_EXPECT(rc != 0 || median < 600.0);
                     return rc | release(r);
                   },
                   n / 2));
}

TEST_P(Graph, MixingSupportParameter) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's graph structure";
  const int n = this->n();
  for (const char* mixing : {"1", "0"}) {
    SCOPED_TRACE(std::string("NCCL_GRAPH_MIXING_SUPPORT=") + mixing);
    colltest::ScopedSetenv env("NCCL_GRAPH_MIXING_SUPPORT", mixing);
    const bool on = mixing[0] == '1';
    EXPECT_EQ(0, gputest::withRanks<Rank>(n, Mode::kProcesses, kWatchdogSeconds, [n, on](std::vector<Rank>& ranks) {
                Rank& r = ranks[0];
                if (allocate(r, n, 300) != 0) return 1;
                size_t records = 0, waits = 0;
                if (countEventNodes(r, &records, &waits) != 0) return 1;
                CHILD_EXPECT(on ? (records >= 1 && waits >= 1) : (records == 0 && waits == 0));
                int rc = capture(ranks, 1u << kAllReduce | 1u << kSendRecv, cudaStreamCaptureModeGlobal);
                if (rc == 0) rc = replayAndCheck(ranks, 1u << kAllReduce | 1u << kSendRecv, 5, 0);
                return rc | release(r);
              }));
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, Graph, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

}  // namespace
