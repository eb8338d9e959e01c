#include "launch/coll_config.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/comm.h"
#include "plan/selection.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

constexpr int kMaxClusterSize = 8;
constexpr int kCtaPolicyMask = NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO;

bool isUndef(int v) { return v == NCCL_CONFIG_UNDEF_INT; }

bool envOverrides(ParamId id) { return paramIsSet(id) && paramInt(id) >= 0; }

// The caller's struct over an initializer-filled one: fields beyond its size keep their defaults.
ncclResult_t readRaw(const ncclCollConfig_t* user, const char* caller, ncclCollConfig_t* raw) {
  if (user->size < kCollConfigMinSize) {
    WARN(
        "%s: config->size is %zu, smaller than any ncclCollConfig_t layout (%zu bytes, NCCL 2.31's); initialize the "
        "config with NCCL_COLLCONFIG_INITIALIZER",
        caller, user->size, kCollConfigMinSize);
    return ncclInvalidArgument;
  }
  if (user->magic != NCCL_API_MAGIC) {
    WARN("%s: config->magic is 0x%x, expected 0x%x; initialize the config with NCCL_COLLCONFIG_INITIALIZER", caller,
         user->magic, NCCL_API_MAGIC);
    return ncclInvalidArgument;
  }
  *raw = NCCL_COLLCONFIG_INITIALIZER;
  std::memcpy(raw, user, std::min(user->size, sizeof(ncclCollConfig_t)));
  return ncclSuccess;
}

ncclResult_t checkRange(const char* caller, const char* field, int value, int lo, int hi, const char* what = "") {
  if (value >= lo && value <= hi) return ncclSuccess;
  WARN("%s: config->%s is %d, must be in [%d, %d]%s", caller, field, value, lo, hi, what);
  return ncclInvalidArgument;
}

// minCTAs and maxCTAs: within the communicator's maxCTAs, min <= max.
ncclResult_t readCtas(const ncclCollConfig_t& raw, const CollConfigComm& comm, const char* caller,
                      plan::OpConstraints* op) {
  if (!isUndef(raw.maxCTAs)) {
    NCCLCHECK(checkRange(caller, "maxCTAs", raw.maxCTAs, 1, comm.maxCtas, " (the communicator's maxCTAs bounds it)"));
  }
  const int max = isUndef(raw.maxCTAs) ? comm.maxCtas : raw.maxCTAs;
  if (!isUndef(raw.minCTAs)) {
    NCCLCHECK(checkRange(caller, "minCTAs", raw.minCTAs, 1, comm.maxCtas, " (the communicator's maxCTAs bounds it)"));
    if (raw.minCTAs > max) {
      WARN("%s: config->minCTAs (%d) is larger than config->maxCTAs (%d)", caller, raw.minCTAs, max);
      return ncclInvalidArgument;
    }
  }
  if (!isUndef(raw.minCTAs) && !comm.envMinCtas) op->minChannels = raw.minCTAs;
  if (!isUndef(raw.maxCTAs) && !comm.envMaxCtas) op->maxChannels = raw.maxCTAs;
  return ncclSuccess;
}

// algSelection for a collective: its rows of the selection, or (not forced) none when it cannot be
// honored. Forced and not honorable: WARN, ncclInvalidArgument (NCCL refuses such a call too).
ncclResult_t readSelection(const ncclCollConfig_t& raw, const CollConfigTarget& target, const char* caller,
                           plan::OpConstraints* op) {
  if (raw.algSelection == nullptr || raw.algSelection[0] == '\0') return ncclSuccess;
  const std::string text(raw.algSelection);
  std::string why;
  plan::SelectionRows rows = 0;
  if (target.p2p) {
    why = "Braid, like NCCL, has no algorithms to select for it";
  } else if (!plan::parseSelection(text, &rows, &why)) {
    why = "it has " + why;
  } else {
    rows = plan::selectionRowsFor(rows, target.coll);
    if (rows == 0) why = std::string("it names nothing ") + target.name + " has";
  }
  if (!why.empty()) {
    if (raw.forceAlgSelection != 0) {
      WARN(
          "%s: config->algSelection \"%s\" cannot be honored for %s: %s (names: TREE, RING, DIRECT, NVLS, PAT, ... "
          "with a protocol, e.g. RING_SIMPLE; ',' unites, '+' intersects, '^' excludes); set forceAlgSelection = 0 to "
          "fall back to the automatic choice",
          caller, text.c_str(), target.name, why.c_str());
      return ncclInvalidArgument;
    }
    INFO(kLogTuning, "%s: config->algSelection \"%s\" cannot be honored for %s (%s): automatic choice", caller,
         text.c_str(), target.name, why.c_str());
    return ncclSuccess;
  }
  op->selectionRows = rows;
  op->forceSelection = raw.forceAlgSelection != 0;
  op->selectionText = text;
  return ncclSuccess;
}

