// The nccl*Config calls (NCCL 2.31/2.32 per-call options) on real GPUs, all eight of them
// (AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather, Scatter): int32
// inputs random and different per rank, outputs poisoned with a guard after them, results compared
// exactly. Every ncclCollConfig_t field: a NULL config, minCTAs = maxCTAs = 1 and other bounds,
// cgaClusterSize 0-8, algSelection forcing Ring or Direct (read back from each rank's TUNING log)
// and selections nothing can honor (forced: refused; not forced: the call runs), CTAPolicy,
// nvlsCTAs, userProfilerTag, launchCompletionEvent (complete while the collective still waits for a
// late peer, and through a CUDA graph), bad size and magic; per-operation options inside one group;
// ranks as processes, as threads, and as one thread driving every GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"

namespace {

using colltest::againstReference;
using colltest::ScopedSetenv;
using gputest::Mode;
using gputest::modeName;

constexpr unsigned kWatchdogSeconds = 300;
constexpr unsigned char kPoison = colltest::kPoison;
constexpr size_t kGuard = colltest::kGuardBytes;
constexpr size_t kSmall = 4099;           // elements per rank block: LL, Direct where it exists
constexpr size_t kLarge = (1 << 18) + 3;  // 1 MiB per rank block: Simple rings

enum class Op { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kGather, kScatter };
constexpr Op kOps[] = {Op::kAllReduce,     Op::kBroadcast, Op::kReduce, Op::kAllGather,
                       Op::kReduceScatter, Op::kAlltoAll,  Op::kGather, Op::kScatter};

const char* opName(Op op) {
  static const char* const kNames[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather",
                                       "ReduceScatter", "AlltoAll",  "Gather", "Scatter"};
  return kNames[static_cast<int>(op)];
}
// Elements a rank sends and the elements of its checked output, for `count` (the call's count).
size_t sendElems(Op op, size_t count, int n) {
  return op == Op::kReduceScatter || op == Op::kAlltoAll || op == Op::kScatter ? n * count : count;
}
size_t recvElems(Op op, size_t count, int n) {
  return op == Op::kAllGather || op == Op::kAlltoAll || op == Op::kGather ? n * count : count;
}
// Whether rank `me` has an output (Reduce and Gather: the root only).
bool hasOutput(Op op, int me, int root) { return (op != Op::kReduce && op != Op::kGather) || me == root; }

uint32_t input(uint64_t seed, int rank, size_t i) { return static_cast<uint32_t>(colltest::inputHash(seed, rank, i)); }
uint32_t sumOf(uint64_t seed, int n, size_t i) {
  uint32_t s = 0;
  for (int r = 0; r < n; r++) s += input(seed, r, i);
  return s;
}

// Element i of rank me's output.
uint32_t expected(Op op, uint64_t seed, int n, int root, int me, size_t count, size_t i) {
  const int p = static_cast<int>(i / count);
  const size_t j = i % count;
  switch (op) {
    case Op::kAllReduce:
    case Op::kReduce:
      return sumOf(seed, n, i);
    case Op::kBroadcast:
      return input(seed, root, i);
    case Op::kAllGather:
    case Op::kGather:
      return input(seed, p, j);
    case Op::kReduceScatter:
      return sumOf(seed, n, me * count + i);
    case Op::kAlltoAll:
      return input(seed, p, me * count + j);
    case Op::kScatter:
      return input(seed, root, me * count + i);
  }
  return 0;
}

struct Rank {
  int rank = 0;
  int nranks = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  uint32_t* send = nullptr;
  uint32_t* recv = nullptr;
};

// One call: the operation, its count, its config (null: the plain call) and what it must return.
struct Call {
  Op op;
  size_t count;
  const ncclCollConfig_t* config;
  ncclResult_t want = ncclSuccess;
  const char* field = nullptr;  // named by the WARN of a refused call
};

int rootOf(int n) { return n > 1 ? 1 : 0; }

ncclResult_t issue(const Rank& r, const Call& c) {
  const int root = rootOf(r.nranks);
  const ncclCollConfig_t* cfg = c.config;
  switch (c.op) {
    case Op::kAllReduce:
      return ncclAllReduceConfig(r.send, r.recv, c.count, ncclUint32, ncclSum, r.comm, r.stream, cfg);
    case Op::kBroadcast:
      return ncclBroadcastConfig(r.send, r.recv, c.count, ncclUint32, root, r.comm, r.stream, cfg);
    case Op::kReduce:
      return ncclReduceConfig(r.send, r.recv, c.count, ncclUint32, ncclSum, root, r.comm, r.stream, cfg);
    case Op::kAllGather:
      return ncclAllGatherConfig(r.send, r.recv, c.count, ncclUint32, r.comm, r.stream, cfg);
    case Op::kReduceScatter:
      return ncclReduceScatterConfig(r.send, r.recv, c.count, ncclUint32, ncclSum, r.comm, r.stream, cfg);
    case Op::kAlltoAll:
      return ncclAlltoAllConfig(r.send, r.recv, c.count, ncclUint32, r.comm, r.stream, cfg);
    case Op::kGather:
      return ncclGatherConfig(r.send, r.recv, c.count, ncclUint32, root, r.comm, r.stream, cfg);
    case Op::kScatter:
      return ncclScatterConfig(r.send, r.recv, c.count, ncclUint32, root, r.comm, r.stream, cfg);
  }
  return ncclInvalidArgument;
}

int allocRank(Rank& r, int n) {
  r.nranks = n;
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaMalloc(&r.send, n * kLarge * 4));
  CHILD_CUDA(cudaMalloc(&r.recv, n * kLarge * 4 + kGuard));
  return 0;
}

