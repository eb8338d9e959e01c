// Hang diagnosis on real GPUs, one process per GPU, BRAID_HANG_REPORT_MS=300. Braid only (NVIDIA's
// NCCL has no such report).
//   - Collectives: every rank runs AllReduce #1; then every rank but rank 1 launches AllReduce #2
//     while rank 1 sleeps. The waiting ranks each log one WARN naming AllReduce #2, rank 1 as the
//     rank that has not launched it (its last being #1), and themselves as waiting in it.
//   - Point-to-point: every rank sends to the next and receives from the previous, twice; rank 1
//     posts its second exchange late. The rank after rank 1 waits for its receive #2 (a send may
//     complete into the receiver's FIFO without the receiver): its WARN says that rank 1 has posted
//     1 send to it, so its receive #2 from rank 1 has no match yet.
//   - The same with the AllReduce captured in a CUDA graph and rank 1 replaying it late, and with the
//     point-to-point exchange captured in a graph and rank 1 replaying it late.
//   - The collective case again with every rank on its own emulated host (NCCL_HOSTID): the
//     reports learn where the others are from their processes' board servers, over TCP.
// Rank 1 then joins, the operations complete exactly, and rank 1, which never waited, logs no report.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// "0, 2, 3": the waiting ranks as the report lists them (all but rank 1, runs of three or more
// shortened).
std::string waitingRanks(int n) {
  std::string out = "0";
  if (n == 3) out += ", 2";
  if (n == 4) out += ", 2, 3";
  if (n > 4) out += ", 2-" + std::to_string(n - 1);
  return out;
}

