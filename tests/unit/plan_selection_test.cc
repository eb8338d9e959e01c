// The per-operation side of the planner (ncclCollConfig_t): algSelection's grammar (NCCL 2.32's),
// and decisions within an operation's constraints (channel bounds, cluster size, a selection forced
// or not, on top of NCCL_ALGO / NCCL_PROTO).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "plan/selection.h"
#include "plan_test_util.h"

namespace braid::plan {
namespace {

constexpr CollId kColls[kNumColls] = {CollId::kBroadcast, CollId::kReduce, CollId::kAllGather, CollId::kReduceScatter,
                                      CollId::kAllReduce};

// One H100-like node of `nranks` (plan_test_util.h) with 16 ring channels and, where `direct`, 16
// direct channels.
CommModel nodeModel(int nranks, bool direct) {
  CommModel m = test_helpers::hopperModel(nranks);
  m.maxDirectChannels = direct ? kMaxDirectChannels : 0;
  return m;
}

// The same as two hosts of nranks / 2 GPUs with trees.
CommModel treeModel(int nranks) {
  CommModel m = nodeModel(nranks, false);
  m.nNodes = 2;
  m.maxChannels = 4;
  m.nTreeChannels = 4;
  m.treeNetDepth = 1;
  m.treeLocalDepth = nranks / 2 - 1;
  m.bwPerChannelGBps = 1.5;
  return m;
}

Filter filterOf(const char* algo, const char* proto = nullptr) {
  Filter f;
  EXPECT_EQ(parseFilter(algo, proto, &f), ncclSuccess);
  return f;
}

SelectionRows rowsOf(const std::string& text) {
  SelectionRows rows = 0;
  std::string error;
  EXPECT_TRUE(parseSelection(text, &rows, &error)) << text << ": " << error;
  return rows;
}

OpConstraints selecting(const std::string& text, bool force = true) {
  OpConstraints op;
  op.selectionRows = rowsOf(text);
  op.forceSelection = force;
  op.selectionText = text;
  return op;
}

Decision decideOk(const CommModel& m, const Filter& f, const OpConstraints& op, CollId coll, size_t bytes) {
  Decision d{};
  EXPECT_EQ(decide(m, f, op, coll, bytes, &d), ncclSuccess) << collName(coll) << " " << bytes;
  return d;
}

std::vector<size_t> sizes() {
  std::vector<size_t> out;
  for (size_t b = 1; b <= (size_t{1} << 31); b *= 8) out.push_back(b + 3);
  return out;
}

constexpr const char* kMarker = "plan_selection_test marker";
void markLastError() { WARN("%s", kMarker); }

// ---- The grammar ----

TEST(PlanSelection, NamesArePrefixesOfAlgorithmAndProtocol) {
  EXPECT_EQ(selectionNames(rowsOf("ring")), "RING_LL, RING_LL128, RING_SIMPLE");
  EXPECT_EQ(selectionNames(rowsOf("RING_SIMPLE")), "RING_SIMPLE");
  EXPECT_EQ(selectionNames(rowsOf("ring_ll")), "RING_LL, RING_LL128");
  EXPECT_EQ(selectionNames(rowsOf(" Tree_Simple , direct ")), "TREE_SIMPLE, DIRECT_LL, DIRECT_SIMPLE");
  EXPECT_EQ(selectionNames(rowsOf("nvls")), "NVLS_SIMPLE, NVLSTREE_SIMPLE");
  EXPECT_EQ(selectionNames(rowsOf("ring+^ring_ll128")), "RING_LL, RING_SIMPLE");
  EXPECT_EQ(rowsOf("ring,,tree,"), rowsOf("ring,tree"));
  EXPECT_EQ(rowsOf(","), 0u);  // no term: selects nothing (the call then cannot be honored)
  const SelectionRows notRing = rowsOf("^ring");
  EXPECT_FALSE(selectionAllows(notRing, kAlgoRing, kProtoSimple));
  EXPECT_TRUE(selectionAllows(notRing, kAlgoTree, kProtoLL));
  EXPECT_TRUE(selectionAllows(notRing, kAlgoDirect, kProtoLL));
  EXPECT_TRUE(selectionAllows(rowsOf("direct"), kAlgoDirect, kProtoSimple));
  EXPECT_FALSE(selectionAllows(rowsOf("direct_ll"), kAlgoDirect, kProtoSimple));
  EXPECT_FALSE(selectionAllows(rowsOf("symk"), kAlgoRing, kProtoLL));  // kernels Braid has not
}

TEST(PlanSelection, MalformedOrUnknownIsRefusedWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"rings", "unknown name 'rings'"},
      {"allreduce:ring", "unknown name 'allreduce:ring'"},
      {"ring,^", "'^' without a name"},
      {"ring,+,tree", "without a name"},
      {"ring+tree", "select nothing together"},
      {"collnetdirect", "unknown name 'collnetdirect'"},  // NCCL_ALGO's name; here COLLNET_DIRECT
  };
  for (const auto& [text, reason] : cases) {
    SelectionRows rows = 42;
    std::string error;
    EXPECT_FALSE(parseSelection(text, &rows, &error)) << text;
    EXPECT_EQ(rows, 42u) << text;
    EXPECT_NE(error.find(reason), std::string::npos) << text << ": " << error;
  }
}