int freeRank(Rank& r) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  CHILD_CUDA(cudaFree(r.send));
  CHILD_CUDA(cudaFree(r.recv));
  return 0;
}

// Poisons the output (and its guard) and uploads this rank's input under `seed`.
int prepare(const Rank& r, const Call& c, uint64_t seed) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(gputest::poisonSync(r.recv, kPoison, recvElems(c.op, c.count, r.nranks) * 4 + kGuard));
  std::vector<uint32_t> host(sendElems(c.op, c.count, r.nranks));
  for (size_t i = 0; i < host.size(); i++) host[i] = input(seed, r.rank, i);
  CHILD_CUDA(gputest::uploadSync(r.send, host.data(), host.size() * 4));
  return 0;
}

// After the call: the output exact (or, for a rank without output or a refused call, all poison),
// the guard poisoned.
int check(const Rank& r, const Call& c, uint64_t seed, bool ran, const std::string& what) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  const size_t elems = recvElems(c.op, c.count, r.nranks);
  std::vector<uint32_t> out(elems + kGuard / 4);
  CHILD_CUDA(cudaMemcpy(out.data(), r.recv, out.size() * 4, cudaMemcpyDeviceToHost));
  uint32_t poison;
  std::memset(&poison, kPoison, sizeof(poison));
  const int root = rootOf(r.nranks);
  const bool output = ran && hasOutput(c.op, r.rank, root);
  for (size_t i = 0; i < out.size(); i++) {
    const uint32_t want = output && i < elems ? expected(c.op, seed, r.nranks, root, r.rank, c.count, i) : poison;
    if (out[i] != want) {
      std::fprintf(stderr, "%s: %s count %zu, rank %d: [%zu] = 0x%08x, expected 0x%08x%s\n", what.c_str(), opName(c.op),
                   c.count, r.rank, i, out[i], want, i >= elems ? " (guard)" : "");
      return 1;
    }
  }
  return 0;
}

// Runs `calls` one after another on every rank of this thread (each in a group over the thread's
// ranks) and checks each one's return code, WARN and output. Returns nonzero on a failure.
int runCalls(std::vector<Rank>& ranks, const std::vector<Call>& calls, uint64_t seed, const std::string& what) {
  for (const Call& c : calls) {
    for (Rank& r : ranks) {
      if (prepare(r, c, seed) != 0) return 1;
    }
    // The first error, and the WARN that came with it (the group's own WARN follows a refused call).
    ncclResult_t got = ncclGroupStart();
    std::string text;
    for (Rank& r : ranks) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
      const ncclResult_t res = issue(r, c);
      if (got == ncclSuccess && res != ncclSuccess) text = ncclGetLastError(nullptr);
      if (got == ncclSuccess) got = res;
    }
    const ncclResult_t end = ncclGroupEnd();
    if (got == ncclSuccess && end != ncclSuccess) text = ncclGetLastError(nullptr);
    if (got == ncclSuccess) got = end;
    if (got != c.want) {
      std::fprintf(stderr, "%s: %s count %zu -> %s, expected %s (last error: %s)\n", what.c_str(), opName(c.op),
                   c.count, ncclGetErrorString(got), ncclGetErrorString(c.want), text.c_str());
      return 1;
    }
    if (c.want != ncclSuccess && c.field != nullptr && !againstReference() && ranks.size() == 1 &&
        text.find(c.field) == std::string::npos) {
      std::fprintf(stderr, "%s: %s refused without naming %s: \"%s\"\n", what.c_str(), opName(c.op), c.field,
                   text.c_str());
      return 1;
    }
    for (Rank& r : ranks) {
      if (check(r, c, seed, c.want == ncclSuccess, what) != 0) return 1;
    }
    seed++;
  }
  return 0;
}

