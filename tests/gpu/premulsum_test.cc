// ncclRedOpCreatePreMulSum on real GPUs: every rank multiplies its input by its own scalar, then the
// ranks sum. Host-immediate and device-resident scalars, floating and integer types (integers
// wrap), AllReduce / Reduce / ReduceScatter, in and out of place, small (where Direct would run:
// it must not, since it premultiplies peers' inputs with the receiver's scalar) and large; a device scalar changed
// between CUDA graph replays is read again by each replay; one rank still multiplies; an op used with another datatype,
// on another communicator or after ncclRedOpDestroy is refused. Inputs are small integers and scalars multiples of 0.5,
// so every float result is exact.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_test_util.h"

namespace {

constexpr size_t kCount = 100003;    // elements per rank block: odd, several channels' worth
constexpr size_t kSmallCount = 999;  // small enough for the one-hop Direct algorithm's sizes

int smallValue(int rank, size_t i) { return static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 17) - 8; }

// The element types under test and how the test builds and compares their values.
template <typename T>
struct Elem;
template <>
struct Elem<float> {
  static constexpr ncclDataType_t kType = ncclFloat32;
  static float make(double v) { return static_cast<float>(v); }
  static double scalar(int rank) { return 0.5 * (rank + 1); }
};
template <>
struct Elem<double> {
  static constexpr ncclDataType_t kType = ncclFloat64;
  static double make(double v) { return v; }
  static double scalar(int rank) { return 0.5 * (rank + 1); }
};
template <>
struct Elem<__half> {
  static constexpr ncclDataType_t kType = ncclFloat16;
  static __half make(double v) { return __float2half(static_cast<float>(v)); }
  static double scalar(int rank) { return 0.5 * (rank + 1); }
};
template <>
struct Elem<int32_t> {
  static constexpr ncclDataType_t kType = ncclInt32;
  static int32_t make(double v) { return static_cast<int32_t>(v); }
  static double scalar(int rank) { return 1000003.0 * (rank + 1); }  // products wrap
};
template <>
struct Elem<int8_t> {
  static constexpr ncclDataType_t kType = ncclInt8;
  static int8_t make(double v) { return static_cast<int8_t>(v); }
  static double scalar(int rank) { return 37.0 * (rank + 1) - 100; }  // products wrap
};

// What the ranks' premultiplied sum of element i gives, as T's bits.
template <typename T>
T expected(int nranks, size_t i, const std::vector<double>& scalars) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<T>;
    U sum = 0;
    for (int r = 0; r < nranks; r++) {
      sum = static_cast<U>(sum + static_cast<U>(static_cast<U>(smallValue(r, i)) *
                                                static_cast<U>(static_cast<T>(static_cast<int64_t>(scalars[r])))));
    }
    return static_cast<T>(sum);
  } else {
    double sum = 0;
    for (int r = 0; r < nranks; r++) sum += smallValue(r, i) * scalars[r];
    return Elem<T>::make(sum);
  }
}

template <typename T>
bool sameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename T>
std::string bitsText(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(bits));
  return text;
}

struct Comm {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int rank = 0;
  int nranks = 0;
};

