// main() of every GPU test binary: exits with 77 (CTest's "skipped") and says why when this machine
// has no GPU, so a CPU-only CI reports these tests as not run, never as passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"

namespace gputest {

int runInChild(const std::function<int()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int code = body();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int gpuCount() {
  static int count = -1;
  if (count >= 0) return count;
  int fds[2];
  if (pipe(fds) != 0) return 0;
  int code = runInChild([&] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    return write(fds[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1;
  });
  int n = 0;
  if (code != 0 || read(fds[0], &n, sizeof(n)) != sizeof(n)) n = 0;
  close(fds[0]);
  close(fds[1]);
  count = n;
  return count;
}

bool quickTier() {
  const char* tier = std::getenv("BRAID_GPU_TIER");
  return tier != nullptr && std::string(tier) == "quick";
}

int quickTierRanks(const std::vector<int>& instances) {
  const int cap = std::min(gpuCount(), 4);
  int best = -1;
  for (int n : instances) {
    if (n <= cap && n > best) best = n;
  }
  return best > 0 ? best : *std::min_element(instances.begin(), instances.end());
}

bool leftOutOfQuickTier(int nranks, std::string* why, const std::vector<int>& instances) {
  if (!quickTier() || nranks == quickTierRanks(instances)) return false;
  *why =
      "quick tier (BRAID_GPU_TIER=quick) runs the " + std::to_string(quickTierRanks(instances)) + "-rank instance only";
  return true;
}

int deviceOfRank(int rank) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? rank % n : rank;
}

std::vector<int> emulatedHostSizes(int nranks) {
  std::vector<int> sizes;
  for (int perHost = nranks / 2; perHost >= 1; perHost /= 2) {
    if (emulatedHostsFit(nranks, perHost)) sizes.push_back(perHost);
  }
  return sizes;
}

int runRanksInThreads(int nranks, const std::function<int(int, const ncclUniqueId&)>& body) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  std::vector<int> rcs(nranks, 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; r++) {
    threads.emplace_back([&, r] { rcs[r] = body(r, id); });
  }
  for (std::thread& t : threads) t.join();
  return *std::max_element(rcs.begin(), rcs.end());
}

int runRanksInProcesses(int nranks, const std::function<int(int, const ncclUniqueId&)>& body) {
  // The id is made by a child too (its root thread then lives in rank 0's process, as in a real job).
  std::vector<int> pipes(2 * nranks);
  for (int r = 0; r < nranks; r++) {
    if (pipe(&pipes[2 * r]) != 0) return nranks;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(nranks);
  for (int r = 0; r < nranks; r++) {
    pids[r] = fork();
    if (pids[r] != 0) continue;
    ncclUniqueId id;
    if (r == 0) {
      if (ncclGetUniqueId(&id) != ncclSuccess) _exit(90);
      for (int p = 1; p < nranks; p++) {
        if (write(pipes[2 * p + 1], &id, sizeof(id)) != sizeof(id)) _exit(91);
      }
    } else if (read(pipes[2 * r], &id, sizeof(id)) != sizeof(id)) {
      _exit(92);
    }
    int code = body(r, id);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }
  for (int fd : pipes) close(fd);
  int failed = 0;
  for (int r = 0; r < nranks; r++) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "rank %d of %d failed (status 0x%x)\n", r, nranks, status);
      failed++;
    }
  }
  return failed;
}

size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

cudaError_t poisonSync(void* ptr, int byte, size_t bytes) {
  const cudaError_t e = cudaMemset(ptr, byte, bytes);
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

cudaError_t uploadSync(void* dst, const void* src, size_t bytes) {
  const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

}  // namespace gputest

int main(int argc, char** argv) {
  // Listing the cases needs no GPU (a check that a change kept every case runs anywhere).
  const bool listing =
      std::any_of(argv + 1, argv + argc, [](const char* a) { return std::strcmp(a, "--gtest_list_tests") == 0; });
  if (!listing && gputest::gpuCount() == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine; this test needs at least one GPU\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (gputest::quickTier()) std::printf("GPU test tier: quick (BRAID_GPU_TIER=quick); unset it for the full tier\n");
  return RUN_ALL_TESTS();
}
