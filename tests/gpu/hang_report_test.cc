// Hang diagnosis on real GPUs, one process per GPU: every rank runs AllReduce #1; then every rank
// but rank 1 launches AllReduce #2 while rank 1 sleeps. With BRAID_HANG_REPORT_MS=300 the waiting
// ranks each log one WARN naming AllReduce #2, rank 1 as the rank that has not launched it (its last
// being #1), and themselves as running it. Rank 1 then joins, the AllReduce completes exactly, and
// rank 1, which never waited, logs no report. Braid only (NVIDIA's NCCL has no such report).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
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
std::string runningRanks(int n) {
  std::string out = "0";
  if (n == 3) out += ", 2";
  if (n == 4) out += ", 2, 3";
  if (n > 4) out += ", 2-" + std::to_string(n - 1);
  return out;
}

TEST(HangReport, TheRanksThatHaveNotLaunchedACollectiveAreNamed) {
  const int n = std::min(gputest::gpuCount(), 4);
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  if (colltest::againstReference()) GTEST_SKIP() << "a Braid feature";
  char dir[] = "/tmp/braid_hang_XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir));
  const std::string logDir = dir;
  colltest::ScopedSetenv debug("NCCL_DEBUG", "WARN");
  colltest::ScopedSetenv debugFile("NCCL_DEBUG_FILE", (logDir + "/log.%p").c_str());
  colltest::ScopedSetenv reportMs("BRAID_HANG_REPORT_MS", "300");
  colltest::ScopedSetenv watchMs("BRAID_PEER_WATCH_MS", "100");
  EXPECT_EQ(0, gputest::runRanksInProcesses(n, [n, &logDir](int rank, const ncclUniqueId& id) {
              alarm(60);
              CHILD_CUDA(cudaSetDevice(rank));
              ncclComm_t comm = nullptr;
              CHILD_NCCL(ncclCommInitRank(&comm, n, id, rank));
              cudaStream_t stream = nullptr;
              CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
              constexpr size_t kCount = 1 << 20;
              int32_t* buf = nullptr;
              CHILD_CUDA(cudaMalloc(&buf, kCount * sizeof(int32_t)));
              std::vector<int32_t> host(kCount);
              for (size_t i = 0; i < kCount; i++) host[i] = static_cast<int32_t>(i % 1000) * (rank + 1);
              CHILD_CUDA(cudaMemcpy(buf, host.data(), kCount * sizeof(int32_t), cudaMemcpyHostToDevice));
              CHILD_NCCL(ncclAllReduce(buf, buf, kCount, ncclInt32, ncclSum, comm, stream));  // #1
              CHILD_CUDA(cudaStreamSynchronize(stream));
              if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));            // the others wait in #2
              CHILD_NCCL(ncclAllReduce(buf, buf, kCount, ncclInt32, ncclSum, comm, stream));  // #2
              CHILD_CUDA(cudaStreamSynchronize(stream));
              CHILD_CUDA(cudaMemcpy(host.data(), buf, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
              const int32_t factor = n * (n * (n + 1) / 2);  // summed twice
              for (size_t i = 0; i < kCount; i++) CHILD_EXPECT(host[i] == static_cast<int32_t>(i % 1000) * factor);
              CHILD_NCCL(ncclCommDestroy(comm));
              CHILD_CUDA(cudaStreamDestroy(stream));
              CHILD_CUDA(cudaFree(buf));

              const std::string log = readFile(logDir + "/log." + std::to_string(getpid()));
              const std::string head = "rank " + std::to_string(rank) + ": AllReduce #2 (1048576 x int32, sum, ";
              if (rank == 1) {
                CHILD_EXPECT(log.find("has not completed") == std::string::npos);
                return 0;
              }
              const bool named = log.find(head) != std::string::npos &&
                                 log.find("Not launched by: rank 1 (its last: #1, launched ") != std::string::npos &&
                                 log.find("Running: ranks " + runningRanks(n) + ".") != std::string::npos;
              if (!named)
                std::fprintf(stderr, "rank %d: no report naming rank 1 and AllReduce #2; log:\n%s\n", rank,
                             log.c_str());
              CHILD_EXPECT(named);
              std::fprintf(stderr, "rank %d's report: %s", rank,
                           log.substr(log.find("rank " + std::to_string(rank) + ": AllReduce")).c_str());
              return 0;
            }));
  std::filesystem::remove_all(logDir);
}

}  // namespace