// ranksPerHost > 0: processes on emulated hosts of that many ranks (they may share GPUs).
int withRanks(int n, Mode mode, const std::function<int(std::vector<Rank>&)>& body, int ranksPerHost = 0) {
  return gputest::withRanks<Rank>(
      n, mode, kWatchdogSeconds,
      [&](std::vector<Rank>& ranks) {
        for (Rank& r : ranks) {
          if (allocRank(r, n) != 0) return 1;
        }
        int rc = body(ranks);
        for (Rank& r : ranks) rc |= freeRank(r);
        return rc;
      },
      ranksPerHost);
}

// A config that sets one thing.
ncclCollConfig_t configWith(const std::function<void(ncclCollConfig_t&)>& set) {
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  set(c);
  return c;
}

class CollConfigTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < n()) GTEST_SKIP() << "needs " << n() << " GPUs; this machine has " << gputest::gpuCount();
    std::string tier;
    if (gputest::leftOutOfQuickTier(n(), &tier)) GTEST_SKIP() << tier;
  }
  int n() const { return GetParam(); }
};

// Every operation with a NULL config, the initializer, and each field alone; both sizes.
TEST_P(CollConfigTest, EveryOperationWithEveryField) {
  std::vector<std::pair<std::string, ncclCollConfig_t>> configs = {
      {"initializer", configWith([](ncclCollConfig_t&) {})},
      {"minCTAs = maxCTAs = 1", configWith([](ncclCollConfig_t& c) { c.minCTAs = c.maxCTAs = 1; })},
      {"minCTAs 2, maxCTAs 4", configWith([](ncclCollConfig_t& c) {
         c.minCTAs = 2;
         c.maxCTAs = 4;
       })},
      {"minCTAs 8", configWith([](ncclCollConfig_t& c) { c.minCTAs = 8; })},
      {"CTAPolicy EFFICIENCY", configWith([](ncclCollConfig_t& c) { c.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY; })},
      {"CTAPolicy ZERO", configWith([](ncclCollConfig_t& c) { c.CTAPolicy = NCCL_CTA_POLICY_ZERO; })},
      {"CTAPolicy EFFICIENCY|ZERO", configWith([](ncclCollConfig_t& c) { c.CTAPolicy = 3; })},
      {"nvlsCTAs, userProfilerTag", configWith([](ncclCollConfig_t& c) {
         c.nvlsCTAs = 4;
         c.userProfilerTag = 42;
       })},
      {"algSelection ring (not forced)", configWith([](ncclCollConfig_t& c) {
         c.algSelection = "ring";
         c.forceAlgSelection = 0;
       })},
      {"algSelection nvls (not forced)", configWith([](ncclCollConfig_t& c) {
         c.algSelection = "nvls";
         c.forceAlgSelection = 0;
       })},
  };
  for (int size : {0, 1, 2, 4, 8}) {
    configs.emplace_back("cgaClusterSize " + std::to_string(size),
                         configWith([size](ncclCollConfig_t& c) { c.cgaClusterSize = size; }));
  }
  for (Mode mode : {Mode::kProcesses, Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    // Both sizes where each rank checks its own output; the small one where one thread checks all.
    const std::vector<size_t> counts =
        mode == Mode::kOneThread ? std::vector<size_t>{kSmall} : std::vector<size_t>{kSmall, kLarge};
    EXPECT_EQ(0, withRanks(n(), mode, [&](std::vector<Rank>& ranks) {
                std::vector<Call> calls;
                for (Op op : kOps) {
                  for (size_t count : counts) calls.push_back({op, count, nullptr});
                }
                if (runCalls(ranks, calls, 100, "NULL config") != 0) return 1;
                for (const auto& [name, config] : configs) {
                  calls.clear();
                  for (Op op : kOps) {
                    for (size_t count : counts) calls.push_back({op, count, &config});
                  }
                  if (runCalls(ranks, calls, 200, name) != 0) return 1;
                }
                return 0;
              }));
  }
}

// algSelection forces an algorithm: Ring or Direct (Braid's one-hop NVLink algorithm), a protocol,
// and minCTAs = maxCTAs = 1 one channel; each rank's TUNING log says what ran.
TEST_P(CollConfigTest, SelectionAndChannelsAreWhatRuns) {
  if (againstReference()) GTEST_SKIP() << "reads Braid's TUNING log lines and its Direct algorithm";
  char dir[] = "/tmp/braid_collcfg_XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir));
  const std::string logDir = dir;
  ScopedSetenv debug("NCCL_DEBUG", "INFO");
  ScopedSetenv subsys("NCCL_DEBUG_SUBSYS", "TUNING");
  ScopedSetenv file("NCCL_DEBUG_FILE", (logDir + "/rank.%p.log").c_str());
  const ncclCollConfig_t ring = configWith([](ncclCollConfig_t& c) { c.algSelection = "ring"; });
  const ncclCollConfig_t direct = configWith([](ncclCollConfig_t& c) { c.algSelection = "Direct"; });
  const ncclCollConfig_t ringSimple1 = configWith([](ncclCollConfig_t& c) {
    c.algSelection = "RING_SIMPLE";
    c.minCTAs = c.maxCTAs = 1;
    c.cgaClusterSize = 2;
  });
  // Distinct counts, so that each call's log line is its own: "AllReduce <bytes> bytes -> ...".
  struct Expect {
    Call call;
    const char* line;
  };
  const std::vector<Expect> expects = {
      {{Op::kAllReduce, 1001, &ring}, "AllReduce 4004 bytes -> Ring/"},
      {{Op::kAllReduce, 1002, &direct}, "AllReduce 4008 bytes -> Direct/LL"},
      {{Op::kAllReduce, kLarge, &direct}, "-> Direct/LL"},
      {{Op::kBroadcast, 1003, &ringSimple1}, "Broadcast 4012 bytes -> Ring/Simple, 1 channels x"},
      {{Op::kAllGather, 1004, &direct}, "-> Direct/LL"},
      {{Op::kReduceScatter, 1005, &ringSimple1}, "-> Ring/Simple, 1 channels x"},
      {{Op::kReduce, 1006, &ring}, "Reduce 4024 bytes -> Ring/"},
  };
  EXPECT_EQ(0, withRanks(n(), Mode::kProcesses, [&](std::vector<Rank>& ranks) {
              std::vector<Call> calls;
              for (const Expect& e : expects) calls.push_back(e.call);
              if (runCalls(ranks, calls, 300, "forced selections") != 0) return 1;
              std::ifstream f(logDir + "/rank." + std::to_string(getpid()) + ".log");
              std::stringstream log;
              log << f.rdbuf();
              for (const Expect& e : expects) {
                if (log.str().find(e.line) == std::string::npos) {
                  std::fprintf(stderr, "rank %d: no TUNING line with \"%s\"; log:\n%s\n", ranks[0].rank, e.line,
                               log.str().c_str());
                  return 1;
                }
              }
              if (log.str().find("1 channels x") == std::string::npos ||
                  log.str().find("clusters of 2") == std::string::npos) {
                std::fprintf(stderr, "rank %d: no one-channel plan in clusters of 2\n", ranks[0].rank);
                return 1;
              }
              return 0;
            }));
  std::filesystem::remove_all(logDir);
}

// Selections nothing can honor: forced, refused (a name the collective lacks, or a point-to-point
// collective: at the call, ncclInvalidArgument; an algorithm this communicator cannot run: at the
// launch, ncclInvalidUsage), nothing written; not forced, the call runs (EveryOperationWithEveryField).
TEST_P(CollConfigTest, UnsatisfiableSelectionIsRefusedWhenForced) {
  const ncclCollConfig_t nvls = configWith([](ncclCollConfig_t& c) { c.algSelection = "nvls"; });
  const ncclCollConfig_t bogus = configWith([](ncclCollConfig_t& c) { c.algSelection = "rings"; });
  for (Mode mode : {Mode::kProcesses, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n(), mode, [&](std::vector<Rank>& ranks) {
                std::vector<Call> calls;
                for (Op op : kOps) {
                  // NVLS exists for AllReduce, AllGather and ReduceScatter (refused at launch here).
                  const bool nvlsColl = op == Op::kAllReduce || op == Op::kAllGather || op == Op::kReduceScatter;
                  calls.push_back(
                      {op, kSmall, &nvls, nvlsColl ? ncclInvalidUsage : ncclInvalidArgument, "config->algSelection"});
                  calls.push_back({op, kSmall, &bogus, ncclInvalidArgument, "config->algSelection"});
                  calls.push_back({op, kSmall, nullptr});  // the communicator still works
                }
                return runCalls(ranks, calls, 400, "unsatisfiable selection");
              }));
  }
}

