#include "api/dev_comm_abi.h"

#include <cstring>
#include <string>

#include "core/dev_comm_layouts.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// Every release's requirements, read into one shape (fields a release lacks keep their defaults).
struct Requirements {
  ncclDevResourceRequirements_t* resources = nullptr;
  ncclTeamRequirements_t* teams = nullptr;
  bool lsaMultimem = false;
  int barrierCount = 0, lsaBarrierCount = 0, railGinBarrierCount = 0;
  bool ginForceEnable = false;
  int ginSignalCount = 0, ginCounterCount = 0;
  int ginContextCount = 0;
  int ginConnectionType = NCCL_GIN_CONNECTION_NONE;
  int ginQueueDepth = 0;
  int worldGinBarrierCount = 0;
  int ginType = NCCL_GIN_TYPE_NONE;
  int cftCaps = 0, cftBarrierCount = 0;
};

// The fields every release has, 2.28's first eleven.
template <typename R>
void readCommon(const R& r, Requirements* out) {
  out->resources = r.resourceRequirementsList;
  out->teams = r.teamRequirementsList;
  out->lsaMultimem = r.lsaMultimem;
  out->barrierCount = r.barrierCount;
  out->lsaBarrierCount = r.lsaBarrierCount;
  out->railGinBarrierCount = r.railGinBarrierCount;
  out->ginForceEnable = r.ginForceEnable;
  out->ginSignalCount = r.ginSignalCount;
  out->ginCounterCount = r.ginCounterCount;
}

template <typename R>
void readAs(const void* reqs, Requirements* out, R* copy) {
  std::memcpy(copy, reqs, sizeof(R));
  readCommon(*copy, out);
}

