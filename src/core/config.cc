#include "core/config.h"

#include <climits>
#include <cstddef>
#include <cstring>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// The smallest layout we accept ends with `version`: without it we cannot know which fields the
// caller's header had.
constexpr size_t kMinConfigSize = offsetof(ncclConfig_t, version) + sizeof(unsigned);
// The size of NCCL 2.30's layout (maxP2pPeers, then graphStreamOrdering or padding).
constexpr size_t kSize2_30 = offsetof(ncclConfig_t, launchOrderImplicit);
static_assert(kSize2_30 == 96, "NCCL 2.30's ncclConfig_t is 96 bytes");
static_assert(sizeof(ncclConfig_t) == 120, "NCCL 2.31's ncclConfig_t is 120 bytes");

// Copies the caller's struct over an initializer-filled one, so that fields beyond the caller's
// size stay UNDEF, then forgets fields the caller's header version did not have (their bytes may
// be padding or garbage in an older layout).
ncclResult_t readUserConfig(const ncclConfig_t* user, const char* caller, ncclConfig_t* raw) {
  *raw = NCCL_CONFIG_INITIALIZER;
  if (user == nullptr) return ncclSuccess;
  if (user->size < kMinConfigSize) {
    WARN(
        "%s: config->size is %zu, smaller than any ncclConfig_t layout (%zu); initialize the config with "
        "NCCL_CONFIG_INITIALIZER",
        caller, user->size, kMinConfigSize);
    return ncclInvalidArgument;
  }
  if (user->magic != kConfigMagic) {
    WARN("%s: config->magic is 0x%x, expected 0x%x; initialize the config with NCCL_CONFIG_INITIALIZER", caller,
         user->magic, kConfigMagic);
    return ncclInvalidArgument;
  }
  std::memcpy(raw, user, user->size < sizeof(ncclConfig_t) ? user->size : sizeof(ncclConfig_t));
  raw->size = sizeof(ncclConfig_t);

  const unsigned v = user->version;
  const ncclConfig_t undef = NCCL_CONFIG_INITIALIZER;
  if (v < NCCL_VERSION(2, 14, 0)) raw->blocking = undef.blocking;
  if (v < NCCL_VERSION(2, 17, 0)) {
    raw->cgaClusterSize = undef.cgaClusterSize;
    raw->minCTAs = undef.minCTAs;
    raw->maxCTAs = undef.maxCTAs;
    raw->netName = undef.netName;
  }
  if (v < NCCL_VERSION(2, 18, 0)) raw->splitShare = undef.splitShare;
  // trafficClass sits in what was padding of the 2.17-2.25 48-byte layout and first shipped in the
  // 2.26 header. (NCCL gates it at 2.25.0 and so reads a 2.25.x program's padding as a traffic
  // class; we gate it where the field really appeared.)
  if (v < NCCL_VERSION(2, 26, 0)) raw->trafficClass = undef.trafficClass;
  if (v < NCCL_VERSION(2, 27, 0)) {
    raw->commName = undef.commName;
    raw->collnetEnable = undef.collnetEnable;
    raw->CTAPolicy = undef.CTAPolicy;
    raw->shrinkShare = undef.shrinkShare;
    raw->nvlsCTAs = undef.nvlsCTAs;
  }
  if (v < NCCL_VERSION(2, 28, 0)) {
    raw->nChannelsPerNetPeer = undef.nChannelsPerNetPeer;
    raw->nvlinkCentricSched = undef.nvlinkCentricSched;
  }
  // Later fields are read when the caller's size covers them: each of the 88 (2.29), 96 (2.30) and
  // 120-byte (2.31+) layouts first appeared with its fields, so the size says which it has. (Programs
  // built against Braid's header before it said 2.32.3 stamp 2.28.9 on the 120-byte layout, so
  // gating these by version, as NCCL does, would drop their fields.) One exception: graphStreamOrdering sits in
  // the padding of 2.30's first 96-byte layouts, before 2.30.5.
  if (user->size == kSize2_30 && v < NCCL_VERSION(2, 30, 5)) {
    raw->graphStreamOrdering = undef.graphStreamOrdering;
  }
  return ncclSuccess;
}

bool isUndef(int v) { return v == NCCL_CONFIG_UNDEF_INT; }