// Bad size, magic and field values: ncclInvalidArgument naming the field, nothing launched, the
// communicator still works. A refused call inside a group fails the whole group.
TEST_P(CollConfigTest, BadConfigsAreRefused) {
  std::vector<std::pair<ncclCollConfig_t, const char*>> bad = {
      {configWith([](ncclCollConfig_t& c) { c.size = 8; }), "config->size"},
      {configWith([](ncclCollConfig_t& c) { c.size = 63; }), "config->size"},
      {configWith([](ncclCollConfig_t& c) { c.magic = 0x12345678; }), "config->magic"},
      {configWith([](ncclCollConfig_t& c) { c.minCTAs = 0; }), "config->minCTAs"},
      {configWith([](ncclCollConfig_t& c) { c.maxCTAs = 65; }), "config->maxCTAs"},
      {configWith([](ncclCollConfig_t& c) {
         c.minCTAs = 4;
         c.maxCTAs = 2;
       }),
       "config->minCTAs"},
      {configWith([](ncclCollConfig_t& c) { c.cgaClusterSize = 9; }), "config->cgaClusterSize"},
      {configWith([](ncclCollConfig_t& c) { c.CTAPolicy = 4; }), "config->CTAPolicy"},
      {configWith([](ncclCollConfig_t& c) { c.forceAlgSelection = 2; }), "config->forceAlgSelection"},
  };
  EXPECT_EQ(0, withRanks(n(), Mode::kProcesses, [&](std::vector<Rank>& ranks) {
              std::vector<Call> calls;
              for (Op op : kOps) {
                for (const auto& [config, field] : bad)
                  calls.push_back({op, kSmall, &config, ncclInvalidArgument, field});
                calls.push_back({op, kSmall, nullptr});
              }
              if (runCalls(ranks, calls, 500, "bad config") != 0) return 1;
              // A plain AllReduce and a refused one in one group: the group fails, nothing written.
              Rank& r = ranks[0];
              const Call plain{Op::kAllReduce, kSmall, nullptr};
              if (prepare(r, plain, 501) != 0) return 1;
              CHILD_NCCL(ncclGroupStart());
              CHILD_NCCL(issue(r, plain));
              CHILD_EXPECT(issue(r, {Op::kAllReduce, kSmall, &bad[2].first}) == ncclInvalidArgument);
              CHILD_EXPECT(ncclGroupEnd() == ncclInvalidArgument);
              return check(r, plain, 501, false, "group with a refused config");
            }));
}

