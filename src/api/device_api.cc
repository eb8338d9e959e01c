// The host side of NCCL's device API (nccl_device/host.h): device communicators (their resource
// window, window/dev_comm.cc; the layout of each NCCL release, api/dev_comm_abi.h), the requirement
// builders, teams, which Braid computes, and window pointer lookups (window/window_registry.h). The
// multicast lookups answer NULL, as NCCL does where there is no multicast (Braid never uses NVLink
// SHARP); GIN and CFT requirements fail with a WARN that names them.
#include <nccl_device/host.h>

#include <cstring>
#include <limits>
#include <memory>

#include "api/api_guard.h"
#include "api/dev_comm_abi.h"
#include "api/export.h"
#include "api/window_glue.h"
#include "core/comm.h"
#include "core/group.h"
#include "core/teams.h"
#include "launch/enqueue.h"
#include "util/check.h"
#include "window/manager.h"
#include "window/window_registry.h"

namespace {

constexpr const char* kCft = "CFT (Compute Fabric Transport, which needs Blackwell GPUs and CUDA 13.3)";
constexpr const char* kGin = "GIN outboxes and inboxes (GPU-initiated networking's message queues)";

ncclResult_t checkOut(const void* out, const char* caller, const char* name) {
  if (out == nullptr) {
    WARN("%s: %s is NULL", caller, name);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// A NULL answer with success: no multicast object exists for any window.
ncclResult_t noMulticast(void** outPtr, const char* caller) {
  NCCLCHECK(checkOut(outPtr, caller, "outPtr"));
  *outPtr = nullptr;
  INFO(braid::kLogColl, "%s: no multicast (NVLink SHARP is not used by Braid): NULL", caller);
  return ncclSuccess;
}

// Teams answer an empty team for a bad handle (they have no error code to return).
bool teamHandleOk(const ncclComm* comm, const char* caller) {
  return braid::commCheckHandle(comm, caller) == ncclSuccess;
}

braid::LsaLayout lsaOf(const ncclComm* comm) { return braid::lsaLayoutOf(comm->peers_, comm->rank_); }

}  // namespace

// Collective. Inside a group it runs at the outermost ncclGroupEnd (*outDevComm is filled in then),
// as NCCL's does, so that one thread may create device communicators on several GPUs at once. A
// rank that refuses its requirements still takes part, so that its peers fail with it.
BRAID_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
          ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs, ncclDevComm_t* outDevComm) {
  const char* caller = "ncclDevCommCreate";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckUsable(comm, caller));
    NCCLCHECK(checkOut(reqs, caller, "reqs"));
    NCCLCHECK(checkOut(outDevComm, caller, "outDevComm"));
    const braid::LsaLayout lsa = lsaOf(comm);
    braid::DevCommLayout layout;
    braid::window::DevCommAsk ask;
    const ncclResult_t refusal = braid::readDevCommRequirements(reqs, comm->nranks_, lsa.size, &layout, &ask);
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(braid::commWindows(comm, true, &windows));
    uint32_t* abortWord = nullptr;
    NCCLCHECK(braid::kernelAbortWordOf(comm, &abortWord));
    auto job = [windows, ask, refusal, layout, abortWord, outDevComm] {
      braid::window::DevCommMade made;
      NCCLCHECK(windows->createDevComm(ask, refusal, &made));
      made.abortFlag = abortWord;
      braid::writeDevComm(layout, made, outDevComm);
      return ncclSuccess;
    };
    braid::GroupContext& group = braid::GroupContext::current();
    if (!group.active()) return job();
    group.deferInit(comm, job, [] {});
    return refusal;
  });
}

// Local: releases the device communicator's resource window. Its kernels must have finished.
BRAID_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm) {
  const char* caller = "ncclDevCommDestroy";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckHandle(comm, caller));
    NCCLCHECK(checkOut(devComm, caller, "devComm"));
    const ncclWindow_t resources = braid::resourceWindowOf(devComm);
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(braid::commWindows(comm, false, &windows));
    if (windows == nullptr) {
      if (resources == nullptr) return ncclSuccess;
      WARN("%s: devComm %p was not made by this communicator (it has no windows)", caller,
           static_cast<const void*>(devComm));
      return ncclInvalidArgument;
    }
    return windows->destroyDevComm(resources);
  });
}

BRAID_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t, size_t, void** outPtr) {
  return braid::apiGuard("ncclGetLsaMultimemDevicePointer",
                         [&] { return noMulticast(outPtr, "ncclGetLsaMultimemDevicePointer"); });
}

BRAID_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem,
          void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t, size_t, ncclMultimemHandle_t, void** outPtr) {
  return braid::apiGuard("ncclGetMultimemDevicePointer",
                         [&] { return noMulticast(outPtr, "ncclGetMultimemDevicePointer"); });
}

