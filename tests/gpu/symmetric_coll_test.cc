// The collectives' symmetric kernels on real GPUs (src/device/coll/symmetric_colls.h): buffers from
// ncclMemAlloc registered as NCCL_WIN_COLL_SYMMETRIC windows on every rank, every GPU of this
// machine, one rank per thread, per process and all in one thread. NCCL_ALGO=Direct NCCL_PROTO=Simple
// without Direct/Simple FIFOs leaves an operation nothing but the symmetric kernels, so each one
// below either ran on them or failed. AllReduce runs on two hops (both buffers windows, in and out
// of place) and on one (the receive buffer cudaMalloc memory). Inputs differ per rank, operation and element; outputs
// are poisoned first and compared exactly (int32 Sum and Max, float Sum of integer values), in and out of place, at
// counts of one element to several per CTA and ones the rank count does not divide; then the same operations captured
// in a CUDA graph and replayed on new inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "coll_test_util.h"
#include "every_collective.h"
#include "window_test_util.h"

namespace {

using gputest::Mode;
using gputest::every_collective::valueOf;
using wintest::Rank;

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce };
const Coll kColls[] = {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce};

struct Op {
  Coll coll;
  ncclDataType_t type;  // ncclInt32 or ncclFloat32
  ncclRedOp_t red;
  size_t count;  // AllGather: per-rank send count; ReduceScatter: per-rank receive count
  bool inPlace;
  int root;
  int seed;
  bool plainRecv = false;  // out of place into cudaMalloc memory (AllReduce then takes one hop)
};

size_t sendElems(const Op& op, int n) { return op.coll == Coll::kReduceScatter ? op.count * n : op.count; }
size_t recvElems(const Op& op, int n) { return op.coll == Coll::kAllGather ? op.count * n : op.count; }

// Element i of rank r's input, as the bits of op.type (float inputs are small integers, whose sums
// are exact).
uint32_t inputBits(const Op& op, int r, size_t i) {
  const int32_t v = valueOf(op.seed, r, i);
  if (op.type == ncclInt32) return static_cast<uint32_t>(v);
  const float f = static_cast<float>(v % 4096);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

uint32_t reduceBits(const Op& op, int n, size_t i) {
  if (op.type == ncclInt32) {
    int32_t acc = static_cast<int32_t>(inputBits(op, 0, i));
    for (int r = 1; r < n; r++) {
      const int32_t v = static_cast<int32_t>(inputBits(op, r, i));
      acc = op.red == ncclMax ? std::max(acc, v) : acc + v;
    }
    return static_cast<uint32_t>(acc);
  }
  float acc = 0;
  for (int r = 0; r < n; r++) {
    float f;
    const uint32_t bits = inputBits(op, r, i);
    std::memcpy(&f, &bits, sizeof(f));
    acc += f;
  }
  uint32_t bits;
  std::memcpy(&bits, &acc, sizeof(bits));
  return bits;
}

// What rank r's receive buffer holds after op (a Reduce's non-root ranks are not checked).
std::vector<uint32_t> expectedRecv(const Op& op, int n, int r) {
  std::vector<uint32_t> out(recvElems(op, n), 0);
  for (size_t i = 0; i < op.count; i++) {
    switch (op.coll) {
      case Coll::kAllReduce:
      case Coll::kReduce:
        out[i] = reduceBits(op, n, i);
        break;
      case Coll::kBroadcast:
        out[i] = inputBits(op, op.root, i);
        break;
      case Coll::kReduceScatter:
        out[i] = reduceBits(op, n, r * op.count + i);
        break;
      case Coll::kAllGather:
        for (int q = 0; q < n; q++) out[q * op.count + i] = inputBits(op, q, i);
        break;
    }
  }
  return out;
}

// Rank r's buffers in its windows: in place, the send buffer is the receive buffer's own block
// where the collective has one (AllGather, ReduceScatter) and the receive buffer itself otherwise.
struct RankBuffers {
  char* send = nullptr;
  char* recv = nullptr;
  char* plain = nullptr;  // cudaMalloc memory: no window
  ncclWindow_t sendWin = nullptr;
  ncclWindow_t recvWin = nullptr;
};

const char* opSend(const Op& op, const RankBuffers& b, int r) {
  if (!op.inPlace) return b.send;
  if (op.coll == Coll::kAllGather) return b.recv + r * op.count * 4;
  return b.recv;  // ReduceScatter in place: the receive block is inside the send buffer, at block r
}
char* opRecv(const Op& op, const RankBuffers& b, int r) {
  if (op.plainRecv) return b.plain;
  if (op.inPlace && op.coll == Coll::kReduceScatter) return b.recv + r * op.count * 4;
  return b.recv;
}

ncclResult_t issue(const Op& op, const RankBuffers& b, const Rank& rank) {
  const void* s = opSend(op, b, rank.rank);
  void* d = opRecv(op, b, rank.rank);
  switch (op.coll) {
    case Coll::kAllReduce:
      return ncclAllReduce(s, d, op.count, op.type, op.red, rank.comm, rank.stream);
    case Coll::kAllGather:
      return ncclAllGather(s, d, op.count, op.type, rank.comm, rank.stream);
    case Coll::kReduceScatter:
      return ncclReduceScatter(s, d, op.count, op.type, op.red, rank.comm, rank.stream);
    case Coll::kBroadcast:
      return ncclBroadcast(s, d, op.count, op.type, op.root, rank.comm, rank.stream);
    case Coll::kReduce:
      return ncclReduce(s, d, op.count, op.type, op.red, op.root, rank.comm, rank.stream);
  }
  return ncclInternalError;
}

// Inputs into every rank's send buffer (in place: into the receive buffer's own block, the rest
// poisoned), outputs poisoned.
int prepare(const Op& op, int n, std::vector<Rank>& ranks, std::vector<RankBuffers>& bufs) {
  for (size_t k = 0; k < ranks.size(); k++) {
    const int r = ranks[k].rank;
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r)));
    const size_t inElems = sendElems(op, n);
    std::vector<uint32_t> in(inElems);
    for (size_t i = 0; i < inElems; i++) in[i] = inputBits(op, r, i);
    const size_t recvBytes = std::max(recvElems(op, n), sendElems(op, n)) * 4;
    CHILD_CUDA(gputest::poisonSync(op.plainRecv ? bufs[k].plain : bufs[k].recv, 0xA5, recvBytes));
    CHILD_CUDA(gputest::uploadSync(const_cast<char*>(opSend(op, bufs[k], r)), in.data(), inElems * 4));
  }
  return 0;
}