// One PreMulSum collective of type T with this rank's scalar (host or device), checked.
template <typename T>
int runOne(const Comm& c, const char* coll, bool onDevice, bool inPlace, size_t count) {
  const int n = c.nranks;
  std::vector<double> scalars(n);
  for (int r = 0; r < n; r++) scalars[r] = Elem<T>::scalar(r);
  const bool scatter = std::strcmp(coll, "reducescatter") == 0;
  const size_t total = scatter ? count * n : count;  // elements of the input
  std::vector<T> input(total);
  for (size_t i = 0; i < total; i++) input[i] = Elem<T>::make(smallValue(c.rank, i));
  T* send = nullptr;
  T* recv = nullptr;
  CHILD_CUDA(cudaMalloc(&send, total * sizeof(T)));
  CHILD_CUDA(cudaMalloc(&recv, total * sizeof(T)));
  CHILD_CUDA(gputest::uploadSync(send, input.data(), total * sizeof(T)));
  CHILD_CUDA(gputest::poisonSync(recv, 0x5a, total * sizeof(T)));
  T* out = inPlace ? send : recv;
  if (inPlace && scatter) out = send + static_cast<size_t>(c.rank) * count;

  T mine = Elem<T>::make(scalars[c.rank]);
  T* devScalar = nullptr;
  ncclRedOp_t op = ncclSum;
  if (onDevice) {
    CHILD_CUDA(cudaMalloc(&devScalar, sizeof(T)));
    CHILD_CUDA(gputest::uploadSync(devScalar, &mine, sizeof(T)));
    CHILD_NCCL(ncclRedOpCreatePreMulSum(&op, devScalar, Elem<T>::kType, ncclScalarDevice, c.comm));
  } else {
    CHILD_NCCL(ncclRedOpCreatePreMulSum(&op, &mine, Elem<T>::kType, ncclScalarHostImmediate, c.comm));
    mine = Elem<T>::make(99);  // the op copied the scalar when it was created
  }
  const int root = 1 % n;
  if (std::strcmp(coll, "allreduce") == 0) {
    CHILD_NCCL(ncclAllReduce(send, out, count, Elem<T>::kType, op, c.comm, c.stream));
  } else if (std::strcmp(coll, "reduce") == 0) {
    CHILD_NCCL(ncclReduce(send, out, count, Elem<T>::kType, op, root, c.comm, c.stream));
  } else {
    CHILD_NCCL(ncclReduceScatter(send, out, count, Elem<T>::kType, op, c.comm, c.stream));
  }
  CHILD_NCCL(ncclRedOpDestroy(op, c.comm));  // allowed as soon as the last call naming it returned
  CHILD_CUDA(cudaStreamSynchronize(c.stream));

  if (std::strcmp(coll, "reduce") != 0 || c.rank == root) {
    std::vector<T> got(count);
    CHILD_CUDA(cudaMemcpy(got.data(), out, count * sizeof(T), cudaMemcpyDeviceToHost));
    const size_t base = scatter ? static_cast<size_t>(c.rank) * count : 0;
    int wrong = 0;
    for (size_t i = 0; i < count; i++) {
      const T want = expected<T>(n, base + i, scalars);
      if (!sameBits(got[i], want) && wrong++ < 4) {
        std::fprintf(stderr, "%s type %d %s %s count %zu: rank %d element %zu is %s, not %s\n", coll,
                     static_cast<int>(Elem<T>::kType), onDevice ? "device" : "host",
                     inPlace ? "in place" : "out of place", count, c.rank, i, bitsText(got[i]).c_str(),
                     bitsText(want).c_str());
      }
    }
    if (wrong > 0) {
      std::fprintf(stderr, "rank %d: %d of %zu elements differ\n", c.rank, wrong, count);
      return 1;
    }
  }
  CHILD_CUDA(cudaFree(send));
  CHILD_CUDA(cudaFree(recv));
  if (devScalar != nullptr) CHILD_CUDA(cudaFree(devScalar));
  return 0;
}

template <typename T>
int runType(const Comm& c, bool onDevice) {
  for (const char* coll : {"allreduce", "reduce", "reducescatter"}) {
    for (bool inPlace : {false, true}) {
      for (size_t count : {kSmallCount, kCount}) {
        if (runOne<T>(c, coll, onDevice, inPlace, count) != 0) return 1;
      }
    }
  }
  return 0;
}

int openComm(int rank, int nranks, const ncclUniqueId& id, Comm* c) {
  CHILD_CUDA(cudaSetDevice(rank));
  CHILD_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  CHILD_NCCL(ncclCommInitRank(&c->comm, nranks, id, rank));
  c->rank = rank;
  c->nranks = nranks;
  return 0;
}