namespace {

// The window behind `window`, or ncclInvalidArgument for a handle that is no live window.
ncclResult_t lookUp(ncclWindow_t window, void** outPtr, const char* caller,
                    std::shared_ptr<const braid::window::WindowInfo>* out) {
  NCCLCHECK(checkOut(window, caller, "window"));
  NCCLCHECK(checkOut(outPtr, caller, "outPtr"));
  *outPtr = nullptr;
  *out = braid::window::registryFind(window);
  if (*out == nullptr) {
    WARN("%s: window %p is not a registered window (never registered, or deregistered)", caller,
         static_cast<void*>(window));
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// LSA rank `lsa`'s byte `offset` of the window, checked against that rank's window size.
ncclResult_t lsaPointer(const braid::window::WindowInfo& w, size_t offset, int lsa, void** outPtr, const char* caller) {
  const uint64_t bytes = w.worldBytes[w.lsaBase() + lsa];
  if (offset >= bytes) {
    WARN("%s: offset %zu is past the end of LSA rank %d's window (%llu bytes)", caller, offset, lsa,
         static_cast<unsigned long long>(bytes));
    return ncclInvalidArgument;
  }
  *outPtr = w.lsaPtr(lsa, offset);
  return ncclSuccess;
}

}  // namespace

BRAID_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank, void** outPtr);
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void** outPtr) {
  const char* caller = "ncclGetLsaDevicePointer";
  return braid::apiGuard(caller, [&] {
    std::shared_ptr<const braid::window::WindowInfo> w;
    NCCLCHECK(lookUp(window, outPtr, caller, &w));
    if (lsaRank < 0 || lsaRank >= w->lsaSize) {
      WARN("%s: lsaRank %d is out of range [0, %d) (the LSA team of window %p)", caller, lsaRank, w->lsaSize,
           static_cast<void*>(window));
      return ncclInvalidArgument;
    }
    return lsaPointer(*w, offset, lsaRank, outPtr, caller);
  });
}

// A peer outside the caller's LSA team (another host) has no address here: NULL, with success.
BRAID_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr) {
  const char* caller = "ncclGetPeerDevicePointer";
  return braid::apiGuard(caller, [&] {
    std::shared_ptr<const braid::window::WindowInfo> w;
    NCCLCHECK(lookUp(window, outPtr, caller, &w));
    if (peer < 0 || peer >= w->nranks) {
      WARN("%s: peer %d is out of range [0, %d)", caller, peer, w->nranks);
      return ncclInvalidArgument;
    }
    if (!w->inLsa(peer)) return ncclSuccess;
    return lsaPointer(*w, offset, peer - w->lsaBase(), outPtr, caller);
  });
}

BRAID_API(ncclResult_t, ncclGetMultimemDeviceLeInfo, ncclWindow_t window, size_t offset, ncclCftLeId* leId,
          size_t* leOffset);
ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t, size_t, ncclCftLeId*, size_t*) {
  return braid::notImplemented("ncclGetMultimemDeviceLeInfo", kCft);
}

BRAID_API(ncclResult_t, ncclGetCftDeviceLeInfo, ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam,
          ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t, size_t, int, ncclTeam_t, ncclCftLeId*, size_t*) {
  return braid::notImplemented("ncclGetCftDeviceLeInfo", kCft);
}

BRAID_API(ncclResult_t, ncclGetPeerDeviceLeInfo, ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId* leId,
          size_t* leOffset);
ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t, size_t, int, ncclCftLeId*, size_t*) {
  return braid::notImplemented("ncclGetPeerDeviceLeInfo", kCft);
}

BRAID_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm);
ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  if (!teamHandleOk(comm, "ncclTeamWorld")) return ncclTeam_t{0, 0, 0};
  return ncclTeam_t{comm->nranks_, comm->rank_, 1};
}

BRAID_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  if (!teamHandleOk(comm, "ncclTeamLsa")) return ncclTeam_t{0, 0, 0};
  const braid::LsaLayout lsa = lsaOf(comm);
  return ncclTeam_t{lsa.size, lsa.rank, 1};
}

BRAID_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  if (!teamHandleOk(comm, "ncclTeamRail")) return ncclTeam_t{0, 0, 0};
  const braid::LsaLayout lsa = lsaOf(comm);
  return ncclTeam_t{comm->nranks_ / lsa.size, comm->rank_ / lsa.size, lsa.size};
}

BRAID_API(ncclTeam_t, ncclTeamCft, ncclComm_t comm, ncclCftTeamMode_t mode);
ncclTeam_t ncclTeamCft(ncclComm_t, ncclCftTeamMode_t) {
  (void)braid::notImplemented("ncclTeamCft", kCft);
  return ncclTeam_t{0, 0, 0};
}

BRAID_API(ncclTeam_t, ncclTeamCftMultimem, ncclComm_t comm);
ncclTeam_t ncclTeamCftMultimem(ncclComm_t) {
  (void)braid::notImplemented("ncclTeamCftMultimem", kCft);
  return ncclTeam_t{0, 0, 0};
}

// The world rank of `team` member `rank`: members are `stride` apart around the caller.
BRAID_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  if (!teamHandleOk(comm, "ncclTeamRankToWorld")) return -1;
  return comm->rank_ + (rank - team.rank) * team.stride;
}