int check(const Op& op, int n, std::vector<Rank>& ranks, std::vector<RankBuffers>& bufs) {
  for (size_t k = 0; k < ranks.size(); k++) {
    const int r = ranks[k].rank;
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r)));
    CHILD_CUDA(cudaStreamSynchronize(ranks[k].stream));
    if (op.coll == Coll::kReduce && r != op.root) continue;
    const std::vector<uint32_t> want = expectedRecv(op, n, r);
    std::vector<uint32_t> got(want.size());
    CHILD_CUDA(cudaMemcpy(got.data(), opRecv(op, bufs[k], r), got.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < want.size(); i++) {
      if (got[i] != want[i]) {
        std::fprintf(stderr,
                     "rank %d: collective %d type %d count %zu %s root %d: element %zu of %zu is 0x%08x, expected "
                     "0x%08x\n",
                     r, static_cast<int>(op.coll), static_cast<int>(op.type), op.count,
                     op.inPlace ? "in place" : "out of place", op.root, i, want.size(), got[i], want[i]);
        return 1;
      }
    }
  }
  return 0;
}

int runOne(const Op& op, int n, std::vector<Rank>& ranks, std::vector<RankBuffers>& bufs) {
  if (prepare(op, n, ranks, bufs) != 0) return 1;
  CHILD_NCCL(ncclGroupStart());
  for (size_t k = 0; k < ranks.size(); k++) CHILD_NCCL(issue(op, bufs[k], ranks[k]));
  CHILD_NCCL(ncclGroupEnd());
  return check(op, n, ranks, bufs);
}

constexpr size_t kMaxCount = (size_t{4} << 20) / 4;  // elements of one rank's block at most

int allocateAndRegister(int n, std::vector<Rank>& ranks, std::vector<RankBuffers>* bufs) {
  const size_t bytes = kMaxCount * 4 * static_cast<size_t>(n);
  bufs->assign(ranks.size(), RankBuffers());
  std::vector<void*> sends(ranks.size()), recvs(ranks.size());
  for (size_t k = 0; k < ranks.size(); k++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[k].rank)));
    CHILD_NCCL(ncclMemAlloc(&sends[k], bytes));
    CHILD_NCCL(ncclMemAlloc(&recvs[k], bytes));
    (*bufs)[k].send = static_cast<char*>(sends[k]);
    (*bufs)[k].recv = static_cast<char*>(recvs[k]);
    CHILD_CUDA(cudaMalloc(&(*bufs)[k].plain, bytes));
  }
  std::vector<size_t> sizes(ranks.size(), bytes);
  std::vector<ncclWindow_t> sendWins, recvWins;
  if (wintest::registerAll(ranks, sends, sizes, NCCL_WIN_COLL_SYMMETRIC, &sendWins) != 0) return 1;
  if (wintest::registerAll(ranks, recvs, sizes, NCCL_WIN_COLL_SYMMETRIC, &recvWins) != 0) return 1;
  for (size_t k = 0; k < ranks.size(); k++) {
    (*bufs)[k].sendWin = sendWins[k];
    (*bufs)[k].recvWin = recvWins[k];
  }
  return 0;
}