int closeComm(Comm* c) {
  CHILD_NCCL(ncclCommDestroy(c->comm));
  CHILD_CUDA(cudaStreamDestroy(c->stream));
  return 0;
}

class PreMulSum : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < GetParam()) GTEST_SKIP() << "needs " << GetParam() << " GPUs";
    std::string tier;
    if (gputest::leftOutOfQuickTier(GetParam(), &tier)) GTEST_SKIP() << tier;
  }
};

TEST_P(PreMulSum, EveryRankItsOwnScalarHostAndDevice) {
  const int n = GetParam();
  EXPECT_EQ(0, gputest::runRanksInProcesses(n, [n](int rank, const ncclUniqueId& id) {
              Comm c;
              if (openComm(rank, n, id, &c) != 0) return 1;
              if (runType<float>(c, false) != 0 || runType<double>(c, true) != 0) return 1;
              if (runType<__half>(c, true) != 0 || runType<int32_t>(c, false) != 0) return 1;
              if (runType<int8_t>(c, true) != 0) return 1;
              return closeComm(&c);
            }));
}

// A captured AllReduce with a device scalar: each replay multiplies by the scalar's value then.
TEST_P(PreMulSum, GraphReplayReadsTheDeviceScalarAgain) {
  const int n = GetParam();
  EXPECT_EQ(0, gputest::runRanksInProcesses(n, [n](int rank, const ncclUniqueId& id) {
              Comm c;
              if (openComm(rank, n, id, &c) != 0) return 1;
              std::vector<float> input(kCount);
              for (size_t i = 0; i < kCount; i++) input[i] = static_cast<float>(smallValue(rank, i));
              float* buf = nullptr;
              float* scalar = nullptr;
              CHILD_CUDA(cudaMalloc(&buf, kCount * sizeof(float)));
              CHILD_CUDA(cudaMalloc(&scalar, sizeof(float)));
              CHILD_CUDA(gputest::uploadSync(buf, input.data(), kCount * sizeof(float)));
              float* out = nullptr;
              CHILD_CUDA(cudaMalloc(&out, kCount * sizeof(float)));
              ncclRedOp_t op = ncclSum;
              CHILD_NCCL(ncclRedOpCreatePreMulSum(&op, scalar, ncclFloat32, ncclScalarDevice, c.comm));
              cudaGraph_t graph = nullptr;
              cudaGraphExec_t exec = nullptr;
              CHILD_CUDA(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal));
              CHILD_NCCL(ncclAllReduce(buf, out, kCount, ncclFloat32, op, c.comm, c.stream));
              CHILD_CUDA(cudaStreamEndCapture(c.stream, &graph));
              CHILD_CUDA(cudaGraphInstantiate(&exec, graph, 0));
              CHILD_NCCL(ncclRedOpDestroy(op, c.comm));
              for (int replay = 0; replay < 3; replay++) {
                std::vector<double> scalars(n);
                for (int r = 0; r < n; r++) scalars[r] = 0.5 * (r + 1 + replay);
                const float mine = static_cast<float>(scalars[rank]);
                CHILD_CUDA(cudaMemcpyAsync(scalar, &mine, sizeof(float), cudaMemcpyHostToDevice, c.stream));
                CHILD_CUDA(cudaGraphLaunch(exec, c.stream));
                std::vector<float> got(kCount);
                CHILD_CUDA(cudaMemcpyAsync(got.data(), out, kCount * sizeof(float), cudaMemcpyDeviceToHost, c.stream));
                CHILD_CUDA(cudaStreamSynchronize(c.stream));
                for (size_t i = 0; i < kCount; i++) {
                  if (got[i] != expected<float>(n, i, scalars)) {
                    std::fprintf(stderr, "replay %d: rank %d element %zu is %g, expected %g\n", replay, rank, i,
                                 static_cast<double>(got[i]), static_cast<double>(expected<float>(n, i, scalars)));
                    return 1;
                  }
                }
              }
              CHILD_CUDA(cudaGraphExecDestroy(exec));
              CHILD_CUDA(cudaGraphDestroy(graph));
              CHILD_CUDA(cudaFree(buf));
              CHILD_CUDA(cudaFree(out));
              CHILD_CUDA(cudaFree(scalar));
              return closeComm(&c);
            }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, PreMulSum, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

// One rank: no peer, but the premultiplication still happens (out of place and in place); and the
// misuses: another datatype, another communicator, a destroyed op, a built-in op destroyed.
TEST(PreMulSumOneRank, MultipliesAndRefusesMisuse) {
  if (gputest::gpuCount() < 1) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, gputest::runInChild([] {
              ncclUniqueId ids[2];
              Comm a;
              Comm b;
              CHILD_NCCL(ncclGetUniqueId(&ids[0]));
              CHILD_NCCL(ncclGetUniqueId(&ids[1]));
              if (openComm(0, 1, ids[0], &a) != 0 || openComm(0, 1, ids[1], &b) != 0) return 1;
              std::vector<float> input(kCount);
              for (size_t i = 0; i < kCount; i++) input[i] = static_cast<float>(smallValue(0, i));
              float* send = nullptr;
              float* recv = nullptr;
              CHILD_CUDA(cudaMalloc(&send, kCount * sizeof(float)));
              CHILD_CUDA(cudaMalloc(&recv, kCount * sizeof(float)));
              CHILD_CUDA(gputest::uploadSync(send, input.data(), kCount * sizeof(float)));
              float three = 3.0f;
              ncclRedOp_t op = ncclSum;
              CHILD_NCCL(ncclRedOpCreatePreMulSum(&op, &three, ncclFloat32, ncclScalarHostImmediate, a.comm));
              CHILD_NCCL(ncclAllReduce(send, recv, kCount, ncclFloat32, op, a.comm, a.stream));
              CHILD_NCCL(ncclReduce(send, send, kCount, ncclFloat32, op, 0, a.comm, a.stream));  // in place
              CHILD_CUDA(cudaStreamSynchronize(a.stream));
              std::vector<float> got(kCount);
              std::vector<float> inPlace(kCount);
              CHILD_CUDA(cudaMemcpy(got.data(), recv, kCount * sizeof(float), cudaMemcpyDeviceToHost));
              CHILD_CUDA(cudaMemcpy(inPlace.data(), send, kCount * sizeof(float), cudaMemcpyDeviceToHost));
              for (size_t i = 0; i < kCount; i++) {
                CHILD_EXPECT(got[i] == 3.0f * input[i]);
                CHILD_EXPECT(inPlace[i] == 3.0f * input[i]);
              }
              CHILD_EXPECT(ncclAllReduce(send, recv, kCount, ncclFloat64, op, a.comm, a.stream) == ncclInvalidArgument);
              CHILD_EXPECT(ncclAllReduce(send, recv, kCount, ncclFloat32, op, b.comm, b.stream) == ncclInvalidArgument);
              CHILD_EXPECT(ncclRedOpDestroy(op, b.comm) == ncclInvalidArgument);
              CHILD_EXPECT(ncclRedOpDestroy(ncclSum, a.comm) == ncclInvalidArgument);
              CHILD_NCCL(ncclRedOpDestroy(op, a.comm));
              CHILD_EXPECT(ncclAllReduce(send, recv, kCount, ncclFloat32, op, a.comm, a.stream) == ncclInvalidArgument);
              CHILD_EXPECT(ncclRedOpDestroy(op, a.comm) == ncclInvalidArgument);
              CHILD_CUDA(cudaFree(send));
              CHILD_CUDA(cudaFree(recv));
              if (closeComm(&a) != 0) return 1;
              return closeComm(&b);
            }));
}

}  // namespace
