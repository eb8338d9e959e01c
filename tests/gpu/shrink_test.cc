// ncclCommShrink, ncclCommRevoke and dead peers on real GPUs, one process per GPU: a healthy shrink
// of 4 ranks to 3 (the excluded rank does not call it); a shrink with NCCL_SHRINK_ABORT after a
// rank was killed while the others were inside an AllReduce that waited for it (the parent's
// kernels are stopped, the child works, nothing waits for the dead rank); a killed rank reported
// by ncclCommGetAsyncError within 10 s, and a prompt abort after it, on one host and across emulated
// hosts (where only the network notices); finalize and destroy that do not wait for a dead peer
// nobody has marked yet (2 GPUs); ncclCommRevoke closing a communicator to new work but
// not to shrink; bad arguments refused. Every child is checked by an exact integer AllReduce over
// its members.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "child_comm_test_util.h"
#include "coll_test_util.h"
#include "gpu_test_util.h"

namespace {

using childtest::checkMembers;
using childtest::kCount;
using childtest::openParent;
using childtest::Parent;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class Shrink : public childtest::FourRanks {};

// The survivors of a kill on one host learn of it from the host-local peer watch: on hosts of one
// rank only the network can tell (DeadPeerAcrossHosts covers that).
constexpr const char* kNeedsOneHost = "every survivor learns of the kill on one host only (4 GPUs)";

// Rank 1 dies (SIGKILL, no cleanup) 300 ms after the start, while every other rank waits for it in
// an AllReduce; the survivors poll ncclCommGetAsyncError for up to 10 s. *async: its last answer.
int allReduceWhileRankOneDies(int rank, Parent& p, ncclResult_t* async) {
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGKILL);
  }
  CHILD_NCCL(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream));
  const auto start = std::chrono::steady_clock::now();
  *async = ncclSuccess;
  while (*async == ncclSuccess && secondsSince(start) < 10) {
    CHILD_NCCL(ncclCommGetAsyncError(p.comm, async));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "rank %d: async error %d after %.2f s\n", rank, static_cast<int>(*async), secondsSince(start));
  return 0;
}

TEST_F(Shrink, HealthyFourToThree) {
  EXPECT_EQ(0, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
              Parent p;
              if (openParent(rank, 4, id, &p) != 0) return 1;
              if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
              if (rank != 3) {
                const int excluded[] = {3};
                ncclComm_t child = nullptr;
                CHILD_NCCL(ncclCommShrink(p.comm, const_cast<int*>(excluded), 1, &child, nullptr, NCCL_SHRINK_DEFAULT));
                int childRank = -1;
                CHILD_NCCL(ncclCommUserRank(child, &childRank));
                CHILD_EXPECT(childRank == rank);
                if (checkMembers(child, {0, 1, 2}, rank, p) != 0) return 1;
                CHILD_NCCL(ncclCommDestroy(child));
              }
              CHILD_NCCL(ncclCommDestroy(p.comm));
              return 0;
            }));
}

// Rank 2 dies while every rank is inside an AllReduce; the others shrink it away with
// NCCL_SHRINK_ABORT, which stops their stuck kernels, and go on with 3 ranks.
TEST_F(Shrink, AbortAfterARankDiedInsideACollective) {
  EXPECT_EQ(1, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
              Parent p;
              if (openParent(rank, 4, id, &p) != 0) return 1;
              if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
              if (rank == 2) {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                ::kill(::getpid(), SIGKILL);  // no cleanup: a crashed process
              }
              // Every survivor's AllReduce waits for rank 2, which never comes.
              CHILD_NCCL(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream));
              std::this_thread::sleep_for(std::chrono::milliseconds(1000));
              CHILD_EXPECT(cudaStreamQuery(p.stream) == cudaErrorNotReady);
              const auto start = std::chrono::steady_clock::now();
              const int excluded[] = {2};
              ncclComm_t child = nullptr;
              CHILD_NCCL(ncclCommShrink(p.comm, const_cast<int*>(excluded), 1, &child, nullptr, NCCL_SHRINK_ABORT));
              const double shrinkSeconds = secondsSince(start);
              std::fprintf(stderr, "rank %d: shrink with abort took %.3f s\n", rank, shrinkSeconds);
              CHILD_EXPECT(shrinkSeconds < 10);
              CHILD_CUDA(cudaStreamSynchronize(p.stream));  // the stuck kernel has exited
              CHILD_EXPECT(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream) ==
                           ncclInvalidUsage);  // the parent is revoked
              if (checkMembers(child, {0, 1, 3}, rank, p) != 0) return 1;
              const auto destroyStart = std::chrono::steady_clock::now();
              CHILD_NCCL(ncclCommDestroy(p.comm));  // never waits for the dead rank
              CHILD_EXPECT(secondsSince(destroyStart) < 5);
              CHILD_NCCL(ncclCommDestroy(child));
              return 0;
            }));  // rank 2 was killed: the only failure
}