// The line of `log` that holds `what` ("" if none).
std::string logLine(const std::string& log, const std::string& what) {
  const size_t at = log.find(what);
  if (at == std::string::npos) return "";
  const size_t begin = log.rfind('\n', at) + 1;  // npos + 1 == 0
  return log.substr(begin, log.find('\n', at) - begin);
}

// One group, several operations with different options each: every one correct, and each planned
// with its own (one rank's TUNING log: the first AllReduce on one Ring channel, the second Direct).
TEST_P(CollConfigTest, OperationsOfAGroupKeepTheirOwnOptions) {
  if (againstReference()) GTEST_SKIP() << "Direct is Braid's algorithm; reads Braid's TUNING log";
  char dir[] = "/tmp/braid_collcfg_XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir));
  const std::string logDir = dir;
  ScopedSetenv debug("NCCL_DEBUG", "INFO");
  ScopedSetenv subsys("NCCL_DEBUG_SUBSYS", "TUNING");
  ScopedSetenv file("NCCL_DEBUG_FILE", (logDir + "/rank.%p.log").c_str());
  const ncclCollConfig_t ring1 = configWith([](ncclCollConfig_t& c) {
    c.algSelection = "ring";
    c.minCTAs = c.maxCTAs = 1;
  });
  const ncclCollConfig_t direct = configWith([](ncclCollConfig_t& c) { c.algSelection = "direct"; });
  const ncclCollConfig_t cluster = configWith([](ncclCollConfig_t& c) { c.cgaClusterSize = 8; });
  const ncclCollConfig_t one = configWith([](ncclCollConfig_t& c) { c.minCTAs = c.maxCTAs = 1; });
  for (Mode mode : {Mode::kProcesses, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(
        0, withRanks(n(), mode, [&](std::vector<Rank>& ranks) {
          const int nr = ranks[0].nranks;
          // Separate buffers per operation: inputs at offsets of the rank's send/recv.
          const std::vector<Call> calls = {{Op::kAllReduce, kSmall, &ring1},
                                           {Op::kAllReduce, kSmall, &direct},
                                           {Op::kAllGather, kSmall, &cluster},
                                           {Op::kAlltoAll, kSmall, &one}};
          const size_t stride = static_cast<size_t>(nr) * kSmall;  // elements per operation
          std::vector<Rank> views;
          for (const Rank& r : ranks) {
            for (size_t k = 0; k < calls.size(); k++) {
              Rank v = r;
              v.send += k * stride;
              v.recv += k * (stride + kGuard / 4);
              if (prepare(v, calls[k], 600 + k) != 0) return 1;
              views.push_back(v);
            }
          }
          CHILD_NCCL(ncclGroupStart());
          for (size_t i = 0; i < views.size(); i++) {
            CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(views[i].rank)));
            CHILD_NCCL(issue(views[i], calls[i % calls.size()]));
          }
          CHILD_NCCL(ncclGroupEnd());
          for (size_t i = 0; i < views.size(); i++) {
            if (check(views[i], calls[i % calls.size()], 600 + i % calls.size(), true, "group") != 0) return 1;
          }
          std::ifstream f(logDir + "/rank." + std::to_string(getpid()) + ".log");
          std::stringstream log;
          log << f.rdbuf();
          const std::string bytes = "AllReduce " + std::to_string(kSmall * 4) + " bytes -> ";
          const std::string ringLine = logLine(log.str(), bytes + "Ring/");
          if (ringLine.find(", 1 channels x") == std::string::npos || logLine(log.str(), bytes + "Direct/LL").empty()) {
            std::fprintf(stderr, "rank %d: the group's AllReduces were not planned as configured; log:\n%s\n",
                         ranks[0].rank, log.str().c_str());
            return 1;
          }
          return 0;
        }));
  }
  std::filesystem::remove_all(logDir);
}

