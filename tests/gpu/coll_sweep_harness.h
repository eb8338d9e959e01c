// The correctness sweeps' harness: cases (collective, type, op, count, in/out of place, root,
// offset), ranks as processes, threads or one thread driving every GPU, outputs poisoned before and
// checked after each operation, a chain of dependent operations. coll_sweep_fixture.h has the case
// lists of each tier and the fixture the sweeps share.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "util/dtype.h"

namespace collsweep {

using colltest::Coll;
using colltest::InputKind;
using colltest::InputSpec;
using colltest::ScopedSetenv;
using gputest::gpuCount;

// A child that has not finished by then is hung (a rank waiting for a peer that failed); SIGALRM
// kills it, and its test fails instead of the whole binary hanging.
inline constexpr unsigned kWatchdogSeconds = 300;
inline constexpr size_t kMiB = 1 << 20;
inline constexpr size_t kLargeCount = 64 * kMiB / 4;  // 64 MiB of float or int32 per rank
inline constexpr int kMaxPrintedPerCase = 5;

struct Case {
  Coll coll;
  ncclDataType_t type;
  ncclRedOp_t op;  // ignored by Broadcast and AllGather
  size_t count;    // the count argument of the call (per rank for AllGather/ReduceScatter)
  bool inPlace;
  int root;  // Broadcast and Reduce only
  InputKind kind;
  uint64_t seed;
  size_t offsetElems;  // buffers start this many elements past a cudaMalloc'd (aligned) pointer
};

inline size_t sendElems(const Case& c, int nranks) {
  return c.coll == Coll::kReduceScatter ? nranks * c.count : c.count;
}

// Elements of the buffer checked after the call, starting at the recv allocation (+ offset).
inline size_t regionElems(const Case& c, int nranks) {
  if (c.coll == Coll::kAllGather || (c.coll == Coll::kReduceScatter && c.inPlace)) return nranks * c.count;
  return c.count;
}

inline std::string describe(const Case& c, int nranks) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s %s op=%s count=%zu %s root=%d offset=%zu nranks=%d kind=%s seed=0x%llx",
                colltest::collName(c.coll), colltest::typeName(c.type),
                colltest::collReduces(c.coll) ? colltest::opName(c.op) : "-", c.count,
                c.inPlace ? "in-place" : "out-of-place", colltest::collHasRoot(c.coll) ? c.root : -1, c.offsetElems,
                nranks, c.kind == InputKind::kExact ? "exact" : "real", static_cast<unsigned long long>(c.seed));
  return buf;
}

// One rank as this thread drives it.
struct RankCtx {
  int rank = 0;
  int nranks = 0;
  int dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  char* send = nullptr;  // out-of-place inputs
  char* recv = nullptr;  // outputs and in-place buffers
  std::vector<unsigned char> hostIn, hostOut;
};

struct Resources {
  size_t sendCap = 0;
  size_t recvCap = 0;
  unsigned streamFlags = cudaStreamDefault;
  int ranksPerHost = 0;  // > 0: processes only; rank r sets NCCL_HOSTID to emulated host r / ranksPerHost
};

inline Resources resourcesFor(const std::vector<Case>& cases, int nranks) {
  Resources s;
  for (const Case& c : cases) {
    size_t es = braid::dtypeSize(c.type);
    s.sendCap = std::max(s.sendCap, (c.offsetElems + sendElems(c, nranks)) * es);
    s.recvCap = std::max(s.recvCap, (c.offsetElems + std::max(regionElems(c, nranks), sendElems(c, nranks))) * es);
  }
  s.recvCap += colltest::kGuardBytes;
  return s;
}

// Buffers of the rank's comm, stream and device must already be set.
inline int allocRank(RankCtx& ctx, const Resources& s) {
  CHILD_CUDA(cudaSetDevice(ctx.dev));
  CHILD_CUDA(cudaStreamCreateWithFlags(&ctx.stream, s.streamFlags));
  CHILD_CUDA(cudaMalloc(&ctx.send, std::max<size_t>(s.sendCap, 1)));
  CHILD_CUDA(cudaMalloc(&ctx.recv, s.recvCap));
  ctx.hostIn.resize(s.sendCap);
  ctx.hostOut.resize(s.recvCap);
  return 0;
}