// In a rank's process: its GPU, communicator and a non-blocking stream; 0 on success. A minute's
// alarm ends the process if the test itself hangs.
int openRank(int n, int rank, const ncclUniqueId& id, ncclComm_t* comm, cudaStream_t* stream) {
  alarm(60);
  CHILD_CUDA(cudaSetDevice(rank));
  CHILD_NCCL(ncclCommInitRank(comm, n, id, rank));
  CHILD_CUDA(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
  return 0;
}

// Rank r's AllReduce input on its GPU: element i is (i % 1000) * (r + 1). 0 on success.
constexpr size_t kAllReduceCount = 1 << 20;
int makeAllReduceInput(int rank, int32_t** buf) {
  CHILD_CUDA(cudaMalloc(buf, kAllReduceCount * sizeof(int32_t)));
  std::vector<int32_t> host(kAllReduceCount);
  for (size_t i = 0; i < kAllReduceCount; i++) host[i] = static_cast<int32_t>(i % 1000) * (rank + 1);
  CHILD_CUDA(gputest::uploadSync(*buf, host.data(), kAllReduceCount * sizeof(int32_t)));
  return 0;
}

// 0 when `buf` holds that input summed in place over n ranks twice.
int checkSummedTwice(int n, const int32_t* buf) {
  std::vector<int32_t> host(kAllReduceCount);
  CHILD_CUDA(cudaMemcpy(host.data(), buf, kAllReduceCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
  const int32_t factor = n * (n * (n + 1) / 2);
  for (size_t i = 0; i < kAllReduceCount; i++) CHILD_EXPECT(host[i] == static_cast<int32_t>(i % 1000) * factor);
  return 0;
}

// A rank's half of a ring exchange: kRingCount int32 to the next rank (element i is i * 7 + rank),
// as many from the previous one.
constexpr size_t kRingCount = 1 << 20;
struct RingExchange {
  int next = 0;
  int prev = 0;
  int32_t* send = nullptr;
  int32_t* recv = nullptr;
};
int makeRingExchange(int n, int rank, RingExchange* x) {
  x->next = (rank + 1) % n;
  x->prev = (rank + n - 1) % n;
  CHILD_CUDA(cudaMalloc(&x->send, kRingCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&x->recv, kRingCount * sizeof(int32_t)));
  std::vector<int32_t> host(kRingCount);
  for (size_t i = 0; i < kRingCount; i++) host[i] = static_cast<int32_t>(i * 7 + rank);
  CHILD_CUDA(gputest::uploadSync(x->send, host.data(), kRingCount * sizeof(int32_t)));
  return 0;
}
// The exchange's send and receive in one group.
int enqueueRingExchange(const RingExchange& x, ncclComm_t comm, cudaStream_t stream) {
  CHILD_NCCL(ncclGroupStart());
  CHILD_NCCL(ncclSend(x.send, kRingCount, ncclInt32, x.next, comm, stream));
  CHILD_NCCL(ncclRecv(x.recv, kRingCount, ncclInt32, x.prev, comm, stream));
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}
// 0 when the previous rank's data arrived exactly; frees the buffers.
int checkRingExchange(RingExchange* x) {
  std::vector<int32_t> host(kRingCount);
  CHILD_CUDA(cudaMemcpy(host.data(), x->recv, kRingCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kRingCount; i++) CHILD_EXPECT(host[i] == static_cast<int32_t>(i * 7 + x->prev));
  CHILD_CUDA(cudaFree(x->send));
  CHILD_CUDA(cudaFree(x->recv));
  return 0;
}

// Whether `log` holds `head` and every one of `parts`; prints the report from `head` on, or the
// whole log when it is not there.
bool reportNamed(int rank, const std::string& log, const std::string& head, const std::vector<std::string>& parts) {
  bool named = log.find(head) != std::string::npos;
  for (const std::string& part : parts) named = named && log.find(part) != std::string::npos;
  if (named) {
    std::fprintf(stderr, "rank %d's report: %s", rank, log.substr(log.find(head)).c_str());
  } else {
    std::fprintf(stderr, "rank %d: no report with \"%s\"; log:\n%s\n", rank, head.c_str(), log.c_str());
  }
  return named;
}

// Each rank logs its WARNs to a file of its own in a temporary directory; reports are due after 300 ms.
class HangReport : public ::testing::Test {
 protected:
  void SetUp() override {
    n_ = gputest::allGpuRanks();
    if (n_ < 2) GTEST_SKIP() << "needs 2 GPUs";
    if (colltest::againstReference()) GTEST_SKIP() << "a Braid feature";
    char dir[] = "/tmp/braid_hang_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(dir));
    logDir_ = dir;
    debugFile_ = std::make_unique<colltest::ScopedSetenv>("NCCL_DEBUG_FILE", (logDir_ + "/log.%p").c_str());
  }
  void TearDown() override {
    if (!logDir_.empty()) std::filesystem::remove_all(logDir_);
  }

  int n_ = 0;
  std::string logDir_;
  colltest::ScopedSetenv debug_{"NCCL_DEBUG", "WARN"};
  std::unique_ptr<colltest::ScopedSetenv> debugFile_;
  colltest::ScopedSetenv reportMs_{"BRAID_HANG_REPORT_MS", "300"};
  colltest::ScopedSetenv watchMs_{"BRAID_PEER_WATCH_MS", "100"};
};

// Every rank runs AllReduce #1, then all but rank 1 launch AllReduce #2 while rank 1 sleeps.
// hostPerRank: each rank on its own emulated host (NCCL_HOSTID), so that the reports learn about
// the others from their board servers over TCP, not from shared memory.
void expectTheRankThatHasNotLaunchedNamed(int n, const std::string& logDir, bool hostPerRank) {
  std::unique_ptr<colltest::ScopedSetenv> ifname;
  if (hostPerRank) ifname = std::make_unique<colltest::ScopedSetenv>("NCCL_SOCKET_IFNAME", "lo");
  EXPECT_EQ(0, gputest::runRanksInProcesses(n, [n, &logDir, hostPerRank](int rank, const ncclUniqueId& id) {
              if (hostPerRank) gputest::enterEmulatedHost(rank);
              ncclComm_t comm = nullptr;
              cudaStream_t stream = nullptr;
              if (openRank(n, rank, id, &comm, &stream) != 0) return 1;
              int32_t* buf = nullptr;
              if (makeAllReduceInput(rank, &buf) != 0) return 1;
              CHILD_NCCL(ncclAllReduce(buf, buf, kAllReduceCount, ncclInt32, ncclSum, comm, stream));  // #1
              CHILD_CUDA(cudaStreamSynchronize(stream));
              if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));  // the others wait in #2
              CHILD_NCCL(ncclAllReduce(buf, buf, kAllReduceCount, ncclInt32, ncclSum, comm, stream));  // #2
              CHILD_CUDA(cudaStreamSynchronize(stream));
              if (checkSummedTwice(n, buf) != 0) return 1;
              CHILD_NCCL(ncclCommDestroy(comm));
              CHILD_CUDA(cudaStreamDestroy(stream));
              CHILD_CUDA(cudaFree(buf));

              const std::string log = readFile(logDir + "/log." + std::to_string(getpid()));
              const std::string head = "rank " + std::to_string(rank) + ": AllReduce #2 (1048576 x int32, sum, ";
              if (rank == 1) {
                CHILD_EXPECT(log.find("has not completed") == std::string::npos);
                return 0;
              }
              CHILD_EXPECT(reportNamed(rank, log, head,
                                       {"Not launched by: rank 1 (its last: #1, launched ",
                                        "Waiting in it: ranks " + waitingRanks(n) + "."}));
              CHILD_EXPECT(log.find("Not known") == std::string::npos);
              return 0;
            }));
}

TEST_F(HangReport, TheRanksThatHaveNotLaunchedACollectiveAreNamed) {
  expectTheRankThatHasNotLaunchedNamed(n_, logDir_, false);
}

TEST_F(HangReport, RanksOnOtherHostsAreAskedOverTcp) { expectTheRankThatHasNotLaunchedNamed(n_, logDir_, true); }

// The same in a CUDA graph: every rank captures one AllReduce and replays it twice; rank 1 replays
// its second time late. The waiting ranks' GPUs number the replays' kernels (graph ops 1 and 2) and
// note their long waits, so their reports name graph op #2, the captured AllReduce #1, themselves
// as waiting in it and rank 1 as waiting in no graph op.
TEST_F(HangReport, TheRanksThatHaveNotReplayedACapturedCollectiveAreNamed) {
  const int n = n_;
  const std::string logDir = logDir_;
  EXPECT_EQ(
      0, gputest::runRanksInProcesses(n, [n, &logDir](int rank, const ncclUniqueId& id) {
        ncclComm_t comm = nullptr;
        cudaStream_t stream = nullptr;
        if (openRank(n, rank, id, &comm, &stream) != 0) return 1;
        int32_t* buf = nullptr;
        if (makeAllReduceInput(rank, &buf) != 0) return 1;
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        CHILD_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        CHILD_NCCL(ncclAllReduce(buf, buf, kAllReduceCount, ncclInt32, ncclSum, comm, stream));
        CHILD_CUDA(cudaStreamEndCapture(stream, &graph));
        CHILD_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        for (int replay = 0; replay < 2; replay++) {
          if (replay == 1 && rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
          CHILD_CUDA(cudaGraphLaunch(exec, stream));
          CHILD_CUDA(cudaStreamSynchronize(stream));
        }
        if (checkSummedTwice(n, buf) != 0) return 1;
        CHILD_CUDA(cudaGraphExecDestroy(exec));
        CHILD_CUDA(cudaGraphDestroy(graph));
        CHILD_NCCL(ncclCommDestroy(comm));
        CHILD_CUDA(cudaStreamDestroy(stream));
        CHILD_CUDA(cudaFree(buf));

        const std::string log = readFile(logDir + "/log." + std::to_string(getpid()));
        if (rank == 1) {
          CHILD_EXPECT(log.find("has been waiting") == std::string::npos);
          return 0;
        }
        const std::string head = "rank " + std::to_string(rank) +
                                 ": graph op #2 of this communicator, captured AllReduce #1 (1048576 x int32, "
                                 "sum, ";
        CHILD_EXPECT(reportNamed(
            rank, log, head, {"Waiting in it: ranks " + waitingRanks(n) + ".", "Not waiting in a graph op: ranks 1."}));
        return 0;
      }));
}

TEST_F(HangReport, APointToPointSendWithoutItsReceiveIsNamed) {
  const int n = n_;
  const std::string logDir = logDir_;
  EXPECT_EQ(0, gputest::runRanksInProcesses(n, [n, &logDir](int rank, const ncclUniqueId& id) {
              ncclComm_t comm = nullptr;
              cudaStream_t stream = nullptr;
              if (openRank(n, rank, id, &comm, &stream) != 0) return 1;
              RingExchange x;
              if (makeRingExchange(n, rank, &x) != 0) return 1;
              for (int round = 0; round < 2; round++) {
                if (round == 1 && rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
                CHILD_CUDA(gputest::poisonSync(x.recv, 0x5a, kRingCount * sizeof(int32_t)));
                if (enqueueRingExchange(x, comm, stream) != 0) return 1;
                CHILD_CUDA(cudaStreamSynchronize(stream));
              }
              if (checkRingExchange(&x) != 0) return 1;
              CHILD_NCCL(ncclCommDestroy(comm));
              CHILD_CUDA(cudaStreamDestroy(stream));

              const std::string log = readFile(logDir + "/log." + std::to_string(getpid()));
              if (rank == 1) {
                CHILD_EXPECT(log.find("has not completed") == std::string::npos);
                return 0;
              }
              if (x.prev != 1) return 0;  // the others may or may not wait, depending on FIFO room
              CHILD_EXPECT(reportNamed(rank, log, "rank " + std::to_string(rank) + ": point-to-point launch #2 (",
                                       {"Rank 1 has posted 1 sends to rank " + std::to_string(rank) +
                                        ", so receive #2 from rank 1 (4194304 bytes) has no match yet."}));
              return 0;
            }));
}

// The point-to-point exchange captured in a CUDA graph, replayed twice, rank 1's second replay
// late. The rank after rank 1 waits in a replay of its capture #1 for its receive: its report names
// the capture's operations and says that rank 1 waits in no replayed point-to-point launch.
TEST_F(HangReport, APointToPointReplayWaitingForItsPeerIsNamed) {
  const int n = n_;
  const std::string logDir = logDir_;
  EXPECT_EQ(0, gputest::runRanksInProcesses(n, [n, &logDir](int rank, const ncclUniqueId& id) {
              ncclComm_t comm = nullptr;
              cudaStream_t stream = nullptr;
              if (openRank(n, rank, id, &comm, &stream) != 0) return 1;
              RingExchange x;
              if (makeRingExchange(n, rank, &x) != 0) return 1;
              cudaGraph_t graph = nullptr;
              cudaGraphExec_t exec = nullptr;
              CHILD_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
              if (enqueueRingExchange(x, comm, stream) != 0) return 1;
              CHILD_CUDA(cudaStreamEndCapture(stream, &graph));
              CHILD_CUDA(cudaGraphInstantiate(&exec, graph, 0));
              for (int replay = 0; replay < 2; replay++) {
                if (replay == 1 && rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
                CHILD_CUDA(gputest::poisonSync(x.recv, 0x5a, kRingCount * sizeof(int32_t)));
                CHILD_CUDA(cudaGraphLaunch(exec, stream));
                CHILD_CUDA(cudaStreamSynchronize(stream));
              }
              if (checkRingExchange(&x) != 0) return 1;
              CHILD_CUDA(cudaGraphExecDestroy(exec));
              CHILD_CUDA(cudaGraphDestroy(graph));
              CHILD_NCCL(ncclCommDestroy(comm));
              CHILD_CUDA(cudaStreamDestroy(stream));

              const std::string log = readFile(logDir + "/log." + std::to_string(getpid()));
              if (rank == 1) {
                CHILD_EXPECT(log.find("captured in a CUDA graph") == std::string::npos);
                return 0;
              }
              if (x.prev != 1) return 0;  // the others may or may not wait, depending on FIFO room
              CHILD_EXPECT(reportNamed(rank, log,
                                       "rank " + std::to_string(rank) +
                                           ": a replay of point-to-point launch #1 captured in a CUDA graph (2 "
                                           "operations: send to rank " +
                                           std::to_string(x.next) +
                                           " (4194304 bytes); receive from rank 1 (4194304 bytes)) has been waiting",
                                       {"Rank 1 waits in no replayed point-to-point launch."}));
              return 0;
            }));
}

}  // namespace
