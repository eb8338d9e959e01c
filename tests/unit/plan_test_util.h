// What the planner's tests share: models of one Hopper node, filters, a checked decide, the sizes
// of a sweep, and a way to tell that no WARN was logged since a point.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/tuning_constants.h"
#include "util/log.h"

namespace braid::plan::test_helpers {

constexpr CollId kColls[kNumColls] = {CollId::kBroadcast, CollId::kReduce, CollId::kAllGather, CollId::kReduceScatter,
                                      CollId::kAllReduce};
constexpr int kAllReduce = static_cast<int>(CollId::kAllReduce);
constexpr int kBroadcast = static_cast<int>(CollId::kBroadcast);

// One H100 node: NVLink hop latencies, default buffer sizes (Simple 4 MiB, LL 512 KiB, LL128
// 4,915,200 B per connection, over kFifoSlots[p] slots).
inline CommModel hopperModel(int nranks, bool ll128Ok = true) {
  CommModel m{};
  m.nranks = nranks;
  m.nNodes = 1;
  m.maxChannels = 16;
  m.bwPerChannelGBps = 20.0;
  const double hopUs[kNumProtos] = {1.6, 2.2, 2.9};  // topo's NVLink values
  for (int p = 0; p < kNumProtos; ++p) m.hopLatencyUs[p] = hopUs[p];
  m.ll128Ok = ll128Ok;
  m.llOk = true;
  m.slotPayloadBytes[kProtoSimple] = (4u << 20) / kFifoSlots[kProtoSimple];
  m.slotPayloadBytes[kProtoLL] = (512u << 10) / kFifoSlots[kProtoLL] / 2;
  m.slotPayloadBytes[kProtoLL128] = 4915200u / kFifoSlots[kProtoLL128] * 120 / 128;
  m.nthreadsOverride = -1;
  m.ll128NthreadsOverride = -1;
  m.cgaClusterSize = kAutoClusterSize;
  return m;
}

// The same node with the direct channels topo gives every-pair NVLink (16 CTAs, 8 on 8 ranks).
inline CommModel directModel(int nranks) {
  CommModel m = hopperModel(nranks);
  m.maxDirectChannels = nranks <= 5 ? kMaxDirectChannels : 64 / (nranks - 1);
  return m;
}

// 4 ranks as hosts x GPUs over the socket network (topo's NET and NVLink hop values), with the
// trees topo builds: LL allowed across hosts (BRAID_NET_LL=1).
inline CommModel netModel(int hosts, int perHost) {
  CommModel m = hopperModel(hosts * perHost, /*ll128Ok=*/false);
  m.nNodes = hosts;
  m.maxChannels = 4;
  m.bwPerChannelGBps = 1.5;
  const double netUs[kNumProtos] = {15.0, 0, 21.0};
  const double localUs[kNumProtos] = {1.6, 2.2, 2.9};
  for (int p = 0; p < kNumProtos; ++p) {
    m.hopLatencyUs[p] = netUs[p];
    m.localHopLatencyUs[p] = localUs[p];
  }
  m.nTreeChannels = 4;
  int levels = 0;
  while ((2 << levels) - 1 < hosts) levels++;
  m.treeNetDepth = levels;
  m.treeLocalDepth = perHost - 1;
  return m;
}

inline Filter allowAll() {
  Filter f;
  EXPECT_EQ(parseFilter(nullptr, nullptr, &f), ncclSuccess);
  return f;
}

inline Filter parse(const char* algo, const char* proto) {
  Filter f;
  EXPECT_EQ(parseFilter(algo, proto, &f), ncclSuccess) << (algo ? algo : "") << " / " << (proto ? proto : "");
  return f;
}

// Records a marker as the last error, so that a later logLastError() == kMarker shows no WARN since.
inline constexpr const char* kMarker = "plan_test marker";
inline void markLastError() { WARN("%s", kMarker); }

inline Decision decideOk(const CommModel& m, const Filter& f, CollId coll, size_t bytes) {
  Decision d{};
  EXPECT_EQ(decide(m, f, coll, bytes, &d), ncclSuccess) << collName(coll) << " " << bytes;
  return d;
}

// Sizes 1 B .. 4 GiB: every power of two and its odd neighbours.
inline std::vector<size_t> sweepSizes() {
  std::vector<size_t> sizes;
  for (int k = 0; k <= 32; ++k) {
    size_t p = size_t{1} << k;
    if (p > 2) sizes.push_back(p - 1);
    sizes.push_back(p);
    sizes.push_back(p + 3);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}
}  // namespace braid::plan::test_helpers