inline int freeRank(RankCtx& ctx) {
  CHILD_CUDA(cudaSetDevice(ctx.dev));
  CHILD_CUDA(cudaFree(ctx.send));
  CHILD_CUDA(cudaFree(ctx.recv));
  CHILD_CUDA(cudaStreamDestroy(ctx.stream));
  CHILD_NCCL(ncclCommDestroy(ctx.comm));
  return 0;
}

struct Ptrs {
  char* send;
  char* recv;
  char* region;  // start of the checked region
};

// NCCL's in-place layouts: AllGather sendbuff = recvbuff + rank*count; ReduceScatter
// recvbuff = sendbuff + rank*count; the others sendbuff == recvbuff.
inline Ptrs casePtrs(const RankCtx& ctx, const Case& c) {
  size_t es = braid::dtypeSize(c.type);
  char* region = ctx.recv + c.offsetElems * es;
  if (!c.inPlace) return {ctx.send + c.offsetElems * es, region, region};
  size_t slot = ctx.rank * c.count * es;
  if (c.coll == Coll::kAllGather) return {region + slot, region, region};
  if (c.coll == Coll::kReduceScatter) return {region, region + slot, region};
  return {region, region, region};
}

template <typename T>
inline void fillInput(const InputSpec& in, int rank, size_t n, unsigned char* out) {
  for (size_t i = 0; i < n; i++) {
    typename T::Store v = colltest::inputBits<T>(in, rank, i);
    std::memcpy(out + i * sizeof(v), &v, sizeof(v));
  }
}

inline int prepareCase(RankCtx& ctx, const Case& c) {
  size_t es = braid::dtypeSize(c.type);
  Ptrs p = casePtrs(ctx, c);
  CHILD_CUDA(cudaSetDevice(ctx.dev));
  // Poison first, then the in-place input (if any) lands over it on the same stream.
  CHILD_CUDA(cudaMemsetAsync(p.region, colltest::kPoison, regionElems(c, ctx.nranks) * es + colltest::kGuardBytes,
                             ctx.stream));
  InputSpec in{c.seed, ctx.nranks, c.op, c.kind};
  size_t n = sendElems(c, ctx.nranks);
  colltest::dispatchType(c.type, [&](auto t) { fillInput<decltype(t)>(in, ctx.rank, n, ctx.hostIn.data()); });
  CHILD_CUDA(cudaMemcpyAsync(p.send, ctx.hostIn.data(), n * es, cudaMemcpyHostToDevice, ctx.stream));
  return 0;
}

inline ncclResult_t enqueueCase(const RankCtx& ctx, const Case& c) {
  Ptrs p = casePtrs(ctx, c);
  switch (c.coll) {
    case Coll::kAllReduce:
      return ncclAllReduce(p.send, p.recv, c.count, c.type, c.op, ctx.comm, ctx.stream);
    case Coll::kBroadcast:
      return ncclBroadcast(p.send, p.recv, c.count, c.type, c.root, ctx.comm, ctx.stream);
    case Coll::kReduce:
      return ncclReduce(p.send, p.recv, c.count, c.type, c.op, c.root, ctx.comm, ctx.stream);
    case Coll::kAllGather:
      return ncclAllGather(p.send, p.recv, c.count, c.type, ctx.comm, ctx.stream);
    case Coll::kReduceScatter:
      return ncclReduceScatter(p.send, p.recv, c.count, c.type, c.op, ctx.comm, ctx.stream);
  }
  return ncclInvalidArgument;
}

inline bool isPoison(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != colltest::kPoison) return false;
  }
  return true;
}

// Checks element e of the region of rank `me`; fills expected/got text on a mismatch.
template <typename T>
inline bool checkElement(const Case& c, const InputSpec& in, int me, size_t e, const unsigned char* bytes,
                         std::string* expected, std::string* got) {
  typename T::Store v;
  std::memcpy(&v, bytes, sizeof(v));
  switch (c.coll) {
    case Coll::kAllReduce:
      return colltest::checkReduced<T>(in, e, v, expected, got);
    case Coll::kBroadcast:
      return colltest::checkCopied<T>(in, c.root, e, v, expected, got);
    case Coll::kAllGather:
      return colltest::checkCopied<T>(in, static_cast<int>(e / c.count), e % c.count, v, expected, got);
    case Coll::kReduce:
      if (me == c.root) return colltest::checkReduced<T>(in, e, v, expected, got);
      // recvbuff is used on the root only: untouched elsewhere (in place, it still holds the input).
      if (c.inPlace) return colltest::checkCopied<T>(in, me, e, v, expected, got);
      *expected = "poison (recvbuff is not written on a non-root rank)";
      *got = "overwritten";
      return isPoison(bytes, sizeof(v));
    case Coll::kReduceScatter:
      if (!c.inPlace) return colltest::checkReduced<T>(in, me * c.count + e, v, expected, got);
      // In place, the other ranks' slots of sendbuff are inputs and stay as they were.
      if (e / c.count == static_cast<size_t>(me)) return colltest::checkReduced<T>(in, e, v, expected, got);
      return colltest::checkCopied<T>(in, me, e, v, expected, got);
  }
  return false;
}