// Rank 1 dies while the others wait for it inside an AllReduce: within 10 s their
// ncclCommGetAsyncError says ncclRemoteError, new work is refused with it, and abort is prompt.
TEST_F(Shrink, ADeadPeerIsReportedAndAbortIsPrompt) {
  if (childtest::hostPerRank()) GTEST_SKIP() << kNeedsOneHost;
  EXPECT_EQ(
      1, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
        Parent p;
        if (openParent(rank, 4, id, &p) != 0) return 1;
        if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
        ncclResult_t async = ncclSuccess;
        if (allReduceWhileRankOneDies(rank, p, &async) != 0) return 1;
        CHILD_EXPECT(async == ncclRemoteError);
        CHILD_EXPECT(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream) == ncclRemoteError);
        const auto abortStart = std::chrono::steady_clock::now();
        CHILD_NCCL(ncclCommAbort(p.comm));
        std::fprintf(stderr, "rank %d: abort took %.3f s\n", rank, secondsSince(abortStart));
        CHILD_EXPECT(secondsSince(abortStart) < 2);
        return 0;
      }));
}

// The same across emulated hosts, one rank per host: no peer of rank 1 shares its host, so only the
// network can tell (the host-local peer watch sees nothing); the proxies of rank 1's ring neighbours
// see their connections reset. At least one survivor must report ncclRemoteError within 10 s (a
// survivor with no connection to rank 1 only waits); every survivor's abort is prompt, proxy
// threads included. Hosts may share GPUs (gputest::emulatedHostsFit): it runs on one GPU too.
TEST(DeadPeerAcrossHosts, IsReportedByTheNetwork) {
  if (!gputest::emulatedHostsFit(4, 1)) GTEST_SKIP() << "4 ranks on hosts of 1 do not fit this machine";
  colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
  char path[] = "/tmp/braid_dead_net_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string report = path;
  EXPECT_EQ(1, gputest::runRanksInProcesses(4, [&report](int rank, const ncclUniqueId& id) {
              gputest::enterEmulatedHost(rank);
              Parent p;
              if (openParent(rank, 4, id, &p) != 0) return 1;
              if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
              ncclResult_t async = ncclSuccess;
              if (allReduceWhileRankOneDies(rank, p, &async) != 0) return 1;
              CHILD_EXPECT(async == ncclSuccess || async == ncclRemoteError);
              if (async == ncclRemoteError) {
                FILE* f = std::fopen(report.c_str(), "a");
                if (f != nullptr) {
                  std::fprintf(f, "%d\n", rank);
                  std::fclose(f);
                }
              }
              const auto abortStart = std::chrono::steady_clock::now();
              CHILD_NCCL(ncclCommAbort(p.comm));
              std::fprintf(stderr, "rank %d: abort took %.3f s\n", rank, secondsSince(abortStart));
              CHILD_EXPECT(secondsSince(abortStart) < 2);
              return 0;
            }));  // rank 1 was killed: the only failure
  FILE* f = std::fopen(path, "r");
  ASSERT_NE(f, nullptr);
  int reported = 0;
  int r = -1;
  while (std::fscanf(f, "%d", &r) == 1) reported++;
  std::fclose(f);
  std::remove(path);
  EXPECT_GE(reported, 1) << "no survivor learned of the dead rank through the network";
}