// ---- launchCompletionEvent ----

// Whether rank me's output of `op` needs rank 0's call (so that its stream cannot finish first).
bool needsRankZero(Op op, int me, int root) {
  switch (op) {
    case Op::kAllReduce:
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAlltoAll:
      return true;
    case Op::kReduce:
    case Op::kGather:
      return me == root;
    default:
      return false;
  }
}

// The event completes once the collective's kernel has begun everywhere on this rank, long before
// the collective itself, which waits for rank 0: rank 0 calls two seconds after the others, which
// must see their events complete within one second while their streams (where the output needs
// rank 0) are still busy. Then every result is exact.
// A launch event completes once the kernel has begun, while it still waits for a late peer: rank 0
// calls each operation 2 s after the others. (A launch with programmatic dependent launch would
// have the driver record it only at the kernel's end: launch/data_path_context.h.)
int launchEventWithALatePeer(int nranks, int ranksPerHost) {
  return withRanks(
      nranks, Mode::kProcesses,
      [&](std::vector<Rank>& ranks) {
        Rank& r = ranks[0];
        CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
        cudaEvent_t event = nullptr;
        CHILD_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        const ncclCollConfig_t config = configWith([event](ncclCollConfig_t& c) { c.launchCompletionEvent = event; });
        uint64_t seed = 700;
        for (Op op : kOps) {
          // Connections made and every rank here: a plain call of each kind, synchronized.
          if (runCalls(ranks, {{op, kSmall, nullptr}}, seed++, "warm-up") != 0) return 1;
          const Call call{op, kSmall, &config};
          if (prepare(r, call, seed) != 0) return 1;
          if (r.rank == 0) std::this_thread::sleep_for(std::chrono::seconds(2));
          CHILD_NCCL(issue(r, call));
          if (r.rank != 0) {
            const auto start = std::chrono::steady_clock::now();
            cudaError_t q = cudaEventQuery(event);
            while (q == cudaErrorNotReady && std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
              q = cudaEventQuery(event);
            }
            if (q != cudaSuccess) {
              std::fprintf(stderr, "rank %d: %s: launch event not complete after 1 s: %s\n", r.rank, opName(op),
                           cudaGetErrorString(q));
              return 1;
            }
            if (needsRankZero(op, r.rank, rootOf(r.nranks)) && cudaStreamQuery(r.stream) != cudaErrorNotReady) {
              std::fprintf(stderr, "rank %d: %s finished before rank 0 called it\n", r.rank, opName(op));
              return 1;
            }
          }
          if (check(r, call, seed++, true, "late peer") != 0) return 1;
          CHILD_CUDA(cudaEventSynchronize(event));
        }
        CHILD_CUDA(cudaEventDestroy(event));
        return 0;
      },
      ranksPerHost);
}

