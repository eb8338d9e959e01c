#include "comm_bench.h"

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "launcher.h"

namespace braidperf {
namespace {

double nowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define PERF_CHECK_NCCL(call)                                                                 \
  do {                                                                                        \
    ncclResult_t r_ = (call);                                                                 \
    if (r_ != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "braid-perf: %s failed: %s (%s)\n", #call, ncclGetErrorString(r_), \
                   ncclGetLastError(nullptr));                                                \
      return false;                                                                           \
    }                                                                                         \
  } while (0)
#define PERF_CHECK_CUDA(call)                                                             \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "braid-perf: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      return false;                                                                       \
    }                                                                                     \
  } while (0)

size_t freeDeviceBytes() {
  size_t freeBytes = 0, total = 0;
  cudaMemGetInfo(&freeBytes, &total);
  return freeBytes;
}

// Per cycle: init ms, destroy ms, device MiB taken by init; the first AllReduce's ms (connections
// included, until it completed) and the device MiB taken by init and that AllReduce together.
constexpr int kSamplesPerCycle = 5;
// The first operation: an AllReduce of 1 MiB of float, in place, in a buffer allocated before any
// communicator (so not counted as the library's memory).
constexpr size_t kFirstOpBytes = size_t{1} << 20;

double mibTaken(size_t before, size_t after) {
  return before > after ? static_cast<double>(before - after) / (1 << 20) : 0.0;
}

// One rank per worker.
bool rankBody(const Options& opt, int rank, int device, int nranks, const IdSource& ids, const Emit& emit) {
  PERF_CHECK_CUDA(cudaSetDevice(device));
  PERF_CHECK_CUDA(cudaFree(nullptr));  // the CUDA context is not the communicator's cost
  void* buff = nullptr;
  cudaStream_t stream = nullptr;
  PERF_CHECK_CUDA(cudaMalloc(&buff, kFirstOpBytes));
  PERF_CHECK_CUDA(cudaMemset(buff, 0, kFirstOpBytes));
  PERF_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int cycle = 0; cycle < opt.warmup + opt.iters; cycle++) {
    ncclUniqueId id;
    if (!ids(cycle, &id)) return false;
    size_t before = freeDeviceBytes();
    double t0 = nowMs();
    ncclComm_t comm;
    PERF_CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
    double t1 = nowMs();
    size_t afterInit = freeDeviceBytes();
    PERF_CHECK_NCCL(ncclAllReduce(buff, buff, kFirstOpBytes / sizeof(float), ncclFloat, ncclSum, comm, stream));
    PERF_CHECK_CUDA(cudaStreamSynchronize(stream));
    double t2 = nowMs();
    size_t afterOp = freeDeviceBytes();
    PERF_CHECK_NCCL(ncclCommDestroy(comm));
    double t3 = nowMs();
    if (!emit({t1 - t0, t3 - t2, mibTaken(before, afterInit), t2 - t1, mibTaken(before, afterOp)})) return false;
  }
  PERF_CHECK_CUDA(cudaStreamDestroy(stream));
  PERF_CHECK_CUDA(cudaFree(buff));
  return true;
}

