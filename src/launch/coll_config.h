// ncclCollConfig_t, the options of one nccl*Config call (ncclAllReduceConfig and its siblings):
// read by size, checked against the communicator, and turned into the operation's CollOptions.
//
// Layouts: NCCL 2.31 introduced the struct with 64 bytes (up to userProfilerTag); 2.32 appended
// launchCompletionEvent (72 bytes). A size below 64 is no layout (ncclInvalidArgument, as in
// NCCL); a field is read only when the caller's size covers it, and a larger (newer) struct is read
// up to the fields Braid knows. `version` gates nothing: every layout's fields appeared with its
// size, and programs built against Braid's header before it said 2.32.3 stamp 2.28.9 on the
// 72-byte struct.
//
// Fields (the README's "Per-call configuration" says the same to users):
// - minCTAs / maxCTAs: the operation's channels (CTAs); 1 <= minCTAs <= maxCTAs <= the
//   communicator's maxCTAs. A set NCCL_MIN_CTAS / NCCL_MAX_CTAS wins over the call (NCCL's order:
//   environment, call, communicator).
// - cgaClusterSize: 0-8, the collective kernel's thread-block clusters (Hopper and later); a set
//   NCCL_CGA_CLUSTER_SIZE wins. Point-to-point kernels never use clusters.
// - algSelection / forceAlgSelection: plan/selection.h's grammar. Malformed, or naming nothing the
//   collective has: forced, ncclInvalidArgument here; not forced, the automatic choice. What the
//   communicator cannot run is decided at launch (plan::decide).
// - CTAPolicy: UNDEF (the communicator's) or a mask of EFFICIENCY and ZERO (ZERO wins).
// - nvlsCTAs (Braid has no NVLink SHARP), userProfilerTag (no profiler plugins), ext (vendor
//   options, ignored as NCCL ignores them, never followed): accepted, without effect.
// - launchCompletionEvent: see CollOptions::launchEvent.
// AlltoAll, Gather and Scatter run as Braid's point-to-point kernel, whose channels per peer must
// be the same on both ends of every connection (NCCL_MAX_P2P_NCHANNELS): minCTAs, maxCTAs and
// cgaClusterSize are checked and do not apply to them (an INFO line says so), and no algorithm
// exists to select for them, in NCCL either.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "launch/coll_task.h"

struct ncclComm;

namespace braid {

// The operation a config is for.
struct CollConfigTarget {
  const char* name;  // "AllReduce", "AlltoAll", for messages
  bool p2p;          // AlltoAll, Gather, Scatter
  CollId coll;       // the collective, when !p2p
};

// What the checks need of the communicator.
struct CollConfigComm {
  int maxCtas;    // ncclConfig_t::maxCTAs, after NCCL_MAX_CTAS
  int ctaPolicy;  // ncclConfig_t::CTAPolicy
  // NCCL_CGA_CLUSTER_SIZE, NCCL_MIN_CTAS, NCCL_MAX_CTAS set: they win over the call's field.
  bool envClusterSize;
  bool envMinCtas;
  bool envMaxCtas;
};

// NCCL 2.31's layout, the smallest.
constexpr size_t kCollConfigMinSize = offsetof(ncclCollConfig_t, launchCompletionEvent);

CollConfigComm collConfigCommOf(const ncclComm& comm);

// Reads `user` (not NULL) into *out. A bad size, magic or field value: one WARN naming `caller`
// and the field (config->minCTAs, ...), ncclInvalidArgument, *out untouched.
[[nodiscard]] ncclResult_t readCollConfig(const ncclCollConfig_t* user, const CollConfigComm& comm,
                                          const CollConfigTarget& target, const char* caller, CollOptions* out);

}  // namespace braid
