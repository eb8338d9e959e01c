// How a GPU test's ranks run: one process per GPU, one thread driving every GPU inside groups, or
// one thread per GPU in one process (each thread with its own communicator, as NCCL's thread-safety
// rules allow). A test writes its body once, over the ranks its thread drives, and runs it in each
// mode. R is the test's per-rank state; it must have `int rank`, `ncclComm_t comm` and
// `cudaStream_t stream` (a non-blocking stream of the rank's GPU, made here).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "gpu_test_util.h"

namespace gputest {

enum class Mode { kProcesses, kOneThread, kThreads };

inline const char* modeName(Mode m) {
  return m == Mode::kProcesses ? "processes" : m == Mode::kOneThread ? "one thread" : "a thread per rank";
}

template <typename R>
using RanksBody = std::function<int(std::vector<R>&)>;

// One rank's communicator and stream around body (processes and threads). ranksPerHost > 0 (one
// process per rank only): the rank sets NCCL_HOSTID to emulated host rank / ranksPerHost first.
template <typename R>
int runOneRank(int nranks, int rank, const ncclUniqueId& id, const RanksBody<R>& body, int ranksPerHost = 0) {
  if (ranksPerHost > 0) enterEmulatedHost(rank / ranksPerHost);
  std::vector<R> ranks(1);
  ranks[0].rank = rank;
  CHILD_CUDA(cudaSetDevice(deviceOfRank(rank)));
  CHILD_NCCL(ncclCommInitRank(&ranks[0].comm, nranks, id, rank));
  CHILD_CUDA(cudaStreamCreateWithFlags(&ranks[0].stream, cudaStreamNonBlocking));
  int rc = body(ranks);
  CHILD_NCCL(ncclCommDestroy(ranks[0].comm));
  return rc;
}

// Runs body in `mode` on ranks 0..nranks-1 (GPU r for rank r); a watchdog alarm kills a hung run.
// ranksPerHost > 0 emulates hosts of that many ranks (kProcesses only, see runOneRank), whose ranks
// may share GPUs (deviceOfRank; check emulatedHostsFit first).
template <typename R>
int withRanks(int nranks, Mode mode, unsigned watchdogSeconds, const RanksBody<R>& body, int ranksPerHost = 0) {
  if (mode == Mode::kOneThread) {
    return runInChild([&] {
      alarm(watchdogSeconds);
      std::vector<ncclComm_t> comms(nranks);
      CHILD_NCCL(ncclCommInitAll(comms.data(), nranks, nullptr));
      std::vector<R> ranks(nranks);
      for (int r = 0; r < nranks; r++) {
        ranks[r].rank = r;
        ranks[r].comm = comms[r];
        CHILD_CUDA(cudaSetDevice(r));
        CHILD_CUDA(cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
      }
      int rc = body(ranks);
      for (R& r : ranks) CHILD_NCCL(ncclCommDestroy(r.comm));
      return rc;
    });
  }
  if (mode == Mode::kThreads) {
    return runInChild([&] {
      alarm(watchdogSeconds);
      return runRanksInThreads(nranks,
                               [&](int rank, const ncclUniqueId& id) { return runOneRank<R>(nranks, rank, id, body); });
    });
  }
  return runRanksInProcesses(nranks, [&](int rank, const ncclUniqueId& id) {
    alarm(watchdogSeconds);
    return runOneRank<R>(nranks, rank, id, body, ranksPerHost);
  });
}

}  // namespace gputest