// Returns the number of wrong elements (guard bytes included) and prints the first few.
template <typename T>
inline size_t verifyCase(const RankCtx& ctx, const Case& c) {
  InputSpec in{c.seed, ctx.nranks, c.op, c.kind};
  size_t n = regionElems(c, ctx.nranks);
  const size_t es = sizeof(typename T::Store);
  const unsigned char* out = ctx.hostOut.data();
  size_t bad = 0;
  std::string expected, got;
  for (size_t e = 0; e < n; e++) {
    if (checkElement<T>(c, in, ctx.rank, e, out + e * es, &expected, &got)) continue;
    if (bad++ < kMaxPrintedPerCase) {
      std::fprintf(stderr, "MISMATCH %s rank=%d index=%zu expected=%s got=%s\n", describe(c, ctx.nranks).c_str(),
                   ctx.rank, e, expected.c_str(), got.c_str());
    }
  }
  for (size_t b = n * es; b < n * es + colltest::kGuardBytes; b++) {
    if (out[b] == colltest::kPoison) continue;
    if (bad++ < kMaxPrintedPerCase) {
      std::fprintf(stderr, "GUARD %s rank=%d: byte %zu after the output was written (0x%02x)\n",
                   describe(c, ctx.nranks).c_str(), ctx.rank, b - n * es, out[b]);
    }
  }
  if (bad > 0) std::fprintf(stderr, "FAILED %s rank=%d: %zu wrong\n", describe(c, ctx.nranks).c_str(), ctx.rank, bad);
  return bad;
}

// Copies the region back and checks it. Returns -1 on a CUDA error, else the wrong-element count.
inline long long finishCase(RankCtx& ctx, const Case& c) {
  Ptrs p = casePtrs(ctx, c);
  size_t bytes = regionElems(c, ctx.nranks) * braid::dtypeSize(c.type) + colltest::kGuardBytes;
  cudaError_t err = cudaSetDevice(ctx.dev);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(ctx.hostOut.data(), p.region, bytes, cudaMemcpyDeviceToHost, ctx.stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx.stream);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s rank=%d: CUDA error after the call: %s\n", describe(c, ctx.nranks).c_str(), ctx.rank,
                 cudaGetErrorString(err));
    return -1;
  }
  return static_cast<long long>(
      colltest::dispatchType(c.type, [&](auto t) { return verifyCase<decltype(t)>(ctx, c); }));
}

// Calls fn on every rank this thread drives; several ranks need one group (one thread, many GPUs).
inline int grouped(const std::vector<RankCtx*>& ranks, const std::function<ncclResult_t(RankCtx&)>& fn,
                   const char* what) {
  bool group = ranks.size() > 1;
  if (group) CHILD_NCCL(ncclGroupStart());
  for (RankCtx* r : ranks) {
    ncclResult_t res = fn(*r);
    if (res != ncclSuccess) {
      std::fprintf(stderr, "%s on rank %d -> %s: %s\n", what, r->rank, ncclGetErrorString(res),
                   ncclGetLastError(nullptr));
      return 1;
    }
  }
  if (group) CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// Runs fn(rank) for every rank this thread drives, on one host thread each when there are
// several (one thread driving every GPU): the host-side input generation and checking then take
// as long as with one thread per GPU. Returns the largest result.
inline long long onEveryRank(const std::vector<RankCtx*>& ranks, const std::function<long long(RankCtx&)>& fn) {
  if (ranks.size() == 1) return fn(*ranks[0]);
  std::vector<long long> rcs(ranks.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); i++) {
    threads.emplace_back([&, i] { rcs[i] = fn(*ranks[i]); });
  }
  for (std::thread& t : threads) t.join();
  long long worst = 0;
  for (long long rc : rcs) {
    if (rc < 0) return rc;
    worst = std::max(worst, rc);
  }
  return worst;
}