// One thread, all GPUs: ncclCommInitAll, and the first AllReduce on every GPU in one group; memory
// is measured on the first GPU.
bool initAllBody(const Options& opt, int nranks, const Emit& emit) {
  std::vector<ncclComm_t> comms(nranks);
  std::vector<void*> buffs(nranks, nullptr);
  std::vector<cudaStream_t> streams(nranks, nullptr);
  for (int d = nranks - 1; d >= 0; d--) {
    PERF_CHECK_CUDA(cudaSetDevice(d));
    PERF_CHECK_CUDA(cudaFree(nullptr));
    PERF_CHECK_CUDA(cudaMalloc(&buffs[d], kFirstOpBytes));
    PERF_CHECK_CUDA(cudaMemset(buffs[d], 0, kFirstOpBytes));
    PERF_CHECK_CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
  }
  for (int cycle = 0; cycle < opt.warmup + opt.iters; cycle++) {
    size_t before = freeDeviceBytes();
    double t0 = nowMs();
    PERF_CHECK_NCCL(ncclCommInitAll(comms.data(), nranks, nullptr));
    double t1 = nowMs();
    size_t afterInit = freeDeviceBytes();
    PERF_CHECK_NCCL(ncclGroupStart());
    for (int d = 0; d < nranks; d++) {
      PERF_CHECK_NCCL(
          ncclAllReduce(buffs[d], buffs[d], kFirstOpBytes / sizeof(float), ncclFloat, ncclSum, comms[d], streams[d]));
    }
    PERF_CHECK_NCCL(ncclGroupEnd());
    for (int d = 0; d < nranks; d++) PERF_CHECK_CUDA(cudaStreamSynchronize(streams[d]));
    double t2 = nowMs();
    size_t afterOp = freeDeviceBytes();
    for (ncclComm_t c : comms) PERF_CHECK_NCCL(ncclCommDestroy(c));
    double t3 = nowMs();
    if (!emit({t1 - t0, t3 - t2, mibTaken(before, afterInit), t2 - t1, mibTaken(before, afterOp)})) return false;
  }
  for (int d = 0; d < nranks; d++) {
    PERF_CHECK_CUDA(cudaSetDevice(d));
    PERF_CHECK_CUDA(cudaStreamDestroy(streams[d]));
    PERF_CHECK_CUDA(cudaFree(buffs[d]));
  }
  return true;
}

}  // namespace

int visibleGpuCount() {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  pid_t pid = fork();
  if (pid == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    ssize_t w = write(fds[1], &n, sizeof(n));
    _exit(w == sizeof(n) ? 0 : 1);
  }
  int n = 0;
  if (read(fds[0], &n, sizeof(n)) != sizeof(n)) n = 0;
  close(fds[0]);
  close(fds[1]);
  waitpid(pid, nullptr, 0);
  return n;
}

bool runCommBench(const Options& opt, std::vector<Metric>* metrics) {
  const Layout& l = opt.layout;
  if (l.gpus > 1 && l.workers() > 1) {
    std::fprintf(stderr, "braid-perf: comm measures -g (ncclCommInitAll) only with one thread and one process\n");
    return false;
  }
  // Per cycle the slowest rank (largest memory) counts: a communicator is ready when all are.
  std::vector<std::vector<double>> worst;
  OnStep onStep = [&](int, const std::vector<std::vector<double>>& records) {
    std::vector<double> w(kSamplesPerCycle, 0.0);
    for (const std::vector<double>& r : records) {
      for (int m = 0; m < kSamplesPerCycle && m < static_cast<int>(r.size()); m++) w[m] = std::max(w[m], r[m]);
    }
    worst.push_back(w);
  };
  WorkerBody body = [&](const WorkerInfo& info, const IdSource& ids, const Emit& emit) {
    if (info.gpus > 1) return initAllBody(opt, info.gpus, emit);
    return rankBody(opt, info.firstRank, info.firstDevice, info.nranks, ids, emit);
  };
  LaunchConfig config;
  config.layout = l;
  config.timeoutSec = opt.timeoutSec;
  IdMaker makeId = [](ncclUniqueId* id) { return ncclGetUniqueId(id) == ncclSuccess; };
  if (!runWorkers(config, body, onStep, makeId)) return false;
  if (static_cast<int>(worst.size()) != opt.warmup + opt.iters) return false;
  const char* names[kSamplesPerCycle] = {"init_ms", "destroy_ms", "devmem_MiB", "first_op_ms",
                                         "devmem_after_first_op_MiB"};
  metrics->clear();
  // The first communicator of a process pays for one-time set-up; users see it at every job start.
  metrics->push_back(Metric{"first_init_ms", {worst[0][0]}});
  metrics->push_back(Metric{"first_destroy_ms", {worst[0][1]}});
  metrics->push_back(Metric{"first_op_first_comm_ms", {worst[0][3]}});
  for (int m = 0; m < kSamplesPerCycle; m++) {
    Metric metric{names[m], {}};
    for (int cycle = opt.warmup; cycle < opt.warmup + opt.iters; cycle++) metric.perCycle.push_back(worst[cycle][m]);
    metrics->push_back(metric);
  }
  return true;
}

}  // namespace braidperf
