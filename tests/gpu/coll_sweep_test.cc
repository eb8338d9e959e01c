// Correctness sweeps of the five collectives on 2 and 4 GPUs, through the public API only:
// every datatype x op x count x in/out of place x root, with ranks as one process per GPU, as one
// thread per GPU, and as one thread driving every GPU (ncclCommInitAll + grouped calls); again,
// reduced, with the SHM transport and with each protocol forced; real-valued floats; buffers
// aligned only to the element; a chain of dependent operations with no synchronization between
// them; a stream created with cudaStreamNonBlocking.
//
// Every output (and kGuardBytes after it) is poisoned before each operation; inputs are random
// and different per rank (seeded: BRAID_SWEEP_SEED=<n> replays a run, the seed is printed on
// failure); expectations and tolerances are stated in coll_test_util.h. A mismatch prints
// (collective, type, op, count, in place, root, rank, index, expected, got).
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

namespace {

using colltest::Coll;
using colltest::InputKind;
using colltest::InputSpec;
using colltest::ScopedSetenv;
using gputest::gpuCount;

// A child that has not finished by then is hung (a rank waiting for a peer that failed); SIGALRM
// kills it, and its test fails instead of the whole binary hanging.
constexpr unsigned kWatchdogSeconds = 300;
constexpr size_t kMiB = 1 << 20;
constexpr size_t kLargeCount = 64 * kMiB / 4;  // 64 MiB of float or int32 per rank
constexpr int kMaxPrintedPerCase = 5;

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

size_t sendElems(const Case& c, int nranks) { return c.coll == Coll::kReduceScatter ? nranks * c.count : c.count; }

// Elements of the buffer checked after the call, starting at the recv allocation (+ offset).
size_t regionElems(const Case& c, int nranks) {
  if (c.coll == Coll::kAllGather || (c.coll == Coll::kReduceScatter && c.inPlace)) return nranks * c.count;
  return c.count;
}

std::string describe(const Case& c, int nranks) {
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

Resources resourcesFor(const std::vector<Case>& cases, int nranks) {
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
int allocRank(RankCtx& ctx, const Resources& s) {
  CHILD_CUDA(cudaSetDevice(ctx.dev));
  CHILD_CUDA(cudaStreamCreateWithFlags(&ctx.stream, s.streamFlags));
  CHILD_CUDA(cudaMalloc(&ctx.send, std::max<size_t>(s.sendCap, 1)));
  CHILD_CUDA(cudaMalloc(&ctx.recv, s.recvCap));
  ctx.hostIn.resize(s.sendCap);
  ctx.hostOut.resize(s.recvCap);
  return 0;
}

int freeRank(RankCtx& ctx) {
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
Ptrs casePtrs(const RankCtx& ctx, const Case& c) {
  size_t es = braid::dtypeSize(c.type);
  char* region = ctx.recv + c.offsetElems * es;
  if (!c.inPlace) return {ctx.send + c.offsetElems * es, region, region};
  size_t slot = ctx.rank * c.count * es;
  if (c.coll == Coll::kAllGather) return {region + slot, region, region};
  if (c.coll == Coll::kReduceScatter) return {region, region + slot, region};
  return {region, region, region};
}

template <typename T>
void fillInput(const InputSpec& in, int rank, size_t n, unsigned char* out) {
  for (size_t i = 0; i < n; i++) {
    typename T::Store v = colltest::inputBits<T>(in, rank, i);
    std::memcpy(out + i * sizeof(v), &v, sizeof(v));
  }
}

int prepareCase(RankCtx& ctx, const Case& c) {
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

ncclResult_t enqueueCase(const RankCtx& ctx, const Case& c) {
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

bool isPoison(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != colltest::kPoison) return false;
  }
  return true;
}

// Checks element e of the region of rank `me`; fills expected/got text on a mismatch.
template <typename T>
bool checkElement(const Case& c, const InputSpec& in, int me, size_t e, const unsigned char* bytes,
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
size_t verifyCase(const RankCtx& ctx, const Case& c) {
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
long long finishCase(RankCtx& ctx, const Case& c) {
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
int grouped(const std::vector<RankCtx*>& ranks, const std::function<ncclResult_t(RankCtx&)>& fn, const char* what) {
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
long long onEveryRank(const std::vector<RankCtx*>& ranks, const std::function<long long(RankCtx&)>& fn) {
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
int runCases(const std::vector<RankCtx*>& ranks, const std::vector<Case>& cases) {
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

int rankBody(int rank, int nranks, const ncclUniqueId& id, const Resources& s, const Work& work) {
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

int runThreads(int nranks, const Resources& s, const Work& work) {
  alarm(kWatchdogSeconds);
  return gputest::runRanksInThreads(
      nranks, [&](int rank, const ncclUniqueId& id) { return rankBody(rank, nranks, id, s, work); });
}

int runOneThread(int nranks, const Resources& s, const Work& work) {
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
int runMode(Mode mode, int nranks, const Resources& s, const Work& work) {
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
int verifyChain(RankCtx& r, size_t count, const InputSpec& in) {
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
int runChain(const std::vector<RankCtx*>& ranks, size_t count, uint64_t seed) {
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

// ---- Case lists ----------------------------------------------------------------------------------

using TypeOp = std::pair<ncclDataType_t, ncclRedOp_t>;

uint64_t baseSeed() {
  static const uint64_t seed = []() -> uint64_t {
    const char* env = std::getenv("BRAID_SWEEP_SEED");
    if (env != nullptr && env[0] != '\0') return std::strtoull(env, nullptr, 0);
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  return seed;
}

std::string seedText() {
  return "base seed " + std::to_string(baseSeed()) + " (replay with BRAID_SWEEP_SEED=" + std::to_string(baseSeed()) +
         ")";
}

const std::vector<ncclDataType_t>& allTypes() {
  static const std::vector<ncclDataType_t> kTypes = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                                     ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                                     ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  return kTypes;
}
const std::vector<ncclRedOp_t>& allOps() {
  static const std::vector<ncclRedOp_t> kOps = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  return kOps;
}

std::vector<TypeOp> fullTypeOps(Coll coll) {
  std::vector<TypeOp> v;
  for (ncclDataType_t t : allTypes()) {
    if (!colltest::collReduces(coll)) {
      v.emplace_back(t, ncclSum);
      continue;
    }
    for (ncclRedOp_t op : allOps()) v.emplace_back(t, op);
  }
  return v;
}

// Every type with Sum, every op on float and int8.
std::vector<TypeOp> reducedTypeOps(Coll coll) {
  std::vector<TypeOp> v;
  for (ncclDataType_t t : allTypes()) v.emplace_back(t, ncclSum);
  if (!colltest::collReduces(coll)) return v;
  for (ncclDataType_t t : {ncclFloat32, ncclInt8}) {
    for (ncclRedOp_t op : {ncclProd, ncclMax, ncclMin, ncclAvg}) v.emplace_back(t, op);
  }
  return v;
}

struct Shape {
  std::vector<TypeOp> typeOps;
  std::vector<size_t> counts;
  std::vector<bool> inPlace = {false, true};
  std::vector<int> roots;  // empty: {0, last}
  InputKind kind = InputKind::kExact;
  size_t offsetElems = 0;
};

void addCases(Coll coll, int nranks, const Shape& shape, std::vector<Case>* out) {
  std::vector<int> roots = shape.roots.empty() ? std::vector<int>{0, nranks - 1} : shape.roots;
  if (!colltest::collHasRoot(coll)) roots = {0};
  for (const TypeOp& to : shape.typeOps) {
    for (size_t count : shape.counts) {
      for (bool inPlace : shape.inPlace) {
        for (int root : roots) {
          uint64_t seed = colltest::mix64(baseSeed() + out->size());
          out->push_back({coll, to.first, to.second, count, inPlace, root, shape.kind, seed, shape.offsetElems});
        }
      }
    }
  }
}

const std::vector<Coll>& allColls() {
  static const std::vector<Coll> kColls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
                                           Coll::kReduceScatter};
  return kColls;
}

std::vector<Case> fullSweep(Coll coll, int nranks) {
  std::vector<Case> cases;
  Shape shape;
  shape.typeOps = fullTypeOps(coll);
  shape.counts = {0, 1, 7, 1023, 4097, kMiB + 3};
  addCases(coll, nranks, shape, &cases);
  // One 64 MiB-per-rank case per type: float Sum and int32 Max (cheap host references).
  Shape large;
  large.typeOps = {{ncclFloat32, ncclSum}, {ncclInt32, ncclMax}};
  large.counts = {kLargeCount};
  large.inPlace = {false};
  large.roots = {nranks - 1};
  addCases(coll, nranks, large, &cases);
  return cases;
}

// The reduced sweep of `colls`: their reduced types and ops, counts 1, 1023 and 1 MiB + 3.
std::vector<Case> reducedSweepOf(const std::vector<Coll>& colls, int nranks) {
  std::vector<Case> cases;
  for (Coll coll : colls) {
    Shape shape;
    shape.typeOps = reducedTypeOps(coll);
    shape.counts = {1, 1023, kMiB + 3};
    addCases(coll, nranks, shape, &cases);
  }
  return cases;
}

// The quick tier's sweep of `colls` (gputest::quickTier): a float, a narrow integer and a 16-bit
// float, each with a different op where the collective reduces; counts 1, 1023 and 1 MiB + 3; in
// and out of place; the last rank as root.
std::vector<Case> quickSweepOf(const std::vector<Coll>& colls, int nranks) {
  std::vector<Case> cases;
  for (Coll coll : colls) {
    const bool reduces = colltest::collReduces(coll);
    Shape shape;
    shape.typeOps = {
        {ncclFloat32, ncclSum}, {ncclInt8, reduces ? ncclMax : ncclSum}, {ncclBfloat16, reduces ? ncclAvg : ncclSum}};
    shape.counts = {1, 1023, kMiB + 3};
    shape.roots = {nranks - 1};
    addCases(coll, nranks, shape, &cases);
  }
  return cases;
}

// The sweep that the tests of one path (a protocol, an algorithm, a transport) run: reduced, or
// quick in the quick tier.
std::vector<Case> tierSweepOf(const std::vector<Coll>& colls, int nranks) {
  return gputest::quickTier() ? quickSweepOf(colls, nranks) : reducedSweepOf(colls, nranks);
}
std::vector<Case> tierSweepAllColls(int nranks) { return tierSweepOf(allColls(), nranks); }

// ---- Tests ---------------------------------------------------------------------------------------

class CollSweep : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gpuCount() < GetParam()) {
      GTEST_SKIP() << "needs " << GetParam() << " GPUs; this machine has " << gpuCount();
    }
    std::string tier;
    if (gputest::leftOutOfQuickTier(GetParam(), &tier)) GTEST_SKIP() << tier;
  }
  int nranks() const { return GetParam(); }

  // perHost > 0: one process per GPU, NCCL_HOSTID different for each group of perHost ranks.
  void sweep(Mode mode, const std::vector<Case>& cases, unsigned streamFlags = cudaStreamDefault, int perHost = 0) {
    Resources s = resourcesFor(cases, nranks());
    s.streamFlags = streamFlags;
    if (perHost > 0) s.ranksPerHost = perHost;
    EXPECT_EQ(0, runMode(mode, nranks(), s, [&](const std::vector<RankCtx*>& r) { return runCases(r, cases); }))
        << cases.size() << " cases; " << seedText();
  }
  // Every type, op and size of one collective; in the quick tier the reduced sweep, and the modes
  // other than processes for AllReduce only.
  void full(Coll coll, Mode mode) {
    if (!gputest::quickTier()) return sweep(mode, fullSweep(coll, nranks()));
    if (mode != Mode::kProcesses && coll != Coll::kAllReduce) GTEST_SKIP() << "quick tier: AllReduce only in this mode";
    sweep(mode, reducedSweepOf({coll}, nranks()));
  }
  void chain(Mode mode) {
    const size_t count = kMiB + 3;
    Resources s;
    s.sendCap = count * 4;
    s.recvCap = (4 + nranks()) * count * 4 + colltest::kGuardBytes;
    const uint64_t seed = colltest::mix64(baseSeed());
    EXPECT_EQ(0, runMode(mode, nranks(), s, [&](const std::vector<RankCtx*>& r) { return runChain(r, count, seed); }))
        << seedText();
  }
  void reducedWithEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    // Set before the fork: each rank sees them before its first NCCL call.
    std::vector<std::unique_ptr<ScopedSetenv>> env;
    for (const auto& [name, value] : vars) env.push_back(std::make_unique<ScopedSetenv>(name, value));
    sweep(Mode::kProcesses, tierSweepAllColls(nranks()));
  }
};

TEST_P(CollSweep, AllReduceProcesses) { full(Coll::kAllReduce, Mode::kProcesses); }
TEST_P(CollSweep, AllReduceThreads) { full(Coll::kAllReduce, Mode::kThreads); }
TEST_P(CollSweep, AllReduceOneThread) { full(Coll::kAllReduce, Mode::kOneThread); }
TEST_P(CollSweep, BroadcastProcesses) { full(Coll::kBroadcast, Mode::kProcesses); }
TEST_P(CollSweep, BroadcastThreads) { full(Coll::kBroadcast, Mode::kThreads); }
TEST_P(CollSweep, BroadcastOneThread) { full(Coll::kBroadcast, Mode::kOneThread); }
TEST_P(CollSweep, ReduceProcesses) { full(Coll::kReduce, Mode::kProcesses); }
TEST_P(CollSweep, ReduceThreads) { full(Coll::kReduce, Mode::kThreads); }
TEST_P(CollSweep, ReduceOneThread) { full(Coll::kReduce, Mode::kOneThread); }
TEST_P(CollSweep, AllGatherProcesses) { full(Coll::kAllGather, Mode::kProcesses); }
TEST_P(CollSweep, AllGatherThreads) { full(Coll::kAllGather, Mode::kThreads); }
TEST_P(CollSweep, AllGatherOneThread) { full(Coll::kAllGather, Mode::kOneThread); }
TEST_P(CollSweep, ReduceScatterProcesses) { full(Coll::kReduceScatter, Mode::kProcesses); }
TEST_P(CollSweep, ReduceScatterThreads) { full(Coll::kReduceScatter, Mode::kThreads); }
TEST_P(CollSweep, ReduceScatterOneThread) { full(Coll::kReduceScatter, Mode::kOneThread); }

TEST_P(CollSweep, AllCollsShmTransport) { reducedWithEnv({{"NCCL_P2P_DISABLE", "1"}}); }
TEST_P(CollSweep, AllCollsProtoLL) { reducedWithEnv({{"NCCL_PROTO", "LL"}}); }
TEST_P(CollSweep, AllCollsProtoLL128) { reducedWithEnv({{"NCCL_PROTO", "LL128"}}); }
TEST_P(CollSweep, AllCollsProtoSimple) { reducedWithEnv({{"NCCL_PROTO", "Simple"}}); }
// Small LL operations go Direct by default where every pair is NVLink; these keep both algorithms
// covered at every size (Direct: 1 MiB + 3 takes several chunks per connection).
TEST_P(CollSweep, AllCollsRingLL) { reducedWithEnv({{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}}); }
TEST_P(CollSweep, AllCollsDirect) {
  if (colltest::againstReference()) GTEST_SKIP() << "Direct is Braid's algorithm; NCCL does not know the name";
  reducedWithEnv({{"NCCL_ALGO", "Direct"}});
}

// Tree AllReduce forced on one host (NCCL_ALGO=allreduce:tree), as NCCL allows: the host's GPUs
// form a chain (topo's singleHostTrees), over NVLink P2P, with LL and with Simple.
TEST_P(CollSweep, AllReduceTreeOnOneHost) {
  ScopedSetenv algo("NCCL_ALGO", "allreduce:tree");
  const std::vector<Case> cases = tierSweepOf({Coll::kAllReduce}, nranks());
  for (const char* proto : {"LL", "Simple"}) {
    SCOPED_TRACE(proto);
    ScopedSetenv forced("NCCL_PROTO", proto);
    sweep(Mode::kProcesses, cases, cudaStreamDefault);
  }
}

// Random reals on float and double, every op: relative tolerance 1e-5 (float) / 1e-12 (double)
// times nranks, Max/Min exact.
TEST_P(CollSweep, RealValuedFloats) {
  std::vector<Case> cases;
  for (Coll coll : {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter}) {
    Shape shape;
    for (ncclDataType_t t : {ncclFloat32, ncclFloat64}) {
      for (ncclRedOp_t op : allOps()) shape.typeOps.emplace_back(t, op);
    }
    shape.counts = {1023, kMiB + 3};
    shape.kind = InputKind::kReal;
    addCases(coll, nranks(), shape, &cases);
  }
  sweep(Mode::kProcesses, cases);
}

// Pointers aligned only to the element (one element past a cudaMalloc'd pointer): the Simple
// protocol's unaligned paths (element by element, or by words for copies), LL's partial packs.
std::vector<Case> casesAlignedOnlyToTheElement(int nranks) {
  std::vector<Case> cases;
  for (Coll coll : allColls()) {
    Shape shape;
    for (ncclDataType_t t : {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64, ncclFloat8e4m3}) {
      shape.typeOps.emplace_back(t, ncclSum);
      if (colltest::collReduces(coll)) shape.typeOps.emplace_back(t, ncclMax);
    }
    shape.counts = {7, 1023, 4097, kMiB + 3};
    shape.offsetElems = 1;
    addCases(coll, nranks, shape, &cases);
  }
  return cases;
}

TEST_P(CollSweep, BuffersAlignedOnlyToTheElement) { sweep(Mode::kProcesses, casesAlignedOnlyToTheElement(nranks())); }

// Every collective on a stream created with cudaStreamNonBlocking, from processes and from one
// thread driving every GPU.
TEST_P(CollSweep, NonBlockingStream) {
  std::vector<Case> cases;
  for (Coll coll : allColls()) {
    Shape shape;
    shape.typeOps = {{ncclFloat32, ncclSum}, {ncclInt32, ncclMax}};
    shape.counts = {4097, kMiB + 3};
    addCases(coll, nranks(), shape, &cases);
  }
  {
    SCOPED_TRACE("one process per GPU");
    sweep(Mode::kProcesses, cases, cudaStreamNonBlocking);
  }
  {
    SCOPED_TRACE("one thread driving every GPU");
    sweep(Mode::kOneThread, cases, cudaStreamNonBlocking);
  }
}

// Six dependent collectives back to back on one stream without synchronizing in between.
TEST_P(CollSweep, ChainWithoutSyncProcesses) { chain(Mode::kProcesses); }
TEST_P(CollSweep, ChainWithoutSyncOneThread) { chain(Mode::kOneThread); }

// Ranks on emulated hosts (NCCL_HOSTID differs per host): every ring crosses between them over the
// socket network on loopback, through the proxy. Hosts may share GPUs (gputest::emulatedHostsFit),
// so these run with fewer GPUs than ranks too: 4 ranks on 1 GPU are 4 hosts of 1.
class CollSweepAcrossHosts : public CollSweep {
 protected:
  void SetUp() override {
    if (hostSizes().empty()) GTEST_SKIP() << nranks() << " ranks across hosts do not fit this machine";
    std::string tier;
    if (gputest::leftOutOfQuickTier(nranks(), &tier)) GTEST_SKIP() << tier;
  }
  // Ranks per host: n / 2, then fewer, down to 1, those that fit this machine.
  std::vector<int> hostSizes() const { return gputest::emulatedHostSizes(nranks()); }
  // Hosts as large as fit: for the tests that need only one layout.
  int largestHost() const { return hostSizes().front(); }
  // The cases on every layout of hostSizes().
  void sweepEveryLayout(const std::vector<Case>& cases) {
    for (int perHost : gputest::tierHostSizes(nranks())) {
      SCOPED_TRACE(gputest::emulatedHostsName(nranks(), perHost));
      sweep(Mode::kProcesses, cases, cudaStreamDefault, perHost);
    }
  }

  ScopedSetenv ifname_{"NCCL_SOCKET_IFNAME", "lo"};
};

// Every collective; 4 ranks: 2 hosts of 2 and 4 hosts of 1; 2 ranks: 2 of 1.
TEST_P(CollSweepAcrossHosts, AllColls) { sweepEveryLayout(tierSweepAllColls(nranks())); }

// Buffers aligned only to the element, with Simple forced: the GPU copies between unaligned user
// buffers and aligned host FIFOs (also where every rank has a GPU of its own: 1 rank per host).
TEST_P(CollSweepAcrossHosts, BuffersAlignedOnlyToTheElementSimple) {
  ScopedSetenv simple("NCCL_PROTO", "Simple");
  sweep(Mode::kProcesses, casesAlignedOnlyToTheElement(nranks()), cudaStreamDefault, hostSizes().back());
}

// LL over the network (BRAID_NET_LL=1), forced for every size: the proxies ship LL slots and copy
// them into the receivers' LL FIFOs (device/dev_types.h). The largest hosts that fit (2 of 2 on 4
// GPUs); with the default protocols too, where small sizes take LL and large ones Simple on the same
// connections.
TEST_P(CollSweepAcrossHosts, AllCollsOverLl) {
  if (colltest::againstReference()) GTEST_SKIP() << "BRAID_NET_LL is Braid's";
  ScopedSetenv netLl("BRAID_NET_LL", "1");
  const std::vector<Case> cases = tierSweepAllColls(nranks());
  for (bool forceLl : {true, false}) {
    SCOPED_TRACE(forceLl ? "NCCL_PROTO=LL" : "default protocols");
    std::optional<ScopedSetenv> forced;
    if (forceLl) forced.emplace("NCCL_PROTO", "LL");
    sweep(Mode::kProcesses, cases, cudaStreamDefault, largestHost());
  }
}

// Direct (NCCL_ALGO=Direct) across emulated hosts: every pair connected, NVLink P2P inside a host
// and the network between hosts, where the senders publish each step to their proxy
// (prims_direct_ll.h). 2 hosts of 2 (both kinds of peer in one CTA) and hosts of one GPU; 1 MiB + 3
// takes many steps per connection, more than the FIFOs hold.
TEST_P(CollSweepAcrossHosts, AllCollsDirect) {
  if (colltest::againstReference()) GTEST_SKIP() << "Direct is Braid's algorithm; NCCL does not know the name";
  ScopedSetenv netLl("BRAID_NET_LL", "1");
  ScopedSetenv algo("NCCL_ALGO", "Direct");
  sweepEveryLayout(tierSweepAllColls(nranks()));
}

// Tree AllReduce (NCCL_ALGO=allreduce:tree) across emulated hosts: 2 hosts of 2 GPUs (a chain in
// each host under the hosts' tree) and hosts of one GPU (4: a binary tree of depth 2), with LL
// (BRAID_NET_LL=1) and with Simple forced; counts up to 1 MiB + 3 take many steps per channel.
TEST_P(CollSweepAcrossHosts, AllReduceTrees) {
  if (colltest::againstReference()) GTEST_SKIP() << "BRAID_NET_LL is Braid's";
  ScopedSetenv netLl("BRAID_NET_LL", "1");
  ScopedSetenv algo("NCCL_ALGO", "allreduce:tree");
  const std::vector<Case> cases = tierSweepOf({Coll::kAllReduce}, nranks());
  for (const char* proto : {"LL", "Simple"}) {
    SCOPED_TRACE(proto);
    ScopedSetenv forced("NCCL_PROTO", proto);
    sweepEveryLayout(cases);
  }
}

// A test net plugin where the build put it, or in BRAID_TEST_PLUGIN_DIR (binaries staged elsewhere:
// scripts/stage-prebuilt.sh).
std::string testPlugin(const std::string& built) {
  const char* dir = std::getenv("BRAID_TEST_PLUGIN_DIR");
  if (dir == nullptr || *dir == '\0') return built;
  return std::string(dir) + "/" + built.substr(built.find_last_of('/') + 1);
}

// The same over an external net plugin (examples/net_plugin_tcp, a v8 table) loaded through
// NCCL_NET_PLUGIN: the largest hosts that fit (2 of 2 on 4 GPUs).
TEST_P(CollSweepAcrossHosts, AllCollsOverTheExampleNetPlugin) {
  ScopedSetenv plugin("NCCL_NET_PLUGIN", testPlugin(BRAID_EXAMPLE_NET_PLUGIN).c_str());
  ScopedSetenv net("NCCL_NET", "ExampleTCP");
  ScopedSetenv addr("EXAMPLE_TCP_ADDR", "127.0.0.1");
  sweep(Mode::kProcesses, tierSweepAllColls(nranks()), cudaStreamDefault, largestHost());
}

// The same plugin behind the oldest table NCCL 2.28 loads (v6: int sizes, no device handles),
// through Braid's v6 shim (against NVIDIA's library: its own v6 loader, which checks the test plugin).
TEST_P(CollSweepAcrossHosts, AllCollsOverAV6NetPlugin) {
  ScopedSetenv plugin("NCCL_NET_PLUGIN", testPlugin(BRAID_OLD_API_NET_PLUGIN_V6).c_str());
  ScopedSetenv net("NCCL_NET", "ExampleTCPv6");
  ScopedSetenv addr("EXAMPLE_TCP_ADDR", "127.0.0.1");
  sweep(Mode::kProcesses, tierSweepAllColls(nranks()), cudaStreamDefault, largestHost());
}

INSTANTIATE_TEST_SUITE_P(Gpus, CollSweep, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });
INSTANTIATE_TEST_SUITE_P(Ranks, CollSweepAcrossHosts, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "ranks"; });

}  // namespace