// The LSA rank of `team` member `rank`, or -1 when it is not in the caller's LSA team.
BRAID_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  if (!teamHandleOk(comm, "ncclTeamRankToLsa")) return -1;
  const braid::LsaLayout lsa = lsaOf(comm);
  const int world = comm->rank_ + (rank - team.rank) * team.stride;
  const int lsaBase = comm->rank_ - lsa.rank;
  if (world < lsaBase || world >= lsaBase + lsa.size) return -1;
  return world - lsaBase;
}

// The memory of `nBarriers` LSA barriers of `team`, for the program's resource requirements list.
BRAID_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
          ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq) {
  const char* caller = "ncclLsaBarrierCreateRequirement";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(checkOut(outHandle, caller, "outHandle"));
    NCCLCHECK(checkOut(outReq, caller, "outReq"));
    if (nBarriers < 0 || team.nRanks <= 0) {
      WARN("%s: nBarriers %d and team.nRanks %d: a team has ranks and the count is not negative", caller, nBarriers,
           team.nRanks);
      return ncclInvalidArgument;
    }
    const uint64_t bytes = braid::window::lsaBarrierBytes(nBarriers, team.nRanks);
    if (bytes > braid::window::kMaxResourceBytes) {
      WARN("%s: %d barriers of a team of %d ranks need more than %llu GiB", caller, nBarriers, team.nRanks,
           static_cast<unsigned long long>(braid::window::kMaxResourceBytes >> 30));
      return ncclInvalidArgument;
    }
    std::memset(outReq, 0, sizeof(*outReq));
    outReq->bufferSize = bytes;
    outReq->bufferAlign = braid::window::kLsaBarrierAlign;
    outReq->outBufferHandle = &outHandle->bufHandle;
    outHandle->bufHandle = 0;
    outHandle->nBarriers = nBarriers;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
          ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
// A GIN barrier of `team` takes one signal per team rank and barrier, handed out by
// ncclDevCommCreate (the device communicator then needs GIN: the proxy transport).
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  const char* caller = "ncclGinBarrierCreateRequirement";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckHandle(comm, caller));
    NCCLCHECK(checkOut(outHandle, caller, "outHandle"));
    NCCLCHECK(checkOut(outReq, caller, "outReq"));
    if (nBarriers < 0 || team.nRanks <= 0 || team.nRanks > comm->nranks_ ||
        nBarriers > std::numeric_limits<int>::max() / team.nRanks) {
      WARN("%s: nBarriers %d of a team of %d ranks: out of range", caller, nBarriers, team.nRanks);
      return ncclInvalidArgument;
    }
    std::memset(outReq, 0, sizeof(*outReq));
    outReq->ginSignalCount = nBarriers * team.nRanks;
    outReq->outGinSignalStart = &outHandle->signal0;
    outHandle->signal0 = 0;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCftBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
          ncclCftBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclCftBarrierCreateRequirement(ncclTeam_t, int, ncclCftBarrierHandle_t*, ncclDevResourceRequirements_t*) {
  return braid::notImplemented("ncclCftBarrierCreateRequirement", kCft);
}

// Slots of the LL all-to-all for messages of maxElts elements of maxEltSize bytes: one 8-byte
// payload word per slot.
BRAID_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) { return maxElts * ((maxEltSize + 7) / 8); }

// The memory of the LL all-to-all: `nBlocks` blocks of `nSlots` slots.
BRAID_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
          ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq) {
  const char* caller = "ncclLLA2ACreateRequirement";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(checkOut(outHandle, caller, "outHandle"));
    NCCLCHECK(checkOut(outReq, caller, "outReq"));
    if (nBlocks < 0 || nSlots < 0) {
      WARN("%s: nBlocks %d and nSlots %d must not be negative", caller, nBlocks, nSlots);
      return ncclInvalidArgument;
    }
    const uint64_t bytes = braid::window::lla2aBytes(nBlocks, nSlots);
    if (bytes > braid::window::kMaxResourceBytes) {
      WARN("%s: %d blocks of %d slots need more than %llu GiB", caller, nBlocks, nSlots,
           static_cast<unsigned long long>(braid::window::kMaxResourceBytes >> 30));
      return ncclInvalidArgument;
    }
    std::memset(outReq, 0, sizeof(*outReq));
    outReq->bufferSize = bytes;
    outReq->bufferAlign = braid::window::kLla2aAlign;
    outReq->outBufferHandle = &outHandle->bufHandle;
    outHandle->bufHandle = 0;
    outHandle->nSlots = static_cast<uint32_t>(nSlots);
    return ncclSuccess;
  });
}

// NCCL's library exports these two although its Linux header does not declare them.
struct ncclGinOutboxHandle;
struct ncclGinInboxA2AHandle;

BRAID_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int sizeLog2, ncclGinOutboxHandle* outHandle,
          ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinOutboxCreateRequirement(int, int, ncclGinOutboxHandle*, ncclDevResourceRequirements_t*) {
  return braid::notImplemented("ncclGinOutboxCreateRequirement", kGin);
}

BRAID_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks, int sizeLog2,
          ncclGinInboxA2AHandle* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t, int, int, ncclGinInboxA2AHandle*,
                                              ncclDevResourceRequirements_t*) {
  return braid::notImplemented("ncclGinInboxA2ACreateRequirement", kGin);
}