TEST_P(CollConfigTest, LaunchEventCompletesWhileTheCollectiveWaitsForALatePeer) {
  EXPECT_EQ(0, launchEventWithALatePeer(n(), 0));
}

// Every operation with an event, in every mode, and inside a group of several: each event is
// complete once the stream is; a group's sends and receives on one communicator carry one event
// (another: ncclInvalidUsage, the group refused).
TEST_P(CollConfigTest, LaunchEventOnEveryOperation) {
  for (Mode mode : {Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n(), mode, [&](std::vector<Rank>& ranks) {
                std::vector<cudaEvent_t> events(ranks.size() * 2);
                for (size_t i = 0; i < ranks.size(); i++) {
                  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                  CHILD_CUDA(cudaEventCreateWithFlags(&events[2 * i], cudaEventDisableTiming));
                  CHILD_CUDA(cudaEventCreateWithFlags(&events[2 * i + 1], cudaEventDisableTiming));
                }
                for (Op op : kOps) {
                  for (size_t count : {kSmall, kLarge}) {
                    std::vector<ncclCollConfig_t> configs(ranks.size());
                    for (size_t i = 0; i < ranks.size(); i++) {
                      configs[i] = configWith([&](ncclCollConfig_t& c) { c.launchCompletionEvent = events[2 * i]; });
                      if (prepare(ranks[i], {op, count, nullptr}, 800) != 0) return 1;
                    }
                    CHILD_NCCL(ncclGroupStart());
                    for (size_t i = 0; i < ranks.size(); i++) {
                      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                      CHILD_NCCL(issue(ranks[i], {op, count, &configs[i]}));
                    }
                    CHILD_NCCL(ncclGroupEnd());
                    for (size_t i = 0; i < ranks.size(); i++) {
                      if (check(ranks[i], {op, count, nullptr}, 800, true, "with an event") != 0) return 1;
                      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                      CHILD_CUDA(cudaEventQuery(events[2 * i]));
                    }
                  }
                }
                // Two point-to-point collectives of one group with different events: refused.
                std::vector<ncclCollConfig_t> a(ranks.size()), b(ranks.size());
                for (size_t i = 0; i < ranks.size(); i++) {
                  a[i] = configWith([&](ncclCollConfig_t& c) { c.launchCompletionEvent = events[2 * i]; });
                  b[i] = configWith([&](ncclCollConfig_t& c) { c.launchCompletionEvent = events[2 * i + 1]; });
                  if (prepare(ranks[i], {Op::kAlltoAll, kSmall, nullptr}, 801) != 0) return 1;
                }
                CHILD_NCCL(ncclGroupStart());
                for (size_t i = 0; i < ranks.size(); i++) {
                  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
                  CHILD_NCCL(issue(ranks[i], {Op::kAlltoAll, kSmall, &a[i]}));
                  CHILD_EXPECT(issue(ranks[i], {Op::kGather, kSmall, &b[i]}) == ncclInvalidUsage);
                }
                CHILD_EXPECT(ncclGroupEnd() == ncclInvalidUsage);
                for (size_t i = 0; i < ranks.size(); i++) {
                  if (check(ranks[i], {Op::kAlltoAll, kSmall, nullptr}, 801, false, "two events") != 0) return 1;
                  CHILD_CUDA(cudaEventDestroy(events[2 * i]));
                  CHILD_CUDA(cudaEventDestroy(events[2 * i + 1]));
                }
                return 0;
              }));
  }
}