// Runs every case in order on the ranks this thread drives. Keeps going after a wrong result, so
// that every rank issues the same sequence of collectives; returns 1 if anything was wrong.
inline int runCases(const std::vector<RankCtx*>& ranks, const std::vector<Case>& cases) {
  int failedCases = 0;
  for (const Case& c : cases) {
    if (onEveryRank(ranks, [&](RankCtx& r) { return prepareCase(r, c) == 0 ? 0LL : -1LL; }) < 0) return 1;
    std::string what = describe(c, ranks[0]->nranks);
    if (grouped(
            ranks, [&](RankCtx& r) { return enqueueCase(r, c); }, what.c_str()) != 0)
      return 1;
    long long bad = onEveryRank(ranks, [&](RankCtx& r) { return finishCase(r, c); });
    if (bad < 0) return 1;
    failedCases += bad > 0 ? 1 : 0;
  }
  if (failedCases > 0) std::fprintf(stderr, "%d of %zu cases wrong\n", failedCases, cases.size());
  return failedCases > 0 ? 1 : 0;
}

enum class Mode { kProcesses, kThreads, kOneThread };
using Work = std::function<int(const std::vector<RankCtx*>&)>;

inline int rankBody(int rank, int nranks, const ncclUniqueId& id, const Resources& s, const Work& work) {
  RankCtx ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.dev = gputest::deviceOfRank(rank);
  if (s.ranksPerHost > 0) {
    gputest::enterEmulatedHost(rank / s.ranksPerHost);
  }
  CHILD_CUDA(cudaSetDevice(ctx.dev));
  CHILD_NCCL(ncclCommInitRank(&ctx.comm, nranks, id, rank));
  if (allocRank(ctx, s) != 0) return 1;
  int rc = work({&ctx});
  return freeRank(ctx) != 0 ? 1 : rc;
}

inline int runThreads(int nranks, const Resources& s, const Work& work) {
  alarm(kWatchdogSeconds);
  return gputest::runRanksInThreads(
      nranks, [&](int rank, const ncclUniqueId& id) { return rankBody(rank, nranks, id, s, work); });
}

inline int runOneThread(int nranks, const Resources& s, const Work& work) {
  alarm(kWatchdogSeconds);
  std::vector<ncclComm_t> comms(nranks);
  CHILD_NCCL(ncclCommInitAll(comms.data(), nranks, nullptr));
  std::vector<RankCtx> ctxs(nranks);
  std::vector<RankCtx*> ptrs;
  for (int r = 0; r < nranks; r++) {
    ctxs[r].rank = r;
    ctxs[r].nranks = nranks;
    ctxs[r].dev = r;
    ctxs[r].comm = comms[r];
    if (allocRank(ctxs[r], s) != 0) return 1;
    ptrs.push_back(&ctxs[r]);
  }
  int rc = work(ptrs);
  for (RankCtx& c : ctxs) {
    if (freeRank(c) != 0) rc = 1;
  }
  return rc;
}

// Returns 0 when every rank passed.
inline int runMode(Mode mode, int nranks, const Resources& s, const Work& work) {
  switch (mode) {
    case Mode::kProcesses:
      return gputest::runRanksInProcesses(nranks, [&](int rank, const ncclUniqueId& id) {
        alarm(kWatchdogSeconds);
        return rankBody(rank, nranks, id, s, work);
      });
    case Mode::kThreads:
      return gputest::runInChild([&] { return runThreads(nranks, s, work); });
    case Mode::kOneThread:
      return gputest::runInChild([&] { return runOneThread(nranks, s, work); });
  }
  return 1;
}

// ---- A chain of dependent operations, no synchronization in between ------------------------------

using U32 = colltest::IntType<uint32_t, uint32_t>;