// One INFO line naming the fields that are accepted but change nothing for this operation.
void noteInertFields(const ncclCollConfig_t& raw, const CollConfigTarget& target, const char* caller) {
  std::string inert;
  auto note = [&inert](bool set, const char* what) {
    if (!set) return;
    if (!inert.empty()) inert += "; ";
    inert += what;
  };
  note(!isUndef(raw.nvlsCTAs), "nvlsCTAs (Braid has no NVLink SHARP)");
  note(raw.userProfilerTag != 0, "userProfilerTag (Braid loads no profiler plugin)");
  note(target.p2p && (!isUndef(raw.minCTAs) || !isUndef(raw.maxCTAs)),
       "minCTAs/maxCTAs (point-to-point channels per peer are NCCL_MAX_P2P_NCHANNELS on every rank)");
  note(target.p2p && !isUndef(raw.cgaClusterSize), "cgaClusterSize (point-to-point kernels launch without clusters)");
  if (inert.empty()) return;
  INFO(kLogTuning, "%s: config fields without effect on %s: %s", caller, target.name, inert.c_str());
}

}  // namespace

CollConfigComm collConfigCommOf(const ncclComm& comm) {
  CollConfigComm c{};
  c.maxCtas = comm.config_.ctas.maxCTAs;
  c.ctaPolicy = comm.config_.ctas.ctaPolicy;
  c.envClusterSize = envOverrides(ParamId::kCgaClusterSize);
  c.envMinCtas = envOverrides(ParamId::kMinCtas);
  c.envMaxCtas = envOverrides(ParamId::kMaxCtas);
  return c;
}

ncclResult_t readCollConfig(const ncclCollConfig_t* user, const CollConfigComm& comm, const CollConfigTarget& target,
                            const char* caller, CollOptions* out) {
  ncclCollConfig_t raw;
  NCCLCHECK(readRaw(user, caller, &raw));
  CollOptions options;
  NCCLCHECK(checkRange(caller, "forceAlgSelection", raw.forceAlgSelection, 0, 1));
  if (!isUndef(raw.CTAPolicy)) NCCLCHECK(checkRange(caller, "CTAPolicy", raw.CTAPolicy, 0, kCtaPolicyMask));
  if (!isUndef(raw.cgaClusterSize)) {
    NCCLCHECK(checkRange(caller, "cgaClusterSize", raw.cgaClusterSize, 0, kMaxClusterSize));
  }
  // nvlsCTAs has no effect here (no NVLink SHARP); it is checked as the communicator's is.
  if (!isUndef(raw.nvlsCTAs)) NCCLCHECK(checkRange(caller, "nvlsCTAs", raw.nvlsCTAs, 1, kMaxConfigCtas));
  NCCLCHECK(readCtas(raw, comm, caller, &options.plan));
  NCCLCHECK(readSelection(raw, target, caller, &options.plan));
  if (!isUndef(raw.cgaClusterSize) && !comm.envClusterSize) options.plan.cgaClusterSize = raw.cgaClusterSize;
  // ZERO wins over EFFICIENCY, as at communicator level in NCCL.
  int policy = isUndef(raw.CTAPolicy) ? comm.ctaPolicy : raw.CTAPolicy;
  if ((policy & NCCL_CTA_POLICY_ZERO) != 0) policy = NCCL_CTA_POLICY_ZERO;
  options.ctaPolicy = policy;
  options.launchEvent = raw.launchCompletionEvent;  // NULL unless the caller's size holds it
  // raw.ext is a vendor's list: NCCL reads none of it, nor does Braid (never followed).
  noteInertFields(raw, target, caller);
  *out = std::move(options);
  return ncclSuccess;
}

}  // namespace braid
