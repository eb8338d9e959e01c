// The communicator's configuration: ncclConfig_t as the caller passed it (any layout from the
// 2.14-era 24-byte struct to the 2.31/2.32 120-byte one, and newer ones truncated to what we know),
// validated, with defaults filled in and NCCL_* environment overrides applied.
#pragma once

#include <nccl.h>

#include <string>

namespace braid {

struct CommConfig {
  int blocking = 1;
  int cgaClusterSize = NCCL_CONFIG_UNDEF_INT;  // UNDEF: the planner picks per collective (plan::Decision)
  int minCTAs = 1;
  int maxCTAs = 64;
  std::string netName;  // empty: automatic
  int splitShare = 0;
  int trafficClass = NCCL_CONFIG_UNDEF_INT;  // UNDEF: the network decides
  std::string commName;
  int collnetEnable = 0;
  int ctaPolicy = NCCL_CTA_POLICY_DEFAULT;
  int shrinkShare = 0;
  int nvlsCTAs = NCCL_CONFIG_UNDEF_INT;             // UNDEF: automatic
  int nChannelsPerNetPeer = NCCL_CONFIG_UNDEF_INT;  // UNDEF: automatic
  int nvlinkCentricSched = 0;
  // 2: graphs and eager work of the communicator may interleave (NCCL_GRAPH_MIXING_SUPPORT=1);
  // 0 (no graphs) or 1 (one graph): the user keeps them apart, so launches need no ordering nodes.
  int graphUsageMode = 2;
  // One-sided (RMA) resources: kept for the day Braid has one-sided operations, which today fail
  // with a WARN whatever these say.
  int numRmaCtx = 1;
  int numRmaSig = NCCL_CONFIG_UNDEF_INT;
  int rmaEagerInit = 0;
  // A bound on concurrent point-to-point peers (UNDEF: all). Braid connects a pair only when it
  // first exchanges data, so the bound is met by any program that keeps to it.
  int maxP2pPeers = NCCL_CONFIG_UNDEF_INT;
  // 0 allows captured kernels to skip the library's cross-stream serialization; Braid keeps it
  // (permitted: ordering the user already guarantees is not broken by more of it).
  int graphStreamOrdering = 1;
  // 1 would order kernels of different communicators by host launch order; Braid orders each
  // communicator's own launches only (launch/launch_order.h), so it refuses 1.
  int launchOrderImplicit = 0;
  int hostCftMode = NCCL_CONFIG_UNDEF_INT;   // ncclHostCftMode_t; Enable is refused (no CFT hardware)
  int nvlsHostMode = NCCL_CONFIG_UNDEF_INT;  // ncclNvlsHostMode_t; Braid never uses NVLS
};

constexpr int kMaxConfigCtas = 64;
constexpr unsigned kConfigMagic = 0xcafebeef;

// Reads `user` (NULL means all defaults) into `out`. Fails with ncclInvalidArgument and a WARN
// naming the field for a bad size, magic or out-of-range value. `caller` names the API function
// for the WARN text.
[[nodiscard]] ncclResult_t parseConfig(const ncclConfig_t* user, const char* caller, CommConfig* out);

// Same, but fields the caller left undefined are taken from `parent` instead of the defaults
// (ncclCommSplit / ncclCommShrink inherit the parent's configuration).
[[nodiscard]] ncclResult_t parseConfigInherited(const ncclConfig_t* user, const CommConfig& parent, const char* caller,
                                                CommConfig* out);

}  // namespace braid
