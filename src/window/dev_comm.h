// What ncclDevCommCreate asks of the window layer and what it gets back, free of any NCCL release's
// structure layout: the API layer reads the program's requirements into a DevCommAsk and writes a
// DevCommMade into the ncclDevComm layout the program was compiled with (api/dev_comm_abi.h).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <vector>

#include "window/dev_resources.h"
#include "window/gin_comm.h"
#include "window/window_types.h"

namespace braid::window {

// A set of LSA barriers in the resource window: its handle and size (ncclLsaBarrierHandle).
struct BarrierSet {
  uint32_t handle = 0;
  int count = 0;
};

// GIN signals or counters a requirement asks for: how many, and where the first id goes.
struct GinIdAsk {
  int count = 0;
  uint32_t* outStart = nullptr;
};

struct DevCommAsk {
  int lsaBarriers = 0;                 // lsaBarrierCount: barriers of the caller's LSA team
  int hybridBarriers = 0;              // barrierCount: the hybrid barriers' LSA part (their GIN part needs GIN)
  std::vector<ResourceAsk> resources;  // the program's own buffers (resourceRequirementsList), in order
  // GIN (proxy transport): wanted at all, contexts, the program's own signals and counters (ids from
  // 0), then the requirements' and the GIN barriers' (railGinBarrierCount, worldGinBarrierCount:
  // nRanks of the team signals each), ids after those.
  bool gin = false;
  int ginContexts = 0;
  int ginSignals = 0, ginCounters = 0;
  std::vector<GinIdAsk> ginSignalAsks, ginCounterAsks;
  int railGinBarriers = 0, worldGinBarriers = 0;
  // barrierCount's GIN parts (hybrid barriers, nccl_device/barrier.h): a rail set and a dense
  // (world) set of that many barriers each.
  int hybridGinBarriers = 0;
  int queueDepth = 0;  // ginQueueDepth (0: the library's)
};

struct DevCommMade {
  int rank = 0, nranks = 0, lsaRank = 0, lsaSize = 1;
  void* windowTable = nullptr;
  ncclWindow_t resourceWindow = nullptr;  // null when nothing was asked for
  WindowVidmem resourceDesc{};            // its device struct's contents (zero when there is none)
  BarrierSet lsaBarrier;
  BarrierSet hybridLsaBarrier;
  uint32_t* abortFlag = nullptr;  // the communicator's kernel abort word (filled by the API layer)
  // GIN: none when ginContexts is 0.
  int ginContexts = 0, ginSignals = 0, ginCounters = 0;
  void* ginHandle = nullptr;  // the contexts' descriptors (ncclGinProxyGpuCtx_t[ginContexts])
  uint64_t* ginSignalShadows = nullptr;
  uint32_t railGinBarrierSignal0 = 0, worldGinBarrierSignal0 = 0;
  uint32_t hybridRailGinBarrierSignal0 = 0, hybridDenseGinBarrierSignal0 = 0;
};

}  // namespace braid::window