// Finalize and destroy never wait for a dead peer, even when nothing has marked it yet: with the
// peer watch off (BRAID_PEER_WATCH_MS=0) rank 1 dies while rank 0 waits for it in an AllReduce;
// rank 0's ncclCommFinalize returns ncclRemoteError and its ncclCommDestroy succeeds, both within
// seconds (they used to wait forever when destroy came before the watch's next look).
TEST(DeadPeer, FinalizeAndDestroyDoNotWaitForAPeerNobodyMarkedYet) {
  if (gputest::gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  if (colltest::againstReference()) GTEST_SKIP() << "NVIDIA's NCCL waits for the dead peer forever";
  colltest::ScopedSetenv noWatch("BRAID_PEER_WATCH_MS", "0");
  EXPECT_EQ(1, gputest::runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              alarm(60);
              Parent p;
              if (openParent(rank, 2, id, &p) != 0) return 1;
              if (checkMembers(p.comm, {0, 1}, rank, p) != 0) return 1;
              if (rank == 1) {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                ::kill(::getpid(), SIGKILL);
              }
              CHILD_NCCL(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream));
              std::this_thread::sleep_for(std::chrono::milliseconds(1000));
              CHILD_EXPECT(cudaStreamQuery(p.stream) == cudaErrorNotReady);  // waiting for rank 1
              ncclResult_t async = ncclInternalError;
              CHILD_NCCL(ncclCommGetAsyncError(p.comm, &async));
              CHILD_EXPECT(async == ncclSuccess);  // nobody looked
              auto start = std::chrono::steady_clock::now();
              CHILD_EXPECT(ncclCommFinalize(p.comm) == ncclRemoteError);
              std::fprintf(stderr, "rank 0: finalize gave up on the dead peer after %.3f s\n", secondsSince(start));
              CHILD_EXPECT(secondsSince(start) < 5);
              CHILD_NCCL(ncclCommGetAsyncError(p.comm, &async));
              CHILD_EXPECT(async == ncclRemoteError);
              start = std::chrono::steady_clock::now();
              CHILD_NCCL(ncclCommDestroy(p.comm));
              std::fprintf(stderr, "rank 0: destroy took %.3f s\n", secondsSince(start));
              CHILD_EXPECT(secondsSince(start) < 5);
              CHILD_CUDA(cudaStreamSynchronize(p.stream));  // the stuck kernel was aborted
              return 0;
            }));  // rank 1 was killed: the only failure
}

TEST_F(Shrink, RevokeClosesToWorkButNotToShrink) {
  EXPECT_EQ(
      0, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
        Parent p;
        if (openParent(rank, 4, id, &p) != 0) return 1;
        CHILD_EXPECT(ncclCommRevoke(p.comm, 1) == ncclInvalidArgument);
        CHILD_NCCL(ncclCommRevoke(p.comm, NCCL_REVOKE_DEFAULT));
        CHILD_NCCL(ncclCommRevoke(p.comm, NCCL_REVOKE_DEFAULT));  // again: nothing more to do
        CHILD_EXPECT(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream) == ncclInvalidUsage);
        ncclComm_t child = nullptr;
        CHILD_NCCL(ncclCommShrink(p.comm, nullptr, 0, &child, nullptr, NCCL_SHRINK_DEFAULT));
        if (checkMembers(child, {0, 1, 2, 3}, rank, p) != 0) return 1;
        CHILD_NCCL(ncclCommDestroy(child));
        CHILD_NCCL(ncclCommDestroy(p.comm));
        return 0;
      }));
}

TEST_F(Shrink, BadArgumentsAreRefused) {
  EXPECT_EQ(
      0, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
        Parent p;
        if (openParent(rank, 4, id, &p) != 0) return 1;
        ncclComm_t child = nullptr;
        int self[] = {rank};
        int outside[] = {4};
        CHILD_EXPECT(ncclCommShrink(p.comm, self, 1, &child, nullptr, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
        CHILD_EXPECT(ncclCommShrink(p.comm, outside, 1, &child, nullptr, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
        CHILD_EXPECT(ncclCommShrink(p.comm, nullptr, 1, &child, nullptr, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
        CHILD_EXPECT(ncclCommShrink(p.comm, nullptr, 0, &child, nullptr, 7) == ncclInvalidArgument);
        CHILD_EXPECT(ncclCommShrink(p.comm, nullptr, 0, nullptr, nullptr, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
        CHILD_EXPECT(child == nullptr);
        if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;  // nothing was broken
        CHILD_NCCL(ncclCommDestroy(p.comm));
        return 0;
      }));
}

}  // namespace