TEST(PlanSelection, RowsExistPerCollective) {
  EXPECT_EQ(selectionRowsFor(rowsOf("tree"), CollId::kBroadcast), 0u);
  EXPECT_NE(selectionRowsFor(rowsOf("tree"), CollId::kAllReduce), 0u);
  EXPECT_EQ(selectionRowsFor(rowsOf("pat"), CollId::kAllReduce), 0u);
  EXPECT_NE(selectionRowsFor(rowsOf("pat"), CollId::kReduceScatter), 0u);
  EXPECT_EQ(selectionRowsFor(rowsOf("symk_ll"), CollId::kBroadcast), 0u);
  EXPECT_NE(selectionRowsFor(rowsOf("symk_ll"), CollId::kAllGather), 0u);
  for (CollId coll : kColls) {
    EXPECT_EQ(selectionRowsFor(rowsOf("ring,direct"), coll), rowsOf("ring,direct")) << collName(coll);
  }
}

// ---- Decisions within an operation's constraints ----

TEST(PlanOpConstraints, NoConstraintsIsThePlainDecision) {
  for (const CommModel& m : {nodeModel(4, true), nodeModel(8, false), treeModel(4)}) {
    for (CollId coll : kColls) {
      for (size_t bytes : sizes()) {
        Decision plain{};
        ASSERT_EQ(decide(m, filterOf(nullptr), coll, bytes, &plain), ncclSuccess);
        Decision d = decideOk(m, filterOf(nullptr), OpConstraints{}, coll, bytes);
        EXPECT_EQ(d.algo, plain.algo);
        EXPECT_EQ(d.proto, plain.proto);
        EXPECT_EQ(d.nChannels, plain.nChannels);
        EXPECT_EQ(d.nThreads, plain.nThreads);
        EXPECT_EQ(d.chunkBytes, plain.chunkBytes);
        EXPECT_EQ(d.clusterSize, plain.clusterSize);
      }
    }
  }
}

TEST(PlanOpConstraints, ChannelsStayWithinTheCallsBounds) {
  struct Bounds {
    int min, max;
  };
  for (Bounds b : {Bounds{1, 1}, Bounds{4, 8}, Bounds{3, 3}, Bounds{16, 32}}) {
    OpConstraints op;
    op.minChannels = b.min;
    op.maxChannels = b.max;
    for (const CommModel& m : {nodeModel(4, true), nodeModel(8, false), treeModel(4)}) {
      for (CollId coll : kColls) {
        for (size_t bytes : sizes()) {
          Decision d = decideOk(m, filterOf(nullptr), op, coll, bytes);
          // The channels the algorithm and protocol have: LL across hosts keeps to kNetLlChannels.
          int has = d.algo == kAlgoDirect ? m.maxDirectChannels : d.algo == kAlgoTree ? m.nTreeChannels : m.maxChannels;
          if (d.algo != kAlgoDirect && d.proto == kProtoLL && m.nNodes > 1) has = std::min(has, kNetLlChannels);
          SCOPED_TRACE(std::string(collName(coll)) + " " + std::to_string(bytes) + " " + algoName(d.algo) + "/" +
                       protoName(d.proto));
          EXPECT_LE(d.nChannels, std::min(b.max, has));
          EXPECT_GE(d.nChannels, std::min(b.min, std::min(b.max, has)));
          EXPECT_GT(d.chunkBytes, 0u);
        }
      }
    }
  }
}

TEST(PlanOpConstraints, ClusterSizeIsTheCallsWhereGiven) {
  OpConstraints op;
  op.cgaClusterSize = 2;
  EXPECT_EQ(decideOk(nodeModel(4, true), filterOf(nullptr), op, CollId::kAllReduce, 1 << 28).clusterSize, 2);
  op.cgaClusterSize = 0;
  EXPECT_EQ(decideOk(nodeModel(4, true), filterOf(nullptr), op, CollId::kAllReduce, 1 << 28).clusterSize, 0);
  CommModel comm = nodeModel(4, true);
  comm.cgaClusterSize = 8;  // the communicator's cgaClusterSize, which kClusterOfComm keeps
  EXPECT_EQ(decideOk(comm, filterOf(nullptr), OpConstraints{}, CollId::kAllReduce, 1 << 28).clusterSize, 8);
}

