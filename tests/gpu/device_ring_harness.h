// Harness of device_ring_test.cu: operation specs, host reference results and the checks, on a ring
// emulated on one GPU (device_ring_emulation.h). See device_ring_test.cu for what is tested.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device/dev_types.h"
#include "device/launch_kernel.h"
#include "device/reduce/work_scalar.h"
#include "device_ring_emulation.h"
#include "device_ring_reference.h"
#include "util/dtype.h"

namespace braid {
namespace devtest {

constexpr uint8_t kPoison = 0xAB;
constexpr size_t kGuardBytes = 64;
constexpr double kHangSeconds = 30;

struct OpSpec {
  CollId coll = CollId::kAllReduce;
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  double preMulScalar = 0;  // nonzero: PreMulSum with this factor
  int proto = kProtoSimple;
  DevAlgo algo = DevAlgo::kRing;  // kDirect: LL or Simple, on the emulation's direct channels
  bool twoShot = false;           // kDirect AllReduce on Simple: reduce-scatter then all-gather
  // kDirect on Simple: the symmetric kernels, on the ranks' buffers themselves (every rank's area
  // is one stride after the previous rank's, as a window's flat mapping; rankStep must be 0).
  bool symmetric = false;
  int64_t count = 0;  // AllGather: per-rank send count; ReduceScatter: per-rank recv count
  bool inPlace = false;
  bool misalign = false;  // user pointers offset by one element from a 256-byte boundary
  // Or, when >= 0: the send and receive pointers of rank r offset by (offsetElems + r * rankStep)
  // elements modulo one 16-byte pack (recvOffsetElems likewise; -1: the send offset).
  int offsetElems = -1;
  int recvOffsetElems = -1;
  int rankStep = 0;
  int nChannels = 1;
  uint32_t chunkBytes = 0;
  int root = 0;
  int nThreads = 0;  // 0: the protocol's maximum
  uint64_t seed = 1;
  std::string describe(int nranks) const;
};

// Launches `op` on every rank, waits (with the abort watchdog) and checks every rank's buffers.
inline bool runAndCheck(RingEmulation& ring, Buffers& buffers, const OpSpec& op);
// Launches all `ops` back to back without synchronizing between them, then checks each.
inline bool runBatchAndCheck(RingEmulation& ring, const std::vector<OpSpec>& ops);
// Launches an AllReduce on rank 0 only, checks that it waits, raises abort, checks that it exits.
inline bool abortLoneRank(RingEmulation& ring, int proto, DevAlgo algo = DevAlgo::kRing);
// Average time of an AllReduce of `bytes` of float on every rank (microseconds), or -1.
inline double timeAllReduce(RingEmulation& ring, int64_t bytes, int proto, DevAlgo algo = DevAlgo::kRing,
                            bool twoShot = false);
// The same for `coll` (bytes: its receive buffer) with user pointers offsetFloats floats past a
// 256-byte boundary.
inline double timeCollective(RingEmulation& ring, CollId coll, int64_t bytes, int proto, int offsetFloats,
                             DevAlgo algo = DevAlgo::kRing, bool twoShot = false);

// ---- implementation

inline const char* collName(CollId c) {
  switch (c) {
    case CollId::kBroadcast:
      return "Broadcast";
    case CollId::kReduce:
      return "Reduce";
    case CollId::kAllGather:
      return "AllGather";
    case CollId::kReduceScatter:
      return "ReduceScatter";
    default:
      return "AllReduce";
  }
}

inline std::string OpSpec::describe(int nranks) const {
  static const char* kProtoNames[] = {"LL", "LL128", "Simple"};
  static const char* kOpNames[] = {"sum", "prod", "max", "min", "avg"};
  const char* algoText = algo == DevAlgo::kRing ? "ring"
                         : symmetric            ? (twoShot ? "symmetric two-shot" : "symmetric")
                                                : (twoShot ? "direct two-shot" : "direct");
  char text[320];
  std::snprintf(text, sizeof(text),
                "%s nranks=%d %s proto=%s dtype=%d op=%s%s count=%lld %s%s offsets=%d/%d+%d*rank nChannels=%d "
                "chunkBytes=%u root=%d nThreads=%d seed=%llu",
                collName(coll), nranks, algoText, kProtoNames[proto], static_cast<int>(dtype),
                op >= 0 && op <= 4 ? kOpNames[op] : "?", preMulScalar != 0 ? "(premulsum)" : "",
                static_cast<long long>(count), inPlace ? "in-place" : "out-of-place", misalign ? " misaligned" : "",
                offsetElems, recvOffsetElems, rankStep, nChannels, chunkBytes, root, nThreads,
                static_cast<unsigned long long>(seed));
  return text;
}

// ---- one prepared operation: device pointers, and the expected image of every checked region

struct RankOp {
  char* sendPtr = nullptr;
  char* recvPtr = nullptr;
  char* checkPtr = nullptr;       // start of the region checked after the op (includes the guard)
  std::vector<uint8_t> expected;  // its expected bytes
  std::vector<uint8_t> isOutput;  // per element: written by the op (compared with tolerance)
  char* sendCheckPtr = nullptr;   // out of place: the send buffer, which must be left unchanged
  std::vector<uint8_t> sendExpected;
};

struct PreparedOp {
  OpSpec spec;
  int n = 0;
  DevRedOp redOp = DevRedOp::kSum;
  uint64_t scalar = 0;
  RefOp ref{};
  std::vector<RankOp> ranks;
};

inline int64_t sendElems(const OpSpec& op, int n) {
  return op.coll == CollId::kReduceScatter ? n * op.count : op.count;
}
inline int64_t recvElems(const OpSpec& op, int n) { return op.coll == CollId::kAllGather ? n * op.count : op.count; }

inline void setReduction(PreparedOp& P) {
  const OpSpec& op = P.spec;
  const ncclDataType_t t = op.dtype;
  const ncclDataType_t scalarType = (t == ncclFloat8e4m3 || t == ncclFloat8e5m2) ? ncclFloat16 : t;
  P.ref = RefOp{t, op.op, false, 1.0, P.n, 0};
  if (op.preMulScalar != 0) {
    P.redOp = DevRedOp::kPreMulSum;
    P.scalar = encodeFloat(scalarType, op.preMulScalar);
  } else if (op.op == ncclAvg) {
    P.scalar = avgScalarBits(t, P.n);
    P.redOp = isFloat(t) ? DevRedOp::kPreMulSum : DevRedOp::kSumPostDiv;
  } else {
    P.redOp = static_cast<DevRedOp>(static_cast<int>(op.op));
  }
  if (P.redOp == DevRedOp::kPreMulSum) {
    P.ref.preMul = true;
    P.ref.factor = decodeFloat(scalarType, P.scalar);
    P.ref.tolerance = avgTolerance(t);
  }
}

// Builds inputs and poisoned outputs, uploads them, and computes the expected images. `sendBase`
// and `recvBase` are each rank's device areas (large enough for the op, its misalignment and guard).
inline bool prepare(PreparedOp& P, const OpSpec& op, int n, const std::vector<char*>& sendBase,
                    const std::vector<char*>& recvBase) {
  P.spec = op;
  P.n = n;
  setReduction(P);
  const size_t es = dtypeSize(op.dtype);
  const int64_t sN = sendElems(op, n);
  const int64_t rN = recvElems(op, n);
  const int packElems = static_cast<int>(16 / es);
  auto offsetOf = [&](int elems, int r) {
    if (elems < 0) return op.misalign ? es : size_t{0};
    return static_cast<size_t>((elems + r * op.rankStep) % packElems) * es;
  };
  std::vector<std::vector<uint8_t>> inputs(n, std::vector<uint8_t>(sN * es));
  for (int r = 0; r < n; r++) {
    Rng rng{op.seed * 7919 + static_cast<uint64_t>(r) * 104729 + 1};
    for (int64_t i = 0; i < sN; i++) setBits(&inputs[r][i * es], es, genInput(rng, op.dtype, op.op, P.ref.preMul));
  }
  // Reductions over ranks of every input position (AllReduce/Reduce: count, ReduceScatter: n*count).
  std::vector<uint64_t> reduced;
  if (op.coll == CollId::kAllReduce || op.coll == CollId::kReduce || op.coll == CollId::kReduceScatter) {
    reduced.resize(sN);
    std::vector<uint64_t> vals(n);
    for (int64_t i = 0; i < sN; i++) {
      for (int r = 0; r < n; r++) vals[r] = getBits(&inputs[r][i * es], es);
      reduced[i] = reduceRef(P.ref, vals.data(), n);
    }
  }
  P.ranks.assign(n, RankOp());
  for (int r = 0; r < n; r++) {
    RankOp& R = P.ranks[r];
    int64_t regionElems = rN;
    int64_t sendOff = 0;  // in elements, inside the region (in place)
    int64_t recvOff = 0;
    if (op.inPlace) {
      if (op.coll == CollId::kAllGather) sendOff = r * op.count;
      if (op.coll == CollId::kReduceScatter) {
        regionElems = sN;
        recvOff = r * op.count;
      }
      R.checkPtr = recvBase[r] + offsetOf(op.recvOffsetElems >= 0 ? op.recvOffsetElems : op.offsetElems, r);
      R.sendPtr = R.checkPtr + sendOff * es;
      R.recvPtr = R.checkPtr + recvOff * es;
    } else {
      R.sendPtr = sendBase[r] + offsetOf(op.offsetElems, r);
      R.recvPtr = recvBase[r] + offsetOf(op.recvOffsetElems >= 0 ? op.recvOffsetElems : op.offsetElems, r);
      R.checkPtr = R.recvPtr;
      R.sendCheckPtr = R.sendPtr;
      R.sendExpected.assign(sN * es + kGuardBytes, kPoison);
      std::memcpy(R.sendExpected.data(), inputs[r].data(), sN * es);
      DEVTEST_CUDA(cudaMemcpy(R.sendPtr, R.sendExpected.data(), R.sendExpected.size(), cudaMemcpyHostToDevice));
    }
    R.expected.assign(regionElems * es + kGuardBytes, kPoison);
    if (op.inPlace) std::memcpy(R.expected.data() + sendOff * es, inputs[r].data(), sN * es);
    DEVTEST_CUDA(cudaMemcpy(R.checkPtr, R.expected.data(), R.expected.size(), cudaMemcpyHostToDevice));
    R.isOutput.assign(regionElems, 0);
    auto put = [&](int64_t pos, uint64_t bits) {
      setBits(&R.expected[pos * es], es, bits);
      R.isOutput[pos] = 1;
    };
    for (int64_t i = 0; i < op.count; i++) {
      switch (op.coll) {
        case CollId::kAllReduce:
          put(recvOff + i, reduced[i]);
          break;
        case CollId::kReduce:
          if (r == op.root) put(recvOff + i, reduced[i]);
          break;
        case CollId::kBroadcast:
          put(recvOff + i, getBits(&inputs[op.root][i * es], es));
          break;
        case CollId::kReduceScatter:
          put(recvOff + i, reduced[r * op.count + i]);
          break;
        case CollId::kAllGather:
          for (int q = 0; q < n; q++) put(recvOff + q * op.count + i, getBits(&inputs[q][i * es], es));
          break;
      }
    }
  }
  // The uploads above come from pageable memory: their last DMA may still be in flight on the
  // legacy stream, which the ring's non-blocking streams do not wait for.
  DEVTEST_CUDA(cudaDeviceSynchronize());
  return true;
}

inline bool launchRank(RingEmulation& ring, const PreparedOp& P, int r) {
  const OpSpec& op = P.spec;
  DevKernelArgs args{};
  args.comm = ring.comm(r);
  DevWork& w = args.work;
  w.sendbuff = P.ranks[r].sendPtr;
  w.recvbuff = P.ranks[r].recvPtr;
  w.count = static_cast<uint64_t>(op.count);
  w.scalar = P.scalar;
  w.root = op.root;
  w.coll = static_cast<uint8_t>(op.coll);
  w.dtype = static_cast<uint8_t>(op.dtype);
  w.redOp = static_cast<uint8_t>(P.redOp);
  w.proto = static_cast<uint8_t>(op.proto);
  w.algo = static_cast<uint8_t>(op.algo);
  w.twoShot = op.twoShot ? 1 : 0;
  if (op.symmetric && P.n > 1) {
    w.symmetric = 1;
    w.sym = DevSymmetric{P.ranks[0].sendPtr, P.ranks[0].recvPtr,
                         static_cast<uint64_t>(P.ranks[1].sendPtr - P.ranks[0].sendPtr),
                         static_cast<uint64_t>(P.ranks[1].recvPtr - P.ranks[0].recvPtr)};
  }
  w.nChannels = op.nChannels;
  w.chunkBytes = op.chunkBytes;
  const int threads = op.nThreads != 0 ? op.nThreads : (op.proto == kProtoLL128 ? 640 : 512);
  DEVTEST_CUDA(launchCollectiveKernel(args, threads, LaunchOptions{}, ring.stream(r)));
  return true;
}

// Waits for every rank's stream; past kHangSeconds raises the abort flag so the kernels exit.
inline bool waitAll(RingEmulation& ring, double limitSeconds = kHangSeconds) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    bool done = true;
    for (int r = 0; r < ring.n(); r++) {
      const cudaError_t e = cudaStreamQuery(ring.stream(r));
      if (e == cudaErrorNotReady) {
        done = false;
      } else if (e != cudaSuccess) {
        std::fprintf(stderr, "rank %d: kernel failed: %s\n", r, cudaGetErrorString(e));
        return false;
      }
    }
    if (done) return true;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > limitSeconds) {
      std::fprintf(stderr, "operation did not finish in %.0f s: raising abort\n", limitSeconds);
      ring.setAbort(1);
      cudaDeviceSynchronize();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

inline bool compareRegion(const PreparedOp& P, int r, const char* what, const char* devPtr,
                          const std::vector<uint8_t>& expected, const std::vector<uint8_t>* isOutput) {
  std::vector<uint8_t> got(expected.size());
  DEVTEST_CUDA(cudaMemcpy(got.data(), devPtr, got.size(), cudaMemcpyDeviceToHost));
  const size_t es = dtypeSize(P.spec.dtype);
  const size_t elems = (expected.size() - kGuardBytes) / es;
  int bad = 0;
  for (size_t i = 0; i < elems && bad < 5; i++) {
    const uint64_t e = getBits(&expected[i * es], es);
    const uint64_t g = getBits(&got[i * es], es);
    if (!sameElement(P.ref, e, g, isOutput != nullptr && (*isOutput)[i] != 0)) {
      std::fprintf(stderr, "rank %d %s element %zu: expected 0x%llx got 0x%llx\n", r, what, i,
                   static_cast<unsigned long long>(e), static_cast<unsigned long long>(g));
      bad++;
    }
  }
  if (std::memcmp(got.data() + elems * es, expected.data() + elems * es, kGuardBytes) != 0) {
    std::fprintf(stderr, "rank %d %s: guard bytes after the buffer were overwritten\n", r, what);
    bad++;
  }
  return bad == 0;
}

inline bool checkResults(const PreparedOp& P) {
  bool ok = true;
  for (int r = 0; r < P.n; r++) {
    const RankOp& R = P.ranks[r];
    ok = compareRegion(P, r, P.spec.inPlace ? "buffer" : "recvbuff", R.checkPtr, R.expected, &R.isOutput) && ok;
    if (R.sendCheckPtr != nullptr) ok = compareRegion(P, r, "sendbuff", R.sendCheckPtr, R.sendExpected, nullptr) && ok;
  }
  return ok;
}

inline size_t areaBytes(const OpSpec& op, int n) {
  return static_cast<size_t>(n * (op.count + 1)) * dtypeSize(op.dtype) + kGuardBytes + 256;
}

inline bool runAndCheck(RingEmulation& ring, Buffers& buffers, const OpSpec& op) {
  if (!ring.ok()) return false;
  const int n = ring.n();
  if (!buffers.reserve(8, std::max(areaBytes(op, n), size_t{40} << 20))) return false;
  std::vector<char*> sendBase(n), recvBase(n);
  for (int r = 0; r < n; r++) {
    sendBase[r] = buffers.send(r);
    recvBase[r] = buffers.recv(r);
  }
  PreparedOp P;
  if (!prepare(P, op, n, sendBase, recvBase)) return false;
  for (int r = 0; r < n; r++) {
    if (!launchRank(ring, P, r)) return false;
  }
  return waitAll(ring) && checkResults(P);
}

inline bool runBatchAndCheck(RingEmulation& ring, const std::vector<OpSpec>& ops) {
  if (!ring.ok()) return false;
  const int n = ring.n();
  std::vector<void*> allocs;
  std::vector<PreparedOp> prepared(ops.size());
  bool ok = true;
  for (size_t k = 0; k < ops.size() && ok; k++) {
    // Each rank's areas one stride apart, as Buffers lays them out.
    const size_t area = (areaBytes(ops[k], n) + 255) / 256 * 256;
    char* sendAll = nullptr;
    char* recvAll = nullptr;
    ok = cudaMalloc(&sendAll, area * n) == cudaSuccess && cudaMalloc(&recvAll, area * n) == cudaSuccess;
    allocs.push_back(sendAll);
    allocs.push_back(recvAll);
    std::vector<char*> sendBase(n), recvBase(n);
    for (int r = 0; r < n && ok; r++) {
      sendBase[r] = sendAll + area * r;
      recvBase[r] = recvAll + area * r;
    }
    ok = ok && prepare(prepared[k], ops[k], n, sendBase, recvBase);
  }
  for (size_t k = 0; k < ops.size() && ok; k++) {
    for (int r = 0; r < n && ok; r++) ok = launchRank(ring, prepared[k], r);
  }
  ok = ok && waitAll(ring);
  for (size_t k = 0; k < ops.size() && ok; k++) {
    if (!checkResults(prepared[k])) {
      std::fprintf(stderr, "operation %zu failed: %s\n", k, ops[k].describe(n).c_str());
      ok = false;
    }
  }
  for (void* p : allocs) cudaFree(p);
  return ok;
}

inline bool abortLoneRank(RingEmulation& ring, int proto, DevAlgo algo) {
  OpSpec op;
  op.coll = CollId::kAllReduce;
  op.proto = proto;
  op.algo = algo;
  op.count = 1 << 16;
  op.nChannels = ring.nChannels();
  std::vector<char*> sendBase(ring.n()), recvBase(ring.n());
  for (int r = 0; r < ring.n(); r++) {
    DEVTEST_CUDA(cudaMalloc(&sendBase[r], areaBytes(op, ring.n())));
    DEVTEST_CUDA(cudaMalloc(&recvBase[r], areaBytes(op, ring.n())));
  }
  PreparedOp P;
  bool ok = prepare(P, op, ring.n(), sendBase, recvBase) && launchRank(ring, P, 0);
  if (ok) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (cudaStreamQuery(ring.stream(0)) != cudaErrorNotReady) {
      std::fprintf(stderr, "the lone rank's kernel did not wait for its peer\n");
      ok = false;
    }
    const auto start = std::chrono::steady_clock::now();
    ring.setAbort(1);
    cudaError_t e = cudaErrorNotReady;
    while (e == cudaErrorNotReady &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 10) {
      e = cudaStreamQuery(ring.stream(0));
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("protocol %d: kernel left %.3f ms after abort (%s)\n", proto, took * 1e3, cudaGetErrorString(e));
    ok = ok && e == cudaSuccess;
  }
  cudaDeviceSynchronize();
  ring.setAbort(0);
  for (int r = 0; r < ring.n(); r++) {
    cudaFree(sendBase[r]);
    cudaFree(recvBase[r]);
  }
  return ok;
}

inline double timeAllReduce(RingEmulation& ring, int64_t bytes, int proto, DevAlgo algo, bool twoShot) {
  return timeCollective(ring, CollId::kAllReduce, bytes, proto, 0, algo, twoShot);
}

inline double timeCollective(RingEmulation& ring, CollId coll, int64_t bytes, int proto, int offsetFloats, DevAlgo algo,
                             bool twoShot) {
  const int n = ring.n();
  PreparedOp P;
  P.spec.coll = coll;
  P.spec.proto = proto;
  P.spec.algo = algo;
  P.spec.twoShot = twoShot;
  P.spec.count = coll == CollId::kAllGather ? bytes / 4 / n : bytes / 4;  // bytes: the receive buffer's
  P.spec.nChannels = ring.nChannels();
  P.n = n;
  P.ranks.assign(n, RankOp());
  std::vector<void*> allocs;
  const size_t offset = static_cast<size_t>(offsetFloats) * 4;
  for (int r = 0; r < n; r++) {
    char* send = nullptr;
    char* recv = nullptr;
    if (cudaMalloc(&send, bytes + 16) != cudaSuccess) return -1;
    if (cudaMalloc(&recv, bytes + 16) != cudaSuccess) return -1;
    cudaMemset(send, 0, bytes + 16);
    allocs.push_back(send);
    allocs.push_back(recv);
    P.ranks[r].sendPtr = send + offset;
    P.ranks[r].recvPtr = recv + offset;
  }
  constexpr int kIters = 5;
  double us = -1;
  bool ok = true;
  for (int it = 0; it < 1 + kIters && ok; it++) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < n && ok; r++) ok = launchRank(ring, P, r);
    ok = ok && waitAll(ring);
    if (it > 0)
      us = std::max(us, 0.0) +
           std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kIters;
  }
  for (void* p : allocs) cudaFree(p);
  return ok ? us : -1;
}

}  // namespace devtest
}  // namespace braid