// Which layout `reqs` has, from its header (see dev_comm_abi.h).
ncclResult_t releaseOf(const void* reqs, DevCommRelease* out, unsigned int* version) {
  struct Header {
    size_t size;
    unsigned int magic;
    unsigned int version;
  } h;
  std::memcpy(&h, reqs, sizeof(h));  // 2.28's structure is longer than this too
  *version = h.version;
  if (h.magic != NCCL_API_MAGIC) {
    *out = DevCommRelease::k22809;
    *version = 0;
    return ncclSuccess;
  }
  const unsigned v = h.version;
  // Programs built against Braid's header before it said 2.32.3 wrote 2.28.9 with 2.32's structure
  // (docs/device-api.md); 2.31 and 2.32 lay both structures out alike.
  const bool ownHeader = v == NCCL_VERSION(2, 28, 9) && h.size == sizeof(ncclDevCommRequirements_t);
  if (ownHeader || (v >= NCCL_VERSION(2, 31, 0) && v <= NCCL_VERSION(2, 32, 99))) {
    *out = DevCommRelease::k23203;
  } else if (v >= NCCL_VERSION(2, 29, 0) && v < NCCL_VERSION(2, 29, 5)) {
    *out = DevCommRelease::k22902;
  } else if (v >= NCCL_VERSION(2, 29, 5) && v < NCCL_VERSION(2, 30, 0)) {
    *out = DevCommRelease::k22907;
  } else if (v >= NCCL_VERSION(2, 30, 0) && v < NCCL_VERSION(2, 31, 0)) {
    *out = DevCommRelease::k23007;
  } else {
    WARN(
        "ncclDevCommCreate: the requirements come from a program compiled against NCCL version %u, whose device "
        "communicator layout Braid does not know (it knows 2.28.9 to 2.32.3)",
        v);
    return ncclInvalidUsage;
  }
  static const size_t kSizes[] = {sizeof(DevCommRequirementsV22809), sizeof(DevCommRequirementsV22902),
                                  sizeof(DevCommRequirementsV22907), sizeof(DevCommRequirementsV23007),
                                  sizeof(ncclDevCommRequirements_t)};
  if (h.size < kSizes[static_cast<int>(*out)]) {
    WARN(
        "ncclDevCommCreate: requirements of NCCL %s hold %zu bytes, fewer than that release's %zu: not initialized "
        "with NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER?",
        releaseName(*out), h.size, kSizes[static_cast<int>(*out)]);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

void readRequirements(const void* reqs, DevCommRelease release, Requirements* out) {
  switch (release) {
    case DevCommRelease::k22809: {
      DevCommRequirementsV22809 r;
      readAs(reqs, out, &r);
      break;
    }
    case DevCommRelease::k22902: {
      DevCommRequirementsV22902 r;
      readAs(reqs, out, &r);
      break;
    }
    case DevCommRelease::k22907: {
      DevCommRequirementsV22907 r;
      readAs(reqs, out, &r);
      out->ginConnectionType = r.ginConnectionType;
      break;
    }
    case DevCommRelease::k23007: {
      DevCommRequirementsV23007 r;
      readAs(reqs, out, &r);
      out->ginConnectionType = r.ginConnectionType;
      out->worldGinBarrierCount = r.worldGinBarrierCount;
      break;
    }
    case DevCommRelease::k23203: {
      ncclDevCommRequirements_t r;
      readAs(reqs, out, &r);
      out->ginContextCount = r.ginContextCount;
      out->ginQueueDepth = r.ginQueueDepth;
      out->ginConnectionType = r.ginConnectionType;
      out->worldGinBarrierCount = r.worldGinBarrierCount;
      out->ginType = r.ginType;
      out->cftCaps = r.cftCaps;
      out->cftBarrierCount = r.cftBarrierCount;
      break;
    }
  }
}

constexpr int kMaxListNodes = 1 << 16;  // more is a list that loops

ncclResult_t refuse(const char* what) {
  WARN("ncclDevCommCreate: the requirements ask for %s", what);
  return ncclInvalidUsage;
}

// The program's own buffers, and the GIN signals and counters they ask for.
ncclResult_t readResources(ncclDevResourceRequirements_t* node, window::DevCommAsk* ask) {
  for (int i = 0; node != nullptr; node = node->next, ++i) {
    if (i == kMaxListNodes) {
      WARN("ncclDevCommCreate: resourceRequirementsList has more than %d entries (does it loop?)", kMaxListNodes);
      return ncclInvalidArgument;
    }
    if (node->ginSignalCount < 0 || node->ginCounterCount < 0) {
      WARN("ncclDevCommCreate: resource requirement %d asks for %d GIN signals and %d counters: negative", i,
           node->ginSignalCount, node->ginCounterCount);
      return ncclInvalidArgument;
    }
    if (node->ginSignalCount > 0) {
      ask->ginSignalAsks.push_back(window::GinIdAsk{node->ginSignalCount, node->outGinSignalStart});
    }
    if (node->ginCounterCount > 0) {
      ask->ginCounterAsks.push_back(window::GinIdAsk{node->ginCounterCount, node->outGinCounterStart});
    }
    ask->resources.push_back(window::ResourceAsk{node->bufferSize, node->bufferAlign, node->outBufferHandle,
                                                 "resource requirement " + std::to_string(i)});
  }
  return ncclSuccess;
}

ncclResult_t readTeams(ncclTeamRequirements_t* node) {
  for (int i = 0; node != nullptr; node = node->next, ++i) {
    if (i == kMaxListNodes) {
      WARN("ncclDevCommCreate: teamRequirementsList has more than %d entries (does it loop?)", kMaxListNodes);
      return ncclInvalidArgument;
    }
    if (node->multimem) return refuse("a multimem team: Braid never uses NVLink SHARP multicast");
  }
  return ncclSuccess;
}

// What needs GIN whatever the teams. Rail GIN barriers and hybrid barriers (barrierCount) are not in
// it: on a rail of one rank (one LSA team is the whole communicator) their GIN parts have no peer to
// wait for, and NCCL 2.28 makes them there without GIN (PyTorch's symmetric memory asks for them).
bool asksForGin(const Requirements& r, const window::DevCommAsk& ask) {
  return r.ginForceEnable || r.ginSignalCount != 0 || r.ginCounterCount != 0 || r.worldGinBarrierCount != 0 ||
         r.ginConnectionType != NCCL_GIN_CONNECTION_NONE || r.ginType != NCCL_GIN_TYPE_NONE ||
         !ask.ginSignalAsks.empty() || !ask.ginCounterAsks.empty();
}

// GIN over the proxy transport (the library's network thread), for kernels compiled against a
// 2.32 header (NVIDIA's or Braid's): the proxy protocol of nccl_device/gin_proxy.h. 2.31 posts the
// same descriptors, but its kernels did not run against this proxy in testing, so they are refused.
ncclResult_t readGin(const Requirements& r, const DevCommLayout& layout, int nranks, int lsaSize,
                     window::DevCommAsk* ask) {
  ask->gin = asksForGin(r, *ask) || ((r.railGinBarrierCount > 0 || r.barrierCount > 0) && lsaSize != nranks);
  if (!ask->gin) return ncclSuccess;
  if (paramInt(ParamId::kGinEnable) == 0) {
    WARN("ncclDevCommCreate: the requirements ask for GIN, which NCCL_GIN_ENABLE=0 turns off");
    return ncclInvalidUsage;
  }
  if (layout.version < kFirstGinVersion) {
    WARN(
        "ncclDevCommCreate: the requirements ask for GIN from a program compiled against NCCL %s (version %u); "
        "Braid's GIN serves programs built against NCCL 2.32 (GIN programs are rebuilt for each NCCL release)",
        releaseName(layout.release), layout.version);
    return ncclInvalidUsage;
  }
  if (r.ginType != NCCL_GIN_TYPE_NONE && r.ginType != NCCL_GIN_TYPE_PROXY) {
    return refuse("a GIN type other than the proxy (GDAKI, GPI and EFA GDA drive a NIC from the GPU)");
  }
  if (r.ginConnectionType == NCCL_GIN_CONNECTION_CUSTOM_STRIDE) {
    return refuse("a GIN connection of a custom stride, which is not in this version of Braid");
  }
  if (r.ginSignalCount < 0 || r.ginCounterCount < 0 || r.worldGinBarrierCount < 0) {
    WARN("ncclDevCommCreate: ginSignalCount %d, ginCounterCount %d and worldGinBarrierCount %d must not be negative",
         r.ginSignalCount, r.ginCounterCount, r.worldGinBarrierCount);
    return ncclInvalidArgument;
  }
  ask->ginContexts = r.ginContextCount;
  ask->ginSignals = r.ginSignalCount;
  ask->ginCounters = r.ginCounterCount;
  ask->railGinBarriers = r.railGinBarrierCount;
  ask->worldGinBarriers = r.worldGinBarrierCount;
  ask->hybridGinBarriers = r.barrierCount;
  ask->queueDepth = r.ginQueueDepth;
  return ncclSuccess;
}

}  // namespace

const char* releaseName(DevCommRelease release) {
  switch (release) {
    case DevCommRelease::k22809:
      return "2.28";
    case DevCommRelease::k22902:
      return "2.29.2";
    case DevCommRelease::k22907:
      return "2.29.7";
    case DevCommRelease::k23007:
      return "2.30";
    case DevCommRelease::k23203:
      return "2.31-2.32";
  }
  return "?";
}

ncclResult_t readDevCommRequirements(const void* reqs, int nranks, int lsaSize, DevCommLayout* layout,
                                     window::DevCommAsk* ask) {
  NCCLCHECK(releaseOf(reqs, &layout->release, &layout->version));
  Requirements r;
  readRequirements(reqs, layout->release, &r);
  if (r.barrierCount < 0 || r.lsaBarrierCount < 0 || r.railGinBarrierCount < 0) {
    WARN("ncclDevCommCreate: barrierCount %d, lsaBarrierCount %d and railGinBarrierCount %d must not be negative",
         r.barrierCount, r.lsaBarrierCount, r.railGinBarrierCount);
    return ncclInvalidArgument;
  }
  if (r.lsaMultimem) return refuse("lsaMultimem: Braid never uses NVLink SHARP multicast");
  if (r.cftCaps != 0 || r.cftBarrierCount != 0) {
    return refuse("CFT (Compute Fabric Transport), which needs Blackwell GPUs and CUDA 13.3");
  }
  NCCLCHECK(readTeams(r.teams));
  ask->lsaBarriers = r.lsaBarrierCount;
  ask->hybridBarriers = r.barrierCount;
  NCCLCHECK(readResources(r.resources, ask));
  NCCLCHECK(readGin(r, *layout, nranks, lsaSize, ask));
  INFO(kLogInit, "ncclDevCommCreate: requirements of a program compiled against NCCL %s (version field %u)",
       releaseName(layout->release), layout->version);
  return ncclSuccess;
}

namespace {

template <typename D>
void writeCommon(const window::DevCommMade& m, D* d) {
  d->rank = m.rank;
  d->nRanks = m.nranks;
  d->nRanks_rcp32 = nccl::utility::idivRcp32(static_cast<uint32_t>(m.nranks));
  d->lsaRank = m.lsaRank;
  d->lsaSize = m.lsaSize;
  d->lsaSize_rcp32 = nccl::utility::idivRcp32(static_cast<uint32_t>(m.lsaSize));
  d->windowTable = static_cast<decltype(d->windowTable)>(m.windowTable);
  d->resourceWindow = m.resourceWindow;
  d->lsaMultimem.mcBasePtr = nullptr;
  d->lsaBarrier = ncclLsaBarrierHandle_t{m.lsaBarrier.handle, m.lsaBarrier.count};
}

// 2.28 and 2.29 embed a whole copy of the resource window's descriptor.
void writeWindowCopy(const window::WindowVidmem& w, WindowV22809* out) {
  out->winHost = w.winHost;
  out->lsaFlatBase = w.lsaFlatBase;
  out->lsaRank = w.lsaRank;
  out->worldRank = w.worldRank;
  out->stride4G = w.stride4G;
  out->mcOffset4K = w.mcOffset4K;
  out->ginOffset4K = w.ginOffset4K;
}

template <typename D>
void writeOld(const window::DevCommMade& m, D* d) {
  writeCommon(m, d);
  writeWindowCopy(m.resourceDesc, &d->resourceWindow_inlined);
}

// 2.30 and later: a header, the resource window's addressing fields, the hybrid barriers.
template <typename D>
void writeNew(const window::DevCommMade& m, unsigned int version, D* d) {
  writeCommon(m, d);
  d->magic = NCCL_API_MAGIC;
  d->version = version;
  d->resourceWindow_inlined.lsaFlatBase = m.resourceDesc.lsaFlatBase;
  d->resourceWindow_inlined.stride4G = m.resourceDesc.stride4G;
  d->resourceWindow_inlined.mcOffset4K = m.resourceDesc.mcOffset4K;
  d->abortFlag = m.abortFlag;
  d->hybridLsaBarrier = ncclLsaBarrierHandle_t{m.hybridLsaBarrier.handle, m.hybridLsaBarrier.count};
}

// One proxy GIN connection (nccl_device/gin_proxy.h), its ranks the world's.
void writeGin(const window::DevCommMade& m, ncclDevComm* d) {
  d->railGinBarrier = ncclGinBarrierHandle_t{m.railGinBarrierSignal0, 0};
  d->worldGinBarrier = ncclGinBarrierHandle_t{m.worldGinBarrierSignal0, 0};
  d->hybridRailGinBarrier = ncclGinBarrierHandle_t{m.hybridRailGinBarrierSignal0, 0};
  d->hybridDenseGinBarrier = ncclGinBarrierHandle_t{m.hybridDenseGinBarrierSignal0, 0};
  if (m.ginContexts == 0) return;
  d->ginConnectionCount = 1;
  d->backendIndex = 0;
  d->ginNetDeviceTypes[0] = NCCL_GIN_TYPE_PROXY;  // the same number as NCCL_NET_DEVICE_GIN_PROXY
  d->ginHandles[0] = m.ginHandle;
  d->ginSignalCount = m.ginSignals;
  d->ginCounterCount = m.ginCounters;
  d->ginSignalShadows = m.ginSignalShadows;
  d->ginContextCount = static_cast<uint32_t>(m.ginContexts);
  d->ginConnectionStride = 1;
  d->ginContextStride = 1;
  d->ginStrongLegacySignals = true;
  d->ginConnectionStride_rcp32 = nccl::utility::idivRcp32(1);
}

template <typename D, typename Fill>
void writeAs(void* out, Fill fill) {
  D d;
  std::memset(&d, 0, sizeof(d));
  fill(d);
  std::memcpy(out, &d, sizeof(d));
}

}  // namespace

void writeDevComm(const DevCommLayout& layout, const window::DevCommMade& m, void* out) {
  const unsigned int version = layout.version;
  switch (layout.release) {
    case DevCommRelease::k22809:
      writeAs<DevCommV22809>(out, [&](auto& d) { writeOld(m, &d); });
      break;
    case DevCommRelease::k22902:
      writeAs<DevCommV22902>(out, [&](auto& d) { writeOld(m, &d); });
      break;
    case DevCommRelease::k22907:
      writeAs<DevCommV22907>(out, [&](auto& d) {
        writeOld(m, &d);
        d.abortFlag = m.abortFlag;
      });
      break;
    case DevCommRelease::k23007:
      writeAs<DevCommV23007>(out, [&](auto& d) { writeNew(m, version, &d); });
      break;
    case DevCommRelease::k23203:
      writeAs<ncclDevComm>(out, [&](auto& d) {
        writeNew(m, version, &d);
        writeGin(m, &d);
        d.ucLeId = NCCL_LE_ID_INVALID;
        d.mcLeId = NCCL_LE_ID_INVALID;
      });
      break;
  }
}

ncclWindow_t resourceWindowOf(const void* devComm) {
  static_assert(offsetof(ncclDevComm, resourceWindow) == offsetof(DevCommV23007, resourceWindow),
                "2.30 and 2.32 keep the resource window at one offset");
  static_assert(offsetof(DevCommV22809, resourceWindow) == offsetof(DevCommV22907, resourceWindow),
                "2.28 and 2.29 keep the resource window at one offset");
  unsigned int magic = 0;
  std::memcpy(&magic, devComm, sizeof(magic));
  const size_t at =
      magic == NCCL_API_MAGIC ? offsetof(ncclDevComm, resourceWindow) : offsetof(DevCommV22809, resourceWindow);
  uintptr_t w = 0;
  std::memcpy(&w, static_cast<const char*>(devComm) + at, sizeof(w));
  return reinterpret_cast<ncclWindow_t>(w);
}

}  // namespace braid
