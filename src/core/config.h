// The communicator's configuration: ncclConfig_t as the caller passed it (any layout from the
// 2.14-era 24-byte struct to the 2.28 80-byte one, and newer ones truncated to what we know),
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
