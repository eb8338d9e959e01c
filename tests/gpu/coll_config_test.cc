// The nccl*Config calls (NCCL 2.31/2.32 per-call options) on real GPUs, all eight of them
// (AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather, Scatter): int32
// inputs random and different per rank, outputs poisoned with a guard after them, results compared
// exactly. Every ncclCollConfig_t field: a NULL config, minCTAs = maxCTAs = 1 and other bounds,
// cgaClusterSize 0-8, algSelection forcing Ring or Direct (read back from each rank's TUNING log)
// and selections nothing can honor (forced: refused; not forced: the call runs), CTAPolicy,
// nvlsCTAs, userProfilerTag, bad size and magic (launchCompletionEvent: coll_config_event_test.cc); per-operation
// options inside one group; ranks as processes, as threads, and as one thread driving every GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "coll_config_harness.h"

namespace {

using namespace collconfig;  // NOLINT(google-build-using-namespace): this family's harness

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

INSTANTIATE_TEST_SUITE_P(Gpus, CollConfigTest, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

}  // namespace