// Checks the chain's buffers on one rank (see runChain for the layout and the expected values).
inline int verifyChain(RankCtx& r, size_t count, const InputSpec& in) {
  const int n = r.nranks;
  const size_t total = (4 + n) * count;
  CHILD_CUDA(cudaSetDevice(r.dev));
  CHILD_CUDA(
      cudaMemcpyAsync(r.hostOut.data(), r.recv, total * 4 + colltest::kGuardBytes, cudaMemcpyDeviceToHost, r.stream));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  const unsigned char* out = r.hostOut.data();
  size_t bad = 0;
  auto expectWord = [&](const char* what, size_t slot, size_t i, uint32_t want) {
    uint32_t got;
    std::memcpy(&got, out + (slot * count + i) * 4, 4);
    if (got == want) return;
    if (bad++ < kMaxPrintedPerCase) {
      std::fprintf(stderr, "MISMATCH chain nranks=%d rank=%d buffer=%s index=%zu expected=%u got=%u seed=0x%llx\n", n,
                   r.rank, what, i, want, got, static_cast<unsigned long long>(in.seed));
    }
  };
  const auto un = static_cast<uint32_t>(n);
  for (size_t i = 0; i < count; i++) {
    uint32_t a = un * colltest::reduceInts<U32>(in, i);  // wrapping, like the uint32 sums on the GPU
    expectWord("A", 0, i, a);
    expectWord("B", 1, i, a);
    for (int k = 0; k < n; k++) expectWord("G", 2 + k, i, a);
    expectWord("R", 2 + n, i, un * a);
    expectWord("M", 3 + n, i, r.rank == 0 ? un * a : 0xABABABABu);
  }
  if (!isPoison(out + total * 4, colltest::kGuardBytes)) {
    bad++;
    std::fprintf(stderr, "GUARD chain rank=%d: bytes after M were written\n", r.rank);
  }
  return bad == 0 ? 0 : 1;
}

// in --AllReduce--> A --AllReduce in place--> A (n*S) --Broadcast(root last)--> B --AllGather--> G
// --ReduceScatter--> R (n*B) --Reduce Max(root 0)--> M, all enqueued back to back on one stream
// per rank, each reading the previous one's output; one synchronization at the end. recv holds
// A | B | G (n slots) | R | M.
inline int runChain(const std::vector<RankCtx*>& ranks, size_t count, uint64_t seed) {
  const int n = ranks[0]->nranks;
  InputSpec in{seed, n, ncclSum, InputKind::kExact};
  for (RankCtx* r : ranks) {
    CHILD_CUDA(cudaSetDevice(r->dev));
    CHILD_CUDA(cudaMemsetAsync(r->recv, colltest::kPoison, (4 + n) * count * 4 + colltest::kGuardBytes, r->stream));
    fillInput<U32>(in, r->rank, count, r->hostIn.data());
    CHILD_CUDA(cudaMemcpyAsync(r->send, r->hostIn.data(), count * 4, cudaMemcpyHostToDevice, r->stream));
    CHILD_CUDA(cudaStreamSynchronize(r->stream));
  }
  auto slot = [count](RankCtx& r, size_t s) { return r.recv + s * count * 4; };
  const ncclDataType_t t = ncclUint32;
  const std::vector<std::pair<const char*, std::function<ncclResult_t(RankCtx&)>>> steps = {
      {"AllReduce", [&](RankCtx& r) { return ncclAllReduce(r.send, slot(r, 0), count, t, ncclSum, r.comm, r.stream); }},
      {"AllReduce in place",
       [&](RankCtx& r) { return ncclAllReduce(slot(r, 0), slot(r, 0), count, t, ncclSum, r.comm, r.stream); }},
      {"Broadcast",
       [&](RankCtx& r) { return ncclBroadcast(slot(r, 0), slot(r, 1), count, t, n - 1, r.comm, r.stream); }},
      {"AllGather", [&](RankCtx& r) { return ncclAllGather(slot(r, 1), slot(r, 2), count, t, r.comm, r.stream); }},
      {"ReduceScatter",
       [&](RankCtx& r) { return ncclReduceScatter(slot(r, 2), slot(r, 2 + n), count, t, ncclSum, r.comm, r.stream); }},
      {"Reduce",
       [&](RankCtx& r) { return ncclReduce(slot(r, 2 + n), slot(r, 3 + n), count, t, ncclMax, 0, r.comm, r.stream); }}};
  for (const auto& step : steps) {
    if (grouped(ranks, step.second, step.first) != 0) return 1;
  }
  int rc = 0;
  for (RankCtx* r : ranks) rc |= verifyChain(*r, count, in);
  return rc;
}

}  // namespace collsweep