int release(std::vector<Rank>& ranks, std::vector<RankBuffers>& bufs) {
  for (size_t k = 0; k < ranks.size(); k++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[k].rank)));
    CHILD_CUDA(cudaStreamSynchronize(ranks[k].stream));
    CHILD_NCCL(ncclCommWindowDeregister(ranks[k].comm, bufs[k].sendWin));
    CHILD_NCCL(ncclCommWindowDeregister(ranks[k].comm, bufs[k].recvWin));
    CHILD_NCCL(ncclMemFree(bufs[k].send));
    CHILD_NCCL(ncclMemFree(bufs[k].recv));
    CHILD_CUDA(cudaFree(bufs[k].plain));
  }
  return 0;
}

int everyCollective(std::vector<Rank>& ranks, int n) {
  std::vector<RankBuffers> bufs;
  if (allocateAndRegister(n, ranks, &bufs) != 0) return 1;
  int seed = 0;
  for (Coll coll : kColls) {
    for (size_t count : {size_t{1}, size_t{1003}, size_t{262147}, kMaxCount}) {
      for (int inPlace = 0; inPlace < 2; inPlace++) {
        for (ncclDataType_t type : {ncclInt32, ncclFloat32}) {
          const bool reduces = coll != Coll::kAllGather && coll != Coll::kBroadcast;
          const ncclRedOp_t red = type == ncclInt32 && seed % 2 == 1 && reduces ? ncclMax : ncclSum;
          Op op{coll, type, red, count, inPlace != 0, seed % n, ++seed};
          if (runOne(op, n, ranks, bufs) != 0) return 1;
          if (coll == Coll::kAllReduce && inPlace == 0) {  // the one-hop kernel: peers touch send buffers only
            op.plainRecv = true;
            op.seed = ++seed;
            if (runOne(op, n, ranks, bufs) != 0) return 1;
          }
        }
      }
    }
  }
  return release(ranks, bufs);
}

// In a CUDA graph: an in-place AllReduce, an AllGather and a ReduceScatter captured once, replayed
// on new inputs three times.
int inGraph(std::vector<Rank>& ranks, int n) {
  std::vector<RankBuffers> bufs;
  if (allocateAndRegister(n, ranks, &bufs) != 0) return 1;
  const Op ops[] = {{Coll::kAllReduce, ncclInt32, ncclSum, 300001, true, 0, 0},
                    {Coll::kAllGather, ncclInt32, ncclSum, 70001, false, 0, 0},
                    {Coll::kReduceScatter, ncclFloat32, ncclSum, 50003, false, 0, 0}};
  for (const Op& op : ops) {
    std::vector<cudaGraphExec_t> execs(ranks.size());
    for (size_t k = 0; k < ranks.size(); k++) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[k].rank)));
      CHILD_CUDA(cudaStreamBeginCapture(ranks[k].stream, cudaStreamCaptureModeRelaxed));
    }
    CHILD_NCCL(ncclGroupStart());
    for (size_t k = 0; k < ranks.size(); k++) CHILD_NCCL(issue(op, bufs[k], ranks[k]));
    CHILD_NCCL(ncclGroupEnd());
    for (size_t k = 0; k < ranks.size(); k++) {
      cudaGraph_t graph = nullptr;
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[k].rank)));
      CHILD_CUDA(cudaStreamEndCapture(ranks[k].stream, &graph));
      CHILD_CUDA(cudaGraphInstantiate(&execs[k], graph, 0));
      CHILD_CUDA(cudaGraphDestroy(graph));
    }
    for (int replay = 0; replay < 3; replay++) {
      Op now = op;
      now.seed = 100 + replay;
      if (prepare(now, n, ranks, bufs) != 0) return 1;
      for (size_t k = 0; k < ranks.size(); k++) {
        CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[k].rank)));
        CHILD_CUDA(cudaGraphLaunch(execs[k], ranks[k].stream));
      }
      if (check(now, n, ranks, bufs) != 0) return 1;
    }
    for (cudaGraphExec_t e : execs) CHILD_CUDA(cudaGraphExecDestroy(e));
  }
  return release(ranks, bufs);
}

class SymmetricCollectives : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs; this machine has " << gputest::gpuCount();
  }
  // Only the symmetric kernels are left (no Direct/Simple FIFOs; see the header comment).
  colltest::ScopedSetenv algo_{"NCCL_ALGO", "Direct"};
  colltest::ScopedSetenv proto_{"NCCL_PROTO", "Simple"};
  colltest::ScopedSetenv fifo_{"BRAID_DIRECT_SIMPLE_BUFFSIZE", "0"};
};

TEST_P(SymmetricCollectives, EveryCollectiveMatchesTheReference) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, wintest::withRanks(n, GetParam(), [n](std::vector<Rank>& ranks) { return everyCollective(ranks, n); }));
}

TEST_P(SymmetricCollectives, CapturedInAGraphAndReplayed) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, wintest::withRanks(n, GetParam(), [n](std::vector<Rank>& ranks) { return inGraph(ranks, n); }));
}

INSTANTIATE_TEST_SUITE_P(Modes, SymmetricCollectives,
                         ::testing::Values(Mode::kThreads, Mode::kProcesses, Mode::kOneThread),
                         [](const ::testing::TestParamInfo<Mode>& p) { return wintest::modeTestName(p.param); });

}  // namespace
