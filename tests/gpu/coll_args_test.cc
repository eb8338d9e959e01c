// Argument checks of the collectives on a real communicator of 1 and 2 GPUs
// (one process per GPU; every rank makes the same call, so a refused call can never leave a peer
// waiting). A refused call returns the documented code, its ncclGetLastError text names the
// argument, it leaves the stream untouched (cudaStreamQuery == cudaSuccess on an otherwise idle
// stream), and the communicator still computes a correct AllReduce afterwards.
//
// With BRAID_GPU_TESTS_REFERENCE=1 (running against NVIDIA's NCCL) the expectations that NCCL
// does not share are skipped: null buffers without NCCL_CHECK_POINTERS (NCCL does not check them),
// count overflow (NCCL does not check it), and the wording of the messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"

namespace {

using colltest::againstReference;
using colltest::ScopedSetenv;
using gputest::gpuCount;

constexpr unsigned kWatchdogSeconds = 120;
constexpr size_t kBufBytes = 64 * 1024;  // each device buffer
constexpr size_t kCount = 8;             // the count of the refused calls

struct ArgEnv {
  int rank = 0;
  int nranks = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
};

// An enum value as a C caller would pass it, also outside the enumerators' range (a C++ cast to
// such a value would be undefined).
template <typename E>
E rawEnum(int v) {
  static_assert(sizeof(E) == sizeof(int), "NCCL enums are 4 bytes");
  E e;
  std::memcpy(&e, &v, sizeof(e));
  return e;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A correct int32 AllReduce (every rank calls it): in[i] = 1000*rank + i, out = 500*n*(n-1) + n*i.
int allReduceWorks(ArgEnv& e) {
  const size_t count = 1024;
  std::vector<int32_t> in(count), out(count, -1);
  for (size_t i = 0; i < count; i++) in[i] = 1000 * e.rank + static_cast<int32_t>(i);
  CHILD_CUDA(gputest::uploadSync(e.send, in.data(), count * 4));
  CHILD_CUDA(gputest::poisonSync(e.recv, 0xAB, count * 4));
  CHILD_NCCL(ncclAllReduce(e.send, e.recv, count, ncclInt32, ncclSum, e.comm, e.stream));
  CHILD_CUDA(cudaStreamSynchronize(e.stream));
  CHILD_CUDA(cudaMemcpy(out.data(), e.recv, count * 4, cudaMemcpyDeviceToHost));
  const int n = e.nranks;
  for (size_t i = 0; i < count; i++) {
    int32_t want = 500 * n * (n - 1) + n * static_cast<int32_t>(i);
    if (out[i] != want) {
      std::fprintf(stderr, "rank %d: AllReduce after a refused call: [%zu] = %d, expected %d\n", e.rank, i, out[i],
                   want);
      return 1;
    }
  }
  return 0;
}

// The common checks of a refused call. `arg` (may be null) must appear in the last error's text.
int expectRefused(ArgEnv& e, ncclResult_t got, ncclResult_t want, const char* arg, const char* call,
                  bool commStillWorks = true) {
  if (got != want) {
    std::fprintf(stderr, "rank %d: %s -> %s, expected %s (last error: %s)\n", e.rank, call, ncclGetErrorString(got),
                 ncclGetErrorString(want), ncclGetLastError(e.comm));
    return 1;
  }
  std::string text = ncclGetLastError(e.comm);
  if (arg != nullptr && !againstReference() && lower(text).find(arg) == std::string::npos) {
    std::fprintf(stderr, "rank %d: %s: the last error does not name '%s': \"%s\"\n", e.rank, call, arg, text.c_str());
    return 1;
  }
  cudaError_t q = cudaStreamQuery(e.stream);
  if (q != cudaSuccess) {
    std::fprintf(stderr, "rank %d: %s was refused but the stream is not idle: %s\n", e.rank, call,
                 cudaGetErrorString(q));
    return 1;
  }
  return commStillWorks ? allReduceWorks(e) : 0;
}

#define CHILD_REFUSED(env, call, want, arg)                                \
  do {                                                                     \
    if (expectRefused((env), (call), (want), (arg), #call) != 0) return 1; \
  } while (0)

// Runs body on nranks processes (one per GPU), each with its communicator, a fresh stream and two
// device buffers of kBufBytes. Returns the number of failed ranks.
int withComms(int nranks, const std::function<int(ArgEnv&)>& body) {
  return gputest::runRanksInProcesses(nranks, [&](int rank, const ncclUniqueId& id) {
    alarm(kWatchdogSeconds);
    ArgEnv e;
    e.rank = rank;
    e.nranks = nranks;
    CHILD_CUDA(cudaSetDevice(rank));
    CHILD_NCCL(ncclCommInitRank(&e.comm, nranks, id, rank));
    CHILD_CUDA(cudaStreamCreateWithFlags(&e.stream, cudaStreamNonBlocking));
    CHILD_CUDA(cudaMalloc(&e.send, kBufBytes));
    CHILD_CUDA(cudaMalloc(&e.recv, kBufBytes));
    CHILD_CUDA(cudaDeviceSynchronize());
    int rc = body(e);
    CHILD_CUDA(cudaFree(e.send));
    CHILD_CUDA(cudaFree(e.recv));
    CHILD_CUDA(cudaStreamDestroy(e.stream));
    CHILD_NCCL(ncclCommDestroy(e.comm));
    return rc;
  });
}

class CollArgs : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gpuCount() < GetParam()) {
      GTEST_SKIP() << "needs " << GetParam() << " GPUs; this machine has " << gpuCount();
    }
  }
  int nranks() const { return GetParam(); }
};

TEST_P(CollArgs, NullBuffersWithNonzeroCount) {
  if (againstReference()) GTEST_SKIP() << "NCCL checks pointers only under NCCL_CHECK_POINTERS=1";
  EXPECT_EQ(
      0, withComms(nranks(), [](ArgEnv& e) {
        const ncclDataType_t f = ncclFloat32;
        CHILD_REFUSED(e, ncclAllReduce(nullptr, e.recv, kCount, f, ncclSum, e.comm, e.stream), ncclInvalidArgument,
                      "sendbuff");
        CHILD_REFUSED(e, ncclAllReduce(e.send, nullptr, kCount, f, ncclSum, e.comm, e.stream), ncclInvalidArgument,
                      "recvbuff");
        // Broadcast writes recvbuff on every rank; Reduce reads sendbuff on every rank.
        CHILD_REFUSED(e, ncclBroadcast(e.send, nullptr, kCount, f, 0, e.comm, e.stream), ncclInvalidArgument,
                      "recvbuff");
        CHILD_REFUSED(e, ncclReduce(nullptr, e.recv, kCount, f, ncclSum, 0, e.comm, e.stream), ncclInvalidArgument,
                      "sendbuff");
        CHILD_REFUSED(e, ncclAllGather(nullptr, e.recv, kCount, f, e.comm, e.stream), ncclInvalidArgument, "sendbuff");
        CHILD_REFUSED(e, ncclAllGather(e.send, nullptr, kCount, f, e.comm, e.stream), ncclInvalidArgument, "recvbuff");
        CHILD_REFUSED(e, ncclReduceScatter(nullptr, e.recv, kCount, f, ncclSum, e.comm, e.stream), ncclInvalidArgument,
                      "sendbuff");
        CHILD_REFUSED(e, ncclReduceScatter(e.send, nullptr, kCount, f, ncclSum, e.comm, e.stream), ncclInvalidArgument,
                      "recvbuff");
        return 0;
      }));
}

// Count 0 is a no-op, whatever the buffers: success, and nothing is enqueued on the stream.
TEST_P(CollArgs, ZeroCountWithNullBuffers) {
  EXPECT_EQ(0, withComms(nranks(), [](ArgEnv& e) {
              const ncclDataType_t f = ncclFloat32;
              const cudaStream_t s = e.stream;
              CHILD_NCCL(ncclAllReduce(nullptr, nullptr, 0, f, ncclSum, e.comm, s));
              CHILD_NCCL(ncclBroadcast(nullptr, nullptr, 0, f, 0, e.comm, s));
              CHILD_NCCL(ncclReduce(nullptr, nullptr, 0, f, ncclSum, 0, e.comm, s));
              CHILD_NCCL(ncclAllGather(nullptr, nullptr, 0, f, e.comm, s));
              CHILD_NCCL(ncclReduceScatter(nullptr, nullptr, 0, f, ncclSum, e.comm, s));
              if (!againstReference()) CHILD_CUDA(cudaStreamQuery(s));
              return allReduceWorks(e);
            }));
}

TEST_P(CollArgs, InvalidDatatype) {
  EXPECT_EQ(0, withComms(nranks(), [](ArgEnv& e) {
              for (int raw : {static_cast<int>(ncclNumTypes), -1}) {
                auto t = rawEnum<ncclDataType_t>(raw);
                std::fprintf(stderr, "datatype %d\n", raw);
                CHILD_REFUSED(e, ncclAllReduce(e.send, e.recv, kCount, t, ncclSum, e.comm, e.stream),
                              ncclInvalidArgument, "datatype");
                CHILD_REFUSED(e, ncclBroadcast(e.send, e.recv, kCount, t, 0, e.comm, e.stream), ncclInvalidArgument,
                              "datatype");
                CHILD_REFUSED(e, ncclReduce(e.send, e.recv, kCount, t, ncclSum, 0, e.comm, e.stream),
                              ncclInvalidArgument, "datatype");
                CHILD_REFUSED(e, ncclAllGather(e.send, e.recv, kCount, t, e.comm, e.stream), ncclInvalidArgument,
                              "datatype");
                CHILD_REFUSED(e, ncclReduceScatter(e.send, e.recv, kCount, t, ncclSum, e.comm, e.stream),
                              ncclInvalidArgument, "datatype");
              }
              return 0;
            }));
}

// ncclNumOps is the first value ncclRedOpCreatePreMulSum would hand out; none was created here.
TEST_P(CollArgs, InvalidOp) {
  EXPECT_EQ(0, withComms(nranks(), [](ArgEnv& e) {
              for (int raw : {static_cast<int>(ncclNumOps), 17}) {
                auto op = rawEnum<ncclRedOp_t>(raw);
                std::fprintf(stderr, "op %d\n", raw);
                CHILD_REFUSED(e, ncclAllReduce(e.send, e.recv, kCount, ncclFloat32, op, e.comm, e.stream),
                              ncclInvalidArgument, "op");
                CHILD_REFUSED(e, ncclReduce(e.send, e.recv, kCount, ncclFloat32, op, 0, e.comm, e.stream),
                              ncclInvalidArgument, "op");
                CHILD_REFUSED(e, ncclReduceScatter(e.send, e.recv, kCount, ncclFloat32, op, e.comm, e.stream),
                              ncclInvalidArgument, "op");
              }
              return 0;
            }));
}

TEST_P(CollArgs, InvalidRoot) {
  EXPECT_EQ(0, withComms(nranks(), [](ArgEnv& e) {
              for (int root : {-1, e.nranks}) {
                std::fprintf(stderr, "root %d\n", root);
                CHILD_REFUSED(e, ncclBroadcast(e.send, e.recv, kCount, ncclFloat32, root, e.comm, e.stream),
                              ncclInvalidArgument, "root");
                CHILD_REFUSED(e, ncclReduce(e.send, e.recv, kCount, ncclFloat32, ncclSum, root, e.comm, e.stream),
                              ncclInvalidArgument, "root");
              }
              return 0;
            }));
}

// Byte sizes that do not fit in size_t. For AllGather/ReduceScatter the per-rank size fits and
// only the whole buffer (times nranks) overflows when nranks > 1.
TEST_P(CollArgs, CountWhoseByteSizeOverflows) {
  if (againstReference()) GTEST_SKIP() << "NCCL does not check the byte size of the count";
  EXPECT_EQ(
      0, withComms(nranks(), [](ArgEnv& e) {
        const size_t huge = SIZE_MAX / 4 + 1;  // x 4 bytes overflows
        const size_t perRank = SIZE_MAX / (4 * static_cast<size_t>(e.nranks)) + 1;
        const ncclDataType_t f = ncclFloat32;
        CHILD_REFUSED(e, ncclAllReduce(e.send, e.recv, huge, f, ncclSum, e.comm, e.stream), ncclInvalidArgument,
                      "count");
        CHILD_REFUSED(e, ncclBroadcast(e.send, e.recv, huge, f, 0, e.comm, e.stream), ncclInvalidArgument, "count");
        CHILD_REFUSED(e, ncclReduce(e.send, e.recv, huge, f, ncclSum, 0, e.comm, e.stream), ncclInvalidArgument,
                      "count");
        CHILD_REFUSED(e, ncclAllGather(e.send, e.recv, perRank, f, e.comm, e.stream), ncclInvalidArgument, "count");
        CHILD_REFUSED(e, ncclReduceScatter(e.send, e.recv, perRank, f, ncclSum, e.comm, e.stream), ncclInvalidArgument,
                      "count");
        CHILD_REFUSED(e, ncclAllReduce(e.send, e.recv, SIZE_MAX, ncclInt64, ncclSum, e.comm, e.stream),
                      ncclInvalidArgument, "count");
        return 0;
      }));
}

// Under NCCL_CHECK_POINTERS=1: host memory, null, and a buffer of another GPU are refused.
TEST_P(CollArgs, CheckPointersRefusesHostAndOtherGpuBuffers) {
  ScopedSetenv env("NCCL_CHECK_POINTERS", "1");  // before the fork: seen before the first NCCL call
  const bool otherGpu = gpuCount() >= 2;
  EXPECT_EQ(0, withComms(nranks(), [otherGpu](ArgEnv& e) {
              const ncclDataType_t f = ncclFloat32;
              std::vector<float> host(kBufBytes / 4, 1.0f);
              CHILD_REFUSED(e, ncclAllReduce(host.data(), e.recv, kCount, f, ncclSum, e.comm, e.stream),
                            ncclInvalidArgument, "sendbuff");
              CHILD_REFUSED(e, ncclAllReduce(e.send, host.data(), kCount, f, ncclSum, e.comm, e.stream),
                            ncclInvalidArgument, "recvbuff");
              CHILD_REFUSED(e, ncclAllGather(host.data(), e.recv, kCount, f, e.comm, e.stream), ncclInvalidArgument,
                            "sendbuff");
              CHILD_REFUSED(e, ncclAllReduce(nullptr, e.recv, kCount, f, ncclSum, e.comm, e.stream),
                            ncclInvalidArgument, "sendbuff");
              if (!otherGpu) return 0;
              const int other = (e.rank + 1) % std::max(2, e.nranks);
              void* foreign = nullptr;
              CHILD_CUDA(cudaSetDevice(other));
              CHILD_CUDA(cudaMalloc(&foreign, kBufBytes));
              CHILD_CUDA(cudaSetDevice(e.rank));
              CHILD_REFUSED(e, ncclAllReduce(foreign, e.recv, kCount, f, ncclSum, e.comm, e.stream),
                            ncclInvalidArgument, "sendbuff");
              CHILD_REFUSED(e, ncclReduceScatter(e.send, foreign, kCount, f, ncclSum, e.comm, e.stream),
                            ncclInvalidArgument, "recvbuff");
              CHILD_CUDA(cudaFree(foreign));
              return 0;
            }));
}

// A call refused inside a group fails the whole group, as in NCCL: ncclGroupEnd returns its error
// and launches none of the group's operations (a valid AllReduce, a send and a receive queued
// before and after it), so the receive buffer keeps its poison; the communicator works afterwards.
TEST_P(CollArgs, ARefusedCallFailsItsWholeGroup) {
  EXPECT_EQ(
      0, withComms(nranks(), [](ArgEnv& e) {
        const size_t count = 1024;
        CHILD_CUDA(gputest::poisonSync(e.recv, 0xAB, kBufBytes));
        const int peer = (e.rank + 1) % e.nranks;
        const int from = (e.rank + e.nranks - 1) % e.nranks;
        char* half = static_cast<char*>(e.recv) + kBufBytes / 2;
        CHILD_NCCL(ncclGroupStart());
        CHILD_NCCL(ncclAllReduce(e.send, e.recv, count, ncclInt32, ncclSum, e.comm, e.stream));
        const ncclResult_t bad =
            ncclAllReduce(e.send, e.recv, count, rawEnum<ncclDataType_t>(ncclNumTypes), ncclSum, e.comm, e.stream);
        CHILD_NCCL(ncclSend(e.send, count, ncclInt32, peer, e.comm, e.stream));
        CHILD_NCCL(ncclRecv(half, count, ncclInt32, from, e.comm, e.stream));
        const ncclResult_t end = ncclGroupEnd();
        if (bad != ncclInvalidArgument || end != ncclInvalidArgument) {
          std::fprintf(stderr, "rank %d: the refused call gave %s and ncclGroupEnd %s, expected %s for both\n", e.rank,
                       ncclGetErrorString(bad), ncclGetErrorString(end), ncclGetErrorString(ncclInvalidArgument));
          return 1;
        }
        CHILD_CUDA(cudaStreamSynchronize(e.stream));
        // NVIDIA's NCCL copies a one-rank AllReduce at the call, before its group has ended.
        if (againstReference() && e.nranks == 1) return allReduceWorks(e);
        std::vector<uint8_t> recv(kBufBytes);
        CHILD_CUDA(cudaMemcpy(recv.data(), e.recv, kBufBytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < kBufBytes; i++) {
          if (recv[i] != 0xAB) {
            std::fprintf(stderr,
                         "rank %d: byte %zu of the receive buffer was written (0x%02x): the failed "
                         "group launched\n",
                         e.rank, i, recv[i]);
            return 1;
          }
        }
        return allReduceWorks(e);
      }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, CollArgs, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

// ---- NCCL_ALGO / NCCL_PROTO filters (2 GPUs: a single rank may skip algorithm selection) ----------

class CollFilters : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs; this machine has " << gpuCount();
  }
};

// Tree exists for AllReduce only (in NCCL too): under NCCL_ALGO=tree Broadcast has nothing left and
// is refused, while AllReduce runs on a tree even on one host (a chain of its GPUs) and is correct.
TEST_F(CollFilters, AlgoTreeRunsAllReduceAndLeavesBroadcastNothing) {
  ScopedSetenv env("NCCL_ALGO", "tree");
  EXPECT_EQ(0, withComms(2, [](ArgEnv& e) {
              return expectRefused(e, ncclBroadcast(e.send, e.recv, kCount, ncclFloat32, 0, e.comm, e.stream),
                                   ncclInvalidUsage, nullptr, "Broadcast under NCCL_ALGO=tree");  // then AllReduce
            }));
}

// NCCL 2.31 and later: NCCL_ALGO entries that name functions give every other collective no
// algorithm. Broadcast is refused; AllReduce, named, runs on its ring (then, in expectRefused).
TEST_F(CollFilters, AlgoNamingOneCollectiveLeavesTheOthersNothing) {
  if (againstReference()) GTEST_SKIP() << "depends on the reference library's version (2.31 changed it)";
  ScopedSetenv env("NCCL_ALGO", "allreduce:ring");
  EXPECT_EQ(0, withComms(2, [](ArgEnv& e) {
              return expectRefused(e, ncclBroadcast(e.send, e.recv, kCount, ncclFloat32, 0, e.comm, e.stream),
                                   ncclInvalidUsage, "broadcast", "Broadcast under NCCL_ALGO=allreduce:ring");
            }));
}

TEST_F(CollFilters, ProtoExcludingEveryProtocolLeavesNothing) {
  ScopedSetenv env("NCCL_PROTO", "^LL,LL128,Simple");
  EXPECT_EQ(0, withComms(2, [](ArgEnv& e) {
              if (expectRefused(e, ncclAllReduce(e.send, e.recv, kCount, ncclFloat32, ncclSum, e.comm, e.stream),
                                ncclInvalidUsage, nullptr, "AllReduce under NCCL_PROTO=^LL,LL128,Simple", false) != 0) {
                return 1;
              }
              return expectRefused(e, ncclAllGather(e.send, e.recv, kCount, ncclFloat32, e.comm, e.stream),
                                   ncclInvalidUsage, nullptr, "AllGather under NCCL_PROTO=^LL,LL128,Simple", false);
            }));
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A malformed value is an error (at init or at the first collective), and a WARN names the
// variable: in ncclGetLastError, or in the NCCL_DEBUG_FILE log of the rank.
TEST_F(CollFilters, MalformedProtoIsAnError) {
  char dir[] = "/tmp/braid_args_XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir));
  const std::string logPattern = std::string(dir) + "/warn.%p.log";
  ScopedSetenv proto("NCCL_PROTO", "foo");
  ScopedSetenv debug("NCCL_DEBUG", "WARN");
  ScopedSetenv debugFile("NCCL_DEBUG_FILE", logPattern.c_str());
  const std::string logDir = dir;
  EXPECT_EQ(0, gputest::runRanksInProcesses(2, [&logDir](int rank, const ncclUniqueId& id) {
              alarm(kWatchdogSeconds);
              CHILD_CUDA(cudaSetDevice(rank));
              ncclComm_t comm = nullptr;
              ncclResult_t r = ncclCommInitRank(&comm, 2, id, rank);
              std::string where = "ncclCommInitRank";
              void* buf = nullptr;
              if (r == ncclSuccess) {
                CHILD_CUDA(cudaMalloc(&buf, kBufBytes));
                r = ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, comm, nullptr);
                where = "ncclAllReduce";
              }
              std::string text = ncclGetLastError(comm);
              std::string log = readFile(logDir + "/warn." + std::to_string(getpid()) + ".log");
              if (comm != nullptr) CHILD_NCCL(ncclCommDestroy(comm));
              if (buf != nullptr) CHILD_CUDA(cudaFree(buf));
              if (r != ncclInvalidArgument && r != ncclInvalidUsage) {
                std::fprintf(stderr, "rank %d: NCCL_PROTO=foo: %s -> %s, expected an argument/usage error\n", rank,
                             where.c_str(), ncclGetErrorString(r));
                return 1;
              }
              if (!againstReference() && text.find("NCCL_PROTO") == std::string::npos &&
                  log.find("NCCL_PROTO") == std::string::npos) {
                std::fprintf(stderr, "rank %d: no WARN names NCCL_PROTO; last error \"%s\"; log:\n%s\n", rank,
                             text.c_str(), log.c_str());
                return 1;
              }
              return 0;
            }));
  std::filesystem::remove_all(logDir);
}

}  // namespace
