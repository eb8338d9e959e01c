// The correctness sweeps' case lists (the full, reduced and quick sweeps of each tier, seeded) and
// the fixture that runs them (coll_sweep_harness.h runs the cases).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coll_sweep_harness.h"

namespace collsweep {

// ---- Case lists ----------------------------------------------------------------------------------

using TypeOp = std::pair<ncclDataType_t, ncclRedOp_t>;

inline uint64_t baseSeed() {
  static const uint64_t seed = []() -> uint64_t {
    const char* env = std::getenv("BRAID_SWEEP_SEED");
    if (env != nullptr && env[0] != '\0') return std::strtoull(env, nullptr, 0);
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  return seed;
}

inline std::string seedText() {
  return "base seed " + std::to_string(baseSeed()) + " (replay with BRAID_SWEEP_SEED=" + std::to_string(baseSeed()) +
         ")";
}

inline const std::vector<ncclDataType_t>& allTypes() {
  static const std::vector<ncclDataType_t> kTypes = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                                     ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                                     ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  return kTypes;
}
inline const std::vector<ncclRedOp_t>& allOps() {
  static const std::vector<ncclRedOp_t> kOps = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  return kOps;
}

inline std::vector<TypeOp> fullTypeOps(Coll coll) {
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
inline std::vector<TypeOp> reducedTypeOps(Coll coll) {
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

inline void addCases(Coll coll, int nranks, const Shape& shape, std::vector<Case>* out) {
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

inline const std::vector<Coll>& allColls() {
  static const std::vector<Coll> kColls = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
                                           Coll::kReduceScatter};
  return kColls;
}

inline std::vector<Case> fullSweep(Coll coll, int nranks) {
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
inline std::vector<Case> reducedSweepOf(const std::vector<Coll>& colls, int nranks) {
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
inline std::vector<Case> quickSweepOf(const std::vector<Coll>& colls, int nranks) {
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
inline std::vector<Case> tierSweepOf(const std::vector<Coll>& colls, int nranks) {
  return gputest::quickTier() ? quickSweepOf(colls, nranks) : reducedSweepOf(colls, nranks);
}
inline std::vector<Case> tierSweepAllColls(int nranks) { return tierSweepOf(allColls(), nranks); }

// ---- The fixture ---------------------------------------------------------------------------------

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

// Pointers aligned only to the element (one element past a cudaMalloc'd pointer): the Simple
// protocol's unaligned paths (element by element, or by words for copies), LL's partial packs.
inline std::vector<Case> casesAlignedOnlyToTheElement(int nranks) {
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

}  // namespace collsweep