// An environment override replaces the config value when the variable is set.
void applyOverride(ParamId id, int* field) {
  if (paramIsSet(id) && paramInt(id) >= 0) *field = static_cast<int>(paramInt(id));
}

ncclResult_t checkRange(const char* caller, const char* field, int value, int lo, int hi) {
  if (value < lo || value > hi) {
    WARN("%s: config->%s is %d, must be in [%d, %d]", caller, field, value, lo, hi);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// The fields of NCCL 2.29-2.32.
ncclResult_t validateLaterFields(const CommConfig& c, const char* caller) {
  NCCLCHECK(checkRange(caller, "graphUsageMode", c.graphUsageMode, 0, 2));
  NCCLCHECK(checkRange(caller, "numRmaCtx", c.rma.numRmaCtx, 0, INT_MAX));
  if (!isUndef(c.rma.numRmaSig)) NCCLCHECK(checkRange(caller, "numRmaSig", c.rma.numRmaSig, 1, INT_MAX));
  NCCLCHECK(checkRange(caller, "rmaEagerInit", c.rma.rmaEagerInit, 0, 1));
  if (!isUndef(c.maxP2pPeers)) NCCLCHECK(checkRange(caller, "maxP2pPeers", c.maxP2pPeers, 1, INT_MAX));
  NCCLCHECK(checkRange(caller, "graphStreamOrdering", c.graphStreamOrdering, 0, 1));
  NCCLCHECK(checkRange(caller, "launchOrderImplicit", c.launchOrderImplicit, 0, 1));
  if (c.launchOrderImplicit == 1) {
    WARN(
        "%s: config->launchOrderImplicit = 1 (kernels of different communicators in host launch order) is not "
        "implemented in this version of Braid, which orders each communicator's launches only",
        caller);
    return ncclInvalidUsage;
  }
  if (!isUndef(c.hostCftMode) && c.hostCftMode != ncclHostCftEnable && c.hostCftMode != ncclHostCftDisable &&
      c.hostCftMode != ncclHostCftFallback) {
    WARN("%s: config->hostCftMode is %d, not an ncclHostCftMode_t", caller, c.hostCftMode);
    return ncclInvalidArgument;
  }
  if (c.hostCftMode == ncclHostCftEnable) {
    WARN(
        "%s: config->hostCftMode = ncclHostCftEnable asks for CFT (Compute Fabric Transport), which needs Blackwell "
        "GPUs and CUDA 13.3 and is not implemented in this version of Braid; use ncclHostCftFallback or leave it "
        "undefined",
        caller);
    return ncclInvalidUsage;
  }
  // Any ncclNvlsHostMode_t is met: Braid never uses NVLink SHARP. Negative values other than
  // UNDEF name no mode.
  if (!isUndef(c.nvlsHostMode) && c.nvlsHostMode < 0) {
    WARN("%s: config->nvlsHostMode is %d, not an ncclNvlsHostMode_t", caller, c.nvlsHostMode);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t validate(const CommConfig& c, const char* caller) {
  NCCLCHECK(checkRange(caller, "blocking", c.blocking, 0, 1));
  if (!isUndef(c.ctas.cgaClusterSize)) NCCLCHECK(checkRange(caller, "cgaClusterSize", c.ctas.cgaClusterSize, 0, 8));
  NCCLCHECK(checkRange(caller, "minCTAs", c.ctas.minCTAs, 1, kMaxConfigCtas));
  NCCLCHECK(checkRange(caller, "maxCTAs", c.ctas.maxCTAs, 1, kMaxConfigCtas));
  if (c.ctas.minCTAs > c.ctas.maxCTAs) {
    WARN("%s: config->minCTAs (%d) is larger than config->maxCTAs (%d)", caller, c.ctas.minCTAs, c.ctas.maxCTAs);
    return ncclInvalidArgument;
  }
  NCCLCHECK(checkRange(caller, "splitShare", c.splitShare, 0, 1));
  NCCLCHECK(checkRange(caller, "collnetEnable", c.net.collnetEnable, 0, 1));
  NCCLCHECK(checkRange(caller, "CTAPolicy", c.ctas.ctaPolicy, NCCL_CTA_POLICY_DEFAULT, NCCL_CTA_POLICY_ZERO));
  NCCLCHECK(checkRange(caller, "shrinkShare", c.shrinkShare, 0, 1));
  if (!isUndef(c.ctas.nvlsCTAs)) {
    NCCLCHECK(checkRange(caller, "nvlsCTAs", c.ctas.nvlsCTAs, 1, kMaxConfigCtas));
  }
  if (!isUndef(c.net.nChannelsPerNetPeer)) {
    NCCLCHECK(checkRange(caller, "nChannelsPerNetPeer", c.net.nChannelsPerNetPeer, 1, kMaxConfigCtas));
  }
  NCCLCHECK(checkRange(caller, "nvlinkCentricSched", c.nvlinkCentricSched, 0, 1));
  return validateLaterFields(c, caller);
}

// Field by field: the caller's value if defined, else the base (defaults or the parent's).
void mergeDefined(const ncclConfig_t& raw, CommConfig* c) {
  auto take = [](int v, int* field) {
    if (!isUndef(v)) *field = v;
  };
  take(raw.blocking, &c->blocking);
  take(raw.cgaClusterSize, &c->ctas.cgaClusterSize);
  take(raw.minCTAs, &c->ctas.minCTAs);
  take(raw.maxCTAs, &c->ctas.maxCTAs);
  if (raw.netName != nullptr) c->net.netName = raw.netName;
  take(raw.splitShare, &c->splitShare);
  take(raw.trafficClass, &c->net.trafficClass);
  if (raw.commName != nullptr) c->commName = raw.commName;
  take(raw.collnetEnable, &c->net.collnetEnable);
  take(raw.CTAPolicy, &c->ctas.ctaPolicy);
  take(raw.shrinkShare, &c->shrinkShare);
  take(raw.nvlsCTAs, &c->ctas.nvlsCTAs);
  take(raw.nChannelsPerNetPeer, &c->net.nChannelsPerNetPeer);
  take(raw.nvlinkCentricSched, &c->nvlinkCentricSched);
  take(raw.graphUsageMode, &c->graphUsageMode);
  take(raw.numRmaCtx, &c->rma.numRmaCtx);
  take(raw.maxP2pPeers, &c->maxP2pPeers);
  take(raw.graphStreamOrdering, &c->graphStreamOrdering);
  take(raw.launchOrderImplicit, &c->launchOrderImplicit);
  take(raw.numRmaSig, &c->rma.numRmaSig);
  take(raw.rmaEagerInit, &c->rma.rmaEagerInit);
  take(raw.hostCftMode, &c->hostCftMode);
  take(raw.nvlsHostMode, &c->nvlsHostMode);
}

ncclResult_t parseOnto(const ncclConfig_t* user, const char* caller, CommConfig* c) {
  ncclConfig_t raw;
  NCCLCHECK(readUserConfig(user, caller, &raw));
  mergeDefined(raw, c);
  // A user value outside the range is the caller's mistake: report it before any override.
  NCCLCHECK(validate(*c, caller));
  applyOverride(ParamId::kCommBlocking, &c->blocking);
  applyOverride(ParamId::kCgaClusterSize, &c->ctas.cgaClusterSize);
  applyOverride(ParamId::kMinCtas, &c->ctas.minCTAs);
  applyOverride(ParamId::kMaxCtas, &c->ctas.maxCTAs);
  applyOverride(ParamId::kCommSplitShareResources, &c->splitShare);
  // NCCL_GRAPH_MIXING_SUPPORT, when set, decides graphUsageMode as in NCCL: 1 is mode 2 (mixing).
  if (paramIsSet(ParamId::kGraphMixingSupport)) c->graphUsageMode = paramInt(ParamId::kGraphMixingSupport) == 1 ? 2 : 0;
  if (validate(*c, "NCCL_* environment overrides") != ncclSuccess) return ncclInvalidArgument;
  return ncclSuccess;
}

}  // namespace

ncclResult_t parseConfig(const ncclConfig_t* user, const char* caller, CommConfig* out) {
  CommConfig c;
  NCCLCHECK(parseOnto(user, caller, &c));
  *out = c;
  return ncclSuccess;
}

ncclResult_t parseConfigInherited(const ncclConfig_t* user, const CommConfig& parent, const char* caller,
                                  CommConfig* out) {
  CommConfig c = parent;
  NCCLCHECK(parseOnto(user, caller, &c));
  *out = c;
  return ncclSuccess;
}

}  // namespace braid