TEST(PlanOpConstraints, SelectionForcesTheAlgorithmAndProtocol) {
  const CommModel m = nodeModel(4, true);
  // The automatic choice is Direct for 8 bytes and Ring/Simple for 256 MiB.
  ASSERT_EQ(decideOk(m, filterOf(nullptr), OpConstraints{}, CollId::kAllReduce, 8).algo, kAlgoDirect);
  ASSERT_EQ(decideOk(m, filterOf(nullptr), OpConstraints{}, CollId::kAllReduce, 1 << 28).algo, kAlgoRing);
  EXPECT_EQ(decideOk(m, filterOf(nullptr), selecting("ring"), CollId::kAllReduce, 8).algo, kAlgoRing);
  Decision d = decideOk(m, filterOf(nullptr), selecting("direct"), CollId::kAllReduce, 1 << 28);
  EXPECT_EQ(d.algo, kAlgoDirect);
  EXPECT_EQ(d.proto, kProtoLL);
  d = decideOk(m, filterOf(nullptr), selecting("RING_SIMPLE"), CollId::kAllGather, 8);
  EXPECT_EQ(d.algo, kAlgoRing);
  EXPECT_EQ(d.proto, kProtoSimple);
  d = decideOk(m, filterOf(nullptr), selecting("ring+^ring_simple"), CollId::kBroadcast, 1 << 28);
  EXPECT_EQ(d.algo, kAlgoRing);
  EXPECT_NE(d.proto, kProtoSimple);
  d = decideOk(treeModel(4), filterOf(nullptr), selecting("tree_simple"), CollId::kAllReduce, 8);
  EXPECT_EQ(d.algo, kAlgoTree);
  EXPECT_EQ(d.proto, kProtoSimple);
}

// Forced: nothing usable is ncclInvalidUsage with a WARN naming config->algSelection and the
// collective; not forced: the automatic choice (within NCCL_ALGO), no WARN.
TEST(PlanOpConstraints, UnsatisfiableSelectionIsRefusedOnlyWhenForced) {
  struct Case {
    CommModel model;
    const char* algoEnv;
    const char* selection;
    CollId coll;
  };
  const Case cases[] = {
      {nodeModel(4, false), nullptr, "direct", CollId::kAllReduce},   // no direct channels
      {nodeModel(4, true), "ring", "direct", CollId::kAllGather},     // NCCL_ALGO excludes it
      {nodeModel(4, true), nullptr, "nvls", CollId::kReduceScatter},  // Braid has no NVLS
      {nodeModel(4, true), nullptr, "tree", CollId::kAllReduce},      // one host: no trees
      {nodeModel(4, true), nullptr, "symk", CollId::kAllGather},      // no symmetric kernels
      {treeModel(4), nullptr, "tree_ll128", CollId::kAllReduce},      // Braid's tree has no LL128
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selection);
    Decision d{};
    EXPECT_EQ(decide(c.model, filterOf(c.algoEnv), selecting(c.selection), c.coll, 4096, &d), ncclInvalidUsage);
    const std::string warn = logLastError();
    EXPECT_NE(warn.find(std::string("config->algSelection \"") + c.selection + "\""), std::string::npos) << warn;
    EXPECT_NE(warn.find(collName(c.coll)), std::string::npos) << warn;
    EXPECT_NE(warn.find("forceAlgSelection"), std::string::npos) << warn;
    markLastError();
    Decision fallback = decideOk(c.model, filterOf(c.algoEnv), selecting(c.selection, false), c.coll, 4096);
    Decision automatic = decideOk(c.model, filterOf(c.algoEnv), OpConstraints{}, c.coll, 4096);
    EXPECT_EQ(fallback.algo, automatic.algo);
    EXPECT_EQ(fallback.proto, automatic.proto);
    EXPECT_STREQ(logLastError(), kMarker);
  }
}

// NCCL_ALGO and NCCL_PROTO still bound a selection: it narrows them, never widens.
TEST(PlanOpConstraints, SelectionNarrowsTheFilter) {
  const CommModel m = nodeModel(4, true);
  Decision d = decideOk(m, filterOf(nullptr, "simple"), selecting("ring"), CollId::kAllReduce, 8);
  EXPECT_EQ(d.proto, kProtoSimple);
  d = decideOk(m, filterOf("ring,direct"), selecting("^direct"), CollId::kAllReduce, 8);
  EXPECT_EQ(d.algo, kAlgoRing);
  Decision refused{};
  EXPECT_EQ(decide(m, filterOf(nullptr, "simple"), selecting("ring_ll"), CollId::kAllReduce, 8, &refused),
            ncclInvalidUsage);
}

}  // namespace
}  // namespace braid::plan