// Captures AllReduce and AlltoAll with a launch-completion event on each rank and replays each
// graph twice on fresh inputs: exact results. With sideWait, a second stream of the same capture
// waits for the event (as NCCL's users overlap work with a collective) and sets a flag, which each
// replay must have set.
int capturedWithEvent(std::vector<Rank>& ranks, bool sideWait) {
  Rank& r = ranks[0];
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  cudaEvent_t event = nullptr;
  cudaEvent_t join = nullptr;
  cudaStream_t side = nullptr;
  uint32_t* flag = nullptr;
  CHILD_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CHILD_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CHILD_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CHILD_CUDA(cudaMalloc(&flag, 4));
  const ncclCollConfig_t config = configWith([event](ncclCollConfig_t& c) { c.launchCompletionEvent = event; });
  for (Op op : {Op::kAllReduce, Op::kAlltoAll}) {
    const Call call{op, kSmall, &config};
    if (runCalls(ranks, {{op, kSmall, nullptr}}, 900, "warm-up") != 0) return 1;
    CHILD_CUDA(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
    CHILD_NCCL(issue(r, call));
    if (sideWait) {
      CHILD_CUDA(cudaStreamWaitEvent(side, event, 0));
      CHILD_CUDA(cudaMemsetAsync(flag, 0x11, 4, side));
      CHILD_CUDA(cudaEventRecord(join, side));
      CHILD_CUDA(cudaStreamWaitEvent(r.stream, join, 0));
    }
    cudaGraph_t graph = nullptr;
    CHILD_CUDA(cudaStreamEndCapture(r.stream, &graph));
    cudaGraphExec_t exec = nullptr;
    CHILD_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHILD_CUDA(cudaGraphDestroy(graph));
    for (uint64_t seed : {901, 902}) {
      CHILD_CUDA(gputest::poisonSync(flag, 0, 4));
      if (prepare(r, call, seed) != 0) return 1;
      CHILD_CUDA(cudaGraphLaunch(exec, r.stream));
      if (check(r, call, seed, true, sideWait ? "captured, a stream waiting for the event" : "captured") != 0) {
        return 1;
      }
      uint32_t got = 0;
      CHILD_CUDA(cudaMemcpy(&got, flag, 4, cudaMemcpyDeviceToHost));
      CHILD_EXPECT(got == (sideWait ? 0x11111111u : 0u));
      CHILD_CUDA(cudaEventQuery(event));
    }
    CHILD_CUDA(cudaGraphExecDestroy(exec));
  }
  CHILD_CUDA(cudaFree(flag));
  CHILD_CUDA(cudaStreamDestroy(side));
  CHILD_CUDA(cudaEventDestroy(join));
  CHILD_CUDA(cudaEventDestroy(event));
  return 0;
}

TEST_P(CollConfigTest, LaunchEventInACapturedGraph) {
  EXPECT_EQ(0,
            withRanks(n(), Mode::kProcesses, [](std::vector<Rank>& ranks) { return capturedWithEvent(ranks, false); }));
}

TEST_P(CollConfigTest, LaunchEventAwaitedInsideTheCapture) {
  EXPECT_EQ(0,
            withRanks(n(), Mode::kProcesses, [](std::vector<Rank>& ranks) { return capturedWithEvent(ranks, true); }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, CollConfigTest, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

// The same across two emulated hosts, which may share one GPU: the kernels wait on the network.
TEST(CollConfigAcrossHosts, LaunchEventCompletesWhileTheCollectiveWaitsForALatePeer) {
  if (!gputest::emulatedHostsFit(2, 1)) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, launchEventWithALatePeer(2, 1));
}

}  // namespace

// One rank: collectives are copies (no kernel) and AlltoAll, Gather, Scatter self copies; every
// config still applies its checks, and the launch event completes.
TEST(CollConfigOneRank, EveryOperationWithAnEvent) {
  if (gputest::gpuCount() < 1) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, withRanks(1, Mode::kProcesses, [](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
              cudaEvent_t event = nullptr;
              CHILD_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
              // A forced selection (collectives only: AlltoAll, Gather and Scatter refuse one).
              const ncclCollConfig_t config = configWith([event](ncclCollConfig_t& c) {
                c.launchCompletionEvent = event;
                c.minCTAs = c.maxCTAs = 1;
              });
              ncclCollConfig_t selecting = config;
              selecting.algSelection = "ring";
              const ncclCollConfig_t bad = configWith([](ncclCollConfig_t& c) { c.magic = 0; });
              std::vector<Call> calls;
              for (Op op : kOps) {
                const bool p2p = op == Op::kAlltoAll || op == Op::kGather || op == Op::kScatter;
                calls.push_back({op, kSmall, p2p ? &config : &selecting});
                calls.push_back({op, kSmall, &bad, ncclInvalidArgument, "config->magic"});
              }
              if (runCalls(ranks, calls, 1000, "one rank") != 0) return 1;
              CHILD_CUDA(cudaEventQuery(event));
              CHILD_CUDA(cudaEventDestroy(event));
              return 0;
            }));
}

// One rank, captured: the copies that stand for the kernel record the event too, and it stays
// valid after the graph's replays.
TEST(CollConfigOneRank, LaunchEventInACapturedGraph) {
  if (gputest::gpuCount() < 1) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, withRanks(1, Mode::kProcesses, [](std::vector<Rank>& ranks) { return capturedWithEvent(ranks, true); }));
}
