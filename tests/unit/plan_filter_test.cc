// NCCL_ALGO / NCCL_PROTO parsing: NCCL's documented examples, case, '^', per-collective entries,
// what is left to collectives an entry does not name, and errors.
#include "plan_test_util.h"

namespace braid::plan {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

TEST(PlanFilter, EmptyAllowsEverything) {
  for (const char* text : {static_cast<const char*>(nullptr), "", "  ", ";"}) {
    Filter f = parse(text, text);
    for (int c = 0; c < kNumColls; ++c) {
      for (int a = 0; a < kNumAlgos; ++a) EXPECT_TRUE(f.algo[c][a]);
      for (int p = 0; p < kNumProtos; ++p) EXPECT_TRUE(f.proto[c][p]);
    }
  }
}

TEST(PlanFilter, NcclAlgoExample) {
  Filter f = parse("ring,collnetdirect;allreduce:tree,collnetdirect", nullptr);
  for (int c = 0; c < kNumColls; ++c) {
    for (int a = 0; a < kNumAlgos; ++a) {
      bool expected =
          c == kAllReduce ? (a == kAlgoTree || a == kAlgoCollNetDirect) : (a == kAlgoRing || a == kAlgoCollNetDirect);
      EXPECT_EQ(f.algo[c][a], expected) << collName(kColls[c]) << " " << algoName(static_cast<AlgoId>(a));
    }
    for (int p = 0; p < kNumProtos; ++p) EXPECT_TRUE(f.proto[c][p]);
  }
}

// NCCL 2.31's rule: a collective NCCL_ALGO does not name gets no algorithm, and deciding for it fails
// naming the collective; NCCL_PROTO keeps every protocol for collectives it does not name.
TEST(PlanFilter, CollectivesNcclAlgoDoesNotNameGetNoAlgorithm) {
  Filter f = parse("allreduce:tree", "Simple");
  for (int c = 0; c < kNumColls; ++c) {
    EXPECT_EQ(f.algoNamed[c], c == kAllReduce);
    for (int a = 0; a < kNumAlgos; ++a) {
      EXPECT_EQ(f.algo[c][a], c == kAllReduce && a == kAlgoTree) << collName(kColls[c]) << " " << a;
    }
  }
  Filter g = parse(nullptr, "allreduce:LL");
  EXPECT_TRUE(g.proto[kBroadcast][kProtoSimple]);
  Filter ringForAll = parse("ring;allreduce:tree", nullptr);
  EXPECT_TRUE(ringForAll.algo[kBroadcast][kAlgoRing]);
}

TEST(PlanFilter, NcclProtoExamples) {
  Filter f = parse(nullptr, "^LL128;allreduce:LL128");
  for (int c = 0; c < kNumColls; ++c) {
    EXPECT_EQ(f.proto[c][kProtoLL], c != kAllReduce);
    EXPECT_EQ(f.proto[c][kProtoLL128], c == kAllReduce);
    EXPECT_EQ(f.proto[c][kProtoSimple], c != kAllReduce);
  }
  Filter g = parse(nullptr, "LL,Simple;allreduce:^LL");
  EXPECT_TRUE(g.proto[kBroadcast][kProtoLL]);
  EXPECT_FALSE(g.proto[kBroadcast][kProtoLL128]);
  EXPECT_FALSE(g.proto[kAllReduce][kProtoLL]);
  EXPECT_TRUE(g.proto[kAllReduce][kProtoLL128]);
  EXPECT_TRUE(g.proto[kAllReduce][kProtoSimple]);
}

// A prefixed first entry: NCCL_ALGO leaves the other collectives no algorithm (NCCL 2.31's rule),
// NCCL_PROTO leaves them every protocol.
TEST(PlanFilter, PrefixedFirstEntryAndOtherCollectives) {
  Filter f = parse("allreduce:ring", "broadcast:simple");
  for (int a = 0; a < kNumAlgos; ++a) {
    EXPECT_EQ(f.algo[kAllReduce][a], a == kAlgoRing);
    EXPECT_FALSE(f.algo[kBroadcast][a]);
  }
  EXPECT_FALSE(f.proto[kBroadcast][kProtoLL]);
  EXPECT_TRUE(f.proto[kBroadcast][kProtoSimple]);
  EXPECT_TRUE(f.proto[kAllReduce][kProtoLL]);
  std::string warn = logLastError();
  EXPECT_NE(warn.find("NCCL_ALGO=\"allreduce:ring\""), std::string::npos) << warn;
  EXPECT_NE(warn.find("leaves Broadcast, Reduce, AllGather, ReduceScatter without"), std::string::npos) << warn;

  Filter g = parse("reduce:^ring;allgather:direct", nullptr);
  int reduce = static_cast<int>(CollId::kReduce);
  int allgather = static_cast<int>(CollId::kAllGather);
  for (int a = 0; a < kNumAlgos; ++a) {
    EXPECT_EQ(g.algo[reduce][a], a != kAlgoRing);
    EXPECT_EQ(g.algo[allgather][a], a == kAlgoDirect);
    EXPECT_FALSE(g.algo[kAllReduce][a]);
  }
}

// A first entry for every collective, then per-collective entries: nothing is zero-filled, no WARN.
TEST(PlanFilter, UnprefixedFirstEntryStillCoversEveryCollective) {
  markLastError();
  Filter f = parse("ring;allreduce:tree", nullptr);
  for (int c = 0; c < kNumColls; ++c) {
    for (int a = 0; a < kNumAlgos; ++a) EXPECT_EQ(f.algo[c][a], a == (c == kAllReduce ? kAlgoTree : kAlgoRing));
  }
  EXPECT_STREQ(logLastError(), kMarker);
}

// The WARN names every collective left without an algorithm Braid has, also without a prefix:
// "tree" is AllReduce's only, "nvls" none of Braid's.
TEST(PlanFilter, WarnsAboutCollectivesWithoutBraidAlgorithms) {
  markLastError();
  (void)parse("tree", nullptr);
  std::string warn = logLastError();
  EXPECT_NE(warn.find("leaves Broadcast, Reduce, AllGather, ReduceScatter without"), std::string::npos) << warn;
  markLastError();
  (void)parse("nvls,pat", nullptr);
  warn = logLastError();
  EXPECT_NE(warn.find("Broadcast, Reduce, AllGather, ReduceScatter, AllReduce"), std::string::npos) << warn;
  markLastError();
  (void)parse("allreduce:tree;broadcast:ring;reduce:ring;allgather:direct;reducescatter:ring,direct", nullptr);
  EXPECT_STREQ(logLastError(), kMarker);
}

TEST(PlanFilter, CaseInsensitiveAndWhitespace) {
  Filter f = parse(" RING , nvlsTREE ; ALLREDUCE : Pat ;", "aLLgather: ll128 , SIMPLE");
  EXPECT_TRUE(f.algo[kBroadcast][kAlgoRing]);
  EXPECT_TRUE(f.algo[kBroadcast][kAlgoNvlsTree]);
  EXPECT_FALSE(f.algo[kBroadcast][kAlgoTree]);
  for (int a = 0; a < kNumAlgos; ++a) EXPECT_EQ(f.algo[kAllReduce][a], a == kAlgoPat);
  int ag = static_cast<int>(CollId::kAllGather);
  EXPECT_FALSE(f.proto[ag][kProtoLL]);
  EXPECT_TRUE(f.proto[ag][kProtoLL128]);
  EXPECT_TRUE(f.proto[ag][kProtoSimple]);
}

TEST(PlanFilter, CaretInvertsAndLaterEntriesReplace) {
  Filter f = parse("^tree,pat;reduce:^ring;reduce:nvls", nullptr);
  EXPECT_FALSE(f.algo[kBroadcast][kAlgoTree]);
  EXPECT_FALSE(f.algo[kBroadcast][kAlgoPat]);
  EXPECT_TRUE(f.algo[kBroadcast][kAlgoRing]);
  EXPECT_TRUE(f.algo[kBroadcast][kAlgoCollNetChain]);
  int reduce = static_cast<int>(CollId::kReduce);
  for (int a = 0; a < kNumAlgos; ++a) EXPECT_EQ(f.algo[reduce][a], a == kAlgoNvls);
}

struct BadFilter {
  const char* algo;
  const char* proto;
  const char* variable;  // expected in the WARN
  const char* token;     // expected in the WARN
};

TEST(PlanFilter, MalformedOrUnknownIsInvalidArgument) {
  const BadFilter cases[] = {
      {"rings", nullptr, "NCCL_ALGO", "'rings'"},
      {"ring;tree", nullptr, "NCCL_ALGO", "'tree'"},
      {"allreduce:ring;tree", nullptr, "NCCL_ALGO", "'tree'"},
      {"allreduce:", nullptr, "NCCL_ALGO", "empty"},
      {"^", nullptr, "NCCL_ALGO", "empty"},
      {"ring,,tree", nullptr, "NCCL_ALGO", "''"},
      {"allreduc:ring", nullptr, "NCCL_ALGO", "'allreduc'"},
      {"alltoall:ring", nullptr, "NCCL_ALGO", "'alltoall'"},
      {"allreduce:ring:tree", nullptr, "NCCL_ALGO", "'ring:tree'"},
      {nullptr, "LL256", "NCCL_PROTO", "'LL256'"},
      {nullptr, "ring", "NCCL_PROTO", "'ring'"},
      {nullptr, "simple;ll", "NCCL_PROTO", "'ll'"},
      {"ring", "allreduce:^", "NCCL_PROTO", "empty"},
  };
  for (const BadFilter& bad : cases) {
    Filter f;
    f.algo[0][0] = false;  // a marker: a failed parse leaves *out untouched
    f.algo[0][1] = true;
    EXPECT_EQ(parseFilter(bad.algo, bad.proto, &f), ncclInvalidArgument)
        << (bad.algo ? bad.algo : "") << " / " << (bad.proto ? bad.proto : "");
    EXPECT_FALSE(f.algo[0][0]);
    std::string warn = logLastError();
    EXPECT_NE(warn.find(bad.variable), std::string::npos) << warn;
    EXPECT_NE(warn.find(bad.token), std::string::npos) << warn;
  }
}

// Only a filter that leaves AllReduce Tree alone makes one host build trees (topo's singleHostTrees).
TEST(PlanFilter, OnlyTreeForAllReduce) {
  EXPECT_FALSE(onlyTreeForAllReduce(allowAll()));
  EXPECT_TRUE(onlyTreeForAllReduce(parse("tree", nullptr)));
  EXPECT_TRUE(onlyTreeForAllReduce(parse("allreduce:Tree", nullptr)));
  EXPECT_TRUE(onlyTreeForAllReduce(parse("^ring,direct", nullptr)));
  EXPECT_FALSE(onlyTreeForAllReduce(parse("ring,tree", nullptr)));
  EXPECT_FALSE(onlyTreeForAllReduce(parse("tree,direct", nullptr)));
  EXPECT_FALSE(onlyTreeForAllReduce(parse("tree;allreduce:ring", nullptr)));
  EXPECT_FALSE(onlyTreeForAllReduce(parse("allgather:tree", nullptr)));
}

TEST(PlanFilter, Names) {
  EXPECT_STREQ(collName(CollId::kReduceScatter), "ReduceScatter");
  EXPECT_STREQ(algoName(kAlgoNvlsTree), "NVLSTree");
  EXPECT_STREQ(protoName(kProtoLL128), "LL128");
  EXPECT_STREQ(protoName(static_cast<ProtoId>(7)), "unknown");
}

}  // namespace
}  // namespace braid::plan
