/*
 * nccl_device/core.h -- teams and addresses in NCCL's device API.
 *
 * Teams. A team (struct ncclTeam) is nRanks ranks, `stride` apart in the rank numbering of the
 * team it was cut from, of which the caller is `rank`. The communicator's teams: the world (every
 * rank), LSA (the ranks whose memory the caller can load and store: consecutive world ranks), and
 * rail (the ranks with the caller's LSA index in every LSA team: world ranks lsaSize apart). A rank
 * of one team is translated to another through world-rank differences, so any two teams that
 * contain the caller can be mixed.
 *
 * Addresses. A window (ncclWindow_t) is memory every rank registered; its copy on LSA peer p is at
 * lsaFlatBase + p * stride4G * 4 GiB (see nccl_device/comm.h). Resource buffers (barriers, LL
 * all-to-all slots, a program's own) live in the device communicator's resource window, a handle
 * being the buffer's offset in it in units of 128 bytes.
 *
 * Multicast (NVLink SHARP) pointers are computed from a multimem handle. Braid creates no
 * multicast objects: its handles carry a NULL base, for which the multimem lookups here answer
 * NULL, and ncclDevCommCreate refuses requirements that ask for multimem.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_CORE_H_
#define NCCL_DEVICE_CORE_H_

#include <nccl.h>

#include "comm.h"
#include "coop.h"
#include "host.h"
#include "utility.h"

#ifdef __cplusplus
template <typename T>
struct ncclSymPtr;
#endif

/* ---- Team arithmetic (host and device) ---- */

/* Whether rank bPeer of team b is a member of team a (both teams contain the caller). */
NCCL_EXTERN_C NCCL_HOST_DEVICE_INLINE bool ncclTeamRankIsMember(ncclTeam_t a, ncclTeam_t b, int bPeer) {
  int worldDelta = (bPeer - b.rank) * b.stride;
  if (worldDelta % a.stride != 0) return false;
  int aRank = a.rank + worldDelta / a.stride;
  return 0 <= aRank && aRank < a.nRanks;
}

/* Rank bPeer of team b as a rank of team a (meaningful when it is a member). */
NCCL_EXTERN_C NCCL_HOST_DEVICE_INLINE int ncclTeamRankToTeam(ncclTeam_t a, ncclTeam_t b, int bPeer) {
  return a.rank + (bPeer - b.rank) * b.stride / a.stride;
}

/* The caller's block of innerSize consecutive ranks of `parent`, and the team of the blocks'
 * leaders at the caller's position (parent.nRanks must be a multiple of innerSize). */
NCCL_EXTERN_C NCCL_HOST_DEVICE_INLINE ncclTeam_t ncclTeamInnerFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = innerSize;
  t.rank = parent.rank % innerSize;
  t.stride = parent.stride;
  return t;
}
NCCL_EXTERN_C NCCL_HOST_DEVICE_INLINE ncclTeam_t ncclTeamOuterFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = parent.nRanks / innerSize;
  t.rank = parent.rank / innerSize;
  t.stride = parent.stride * innerSize;
  return t;
}

/* The index-th rank (counting from 0, in ascending order) of `parent` that is not in `subset`, as
 * a rank of parent; subset must be a subset of parent, so there are parent.nRanks - subset.nRanks
 * of them. Subset's members sit at parent ranks first, first + step, ...: the ones below `first`
 * come first, then (step - 1) in each gap between members, then the ones after the last member. */
NCCL_EXTERN_C NCCL_HOST_DEVICE_INLINE int ncclTeamRankInDifference(ncclTeam_t parent, ncclTeam_t subset, int index) {
  int step = subset.stride / parent.stride;
  int first = parent.rank - subset.rank * step;
  if (step < 0) {
    step = -step;
    first -= (subset.nRanks - 1) * step;
  }
  if (index < first) return index;
  int past = index - first;
  int inGaps = (subset.nRanks - 1) * (step - 1);
  if (past < inGaps) return first + 1 + (past / (step - 1)) * step + past % (step - 1);
  return first + (subset.nRanks - 1) * step + 1 + (past - inGaps);
}

/* Offset of a resource buffer in the device communicator's resource window. */
NCCL_EXTERN_C NCCL_HOST_DEVICE_INLINE size_t ncclGetResourceBufferOffset(ncclDevResourceHandle_t h) {
  return (size_t)h * 128;
}

#ifdef __CUDACC__
/* ---- The communicator's teams (device) ---- */

NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE ncclTeam ncclTeamWorld(ncclDevComm const& comm) {
  return ncclTeam{comm.nRanks, comm.rank, 1};
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE ncclTeam ncclTeamLsa(ncclDevComm const& comm) {
  return ncclTeam{comm.lsaSize, comm.lsaRank, 1};
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE ncclTeam ncclTeamRail(ncclDevComm const& comm) {
  using nccl::utility::idivFast32;
  return ncclTeam{int(idivFast32(uint32_t(comm.nRanks), uint32_t(comm.lsaSize), comm.lsaSize_rcp32)),
                  int(idivFast32(uint32_t(comm.rank), uint32_t(comm.lsaSize), comm.lsaSize_rcp32)), comm.lsaSize};
}

/* The CFT team, flat or cut into the caller's multimem or LSA group's leaders. */
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE ncclTeam ncclTeamCft(ncclDevComm const& comm,
                                                         ncclCftTeamMode_t mode = NCCL_CFT_TEAM_FLAT) {
  using nccl::utility::idivFast32;
  ncclTeam t{comm.cftSize, comm.cftRank, 1};
  if (mode == NCCL_CFT_TEAM_FLAT) return t;
  int group;
  uint32_t groupRcp;
  if (mode == NCCL_CFT_TEAM_HIER_MULTIMEM) {
    group = comm.cftMultimemSize;
    groupRcp = comm.cftMultimemSize_rcp32;
  } else if (mode == NCCL_CFT_TEAM_HIER_LSA) {
    group = comm.lsaSize;
    groupRcp = comm.lsaSize_rcp32;
  } else {
    return ncclTeam{};
  }
  t.nRanks = int(idivFast32(uint32_t(t.nRanks), uint32_t(group), groupRcp));
  t.rank = int(idivFast32(uint32_t(t.rank), uint32_t(group), groupRcp));
  t.stride = group;
  return t;
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE ncclTeam ncclTeamCftMultimem(ncclDevComm const& comm) {
  return ncclTeam{comm.cftMultimemSize, comm.cftMultimemRank, 1};
}

/* Rank `rank` of team tm as a world rank, and as an LSA rank. */
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE int ncclTeamRankToWorld(ncclDevComm const& comm, ncclTeam tm, int rank) {
  return comm.rank + (rank - tm.rank) * tm.stride;
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE int ncclTeamRankToLsa(ncclDevComm const& comm, ncclTeam tm, int rank) {
  return comm.lsaRank + (rank - tm.rank) * tm.stride;
}

/* ---- Window addresses (device) ---- */

namespace nccl {
namespace detail {
/* LSA peer lsaPeer's copy of a window. */
NCCL_DEVICE_INLINE char* windowLsaCopy(ncclWindow_t w, int lsaPeer) {
  using nccl::utility::loadConst;
  char* base = loadConst(&w->lsaFlatBase);
  uint32_t stride4G = loadConst(&w->stride4G);
  return nccl::utility::add4G(base, int(uint32_t(lsaPeer) * stride4G));
}
/* LSA peer lsaPeer's copy of resource buffer h. */
NCCL_DEVICE_INLINE char* resourceLsaCopy(ncclDevComm const& comm, ncclDevResourceHandle h, int lsaPeer) {
  char* base = comm.resourceWindow_inlined.lsaFlatBase;
  uint32_t stride4G = comm.resourceWindow_inlined.stride4G;
  return nccl::utility::add4G(base, int(uint32_t(lsaPeer) * stride4G)) + ncclGetResourceBufferOffset(h);
}
}  // namespace detail
}  // namespace nccl

NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetLocalPointer(ncclWindow_t w, size_t offset) {
  return nccl::detail::windowLsaCopy(w, nccl::utility::loadConst(&w->lsaRank)) + offset;
}
/* `peer` is an LSA rank. */
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetLsaPointer(ncclWindow_t w, size_t offset, int peer) {
  return nccl::detail::windowLsaCopy(w, peer) + offset;
}
/* `peer` is a world rank, which must be in the caller's LSA team. */
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, int peer) {
  using nccl::utility::loadConst;
  int lsaPeer = loadConst(&w->lsaRank) + (peer - loadConst(&w->worldRank));
  return nccl::detail::windowLsaCopy(w, lsaPeer) + offset;
}
/* `peer` is a rank of team tm, which must be in the caller's LSA team. */
NCCL_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, ncclTeam tm, int peer) {
  int lsaPeer = nccl::utility::loadConst(&w->lsaRank) + (peer - tm.rank) * tm.stride;
  return nccl::detail::windowLsaCopy(w, lsaPeer) + offset;
}
/* The multicast address of the window (NULL where the handle has no multicast object). */
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetMultimemPointer(ncclWindow_t w, size_t offset,
                                                                 ncclMultimemHandle mmHandle) {
  if (mmHandle.mcBasePtr == nullptr) return nullptr;
  size_t mcOffset = size_t(nccl::utility::loadConst(&w->mcOffset4K)) << 12;
  return static_cast<char*>(mmHandle.mcBasePtr) + mcOffset + offset;
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetLsaMultimemPointer(ncclWindow_t w, size_t offset,
                                                                    ncclDevComm const& comm) {
  return ncclGetMultimemPointer(w, offset, comm.lsaMultimem);
}

/* CFT logical endpoints of a window: the endpoint id and the offset behind it. */
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void ncclGetCftLeInfo(ncclWindow_t w, size_t offset, int peerCft, ncclTeam cftTeam,
                                                          ncclDevComm const& comm, ncclCftLeId* leId,
                                                          size_t* leOffset) {
  using nccl::utility::loadConst;
  ncclTeam flat = ncclTeamCft(comm);
  *leId = loadConst(&w->ucLeIdBase) + ncclCftLeId(flat.rank + (peerCft - cftTeam.rank) * cftTeam.stride);
  *leOffset = (size_t(loadConst(&w->mcOffset4K)) << 12) + offset;
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void ncclGetPeerLeInfo(ncclWindow_t w, size_t offset, int peerWorld,
                                                           ncclDevComm const& comm, ncclCftLeId* leId,
                                                           size_t* leOffset) {
  using nccl::utility::loadConst;
  ncclTeam flat = ncclTeamCft(comm);
  int index = flat.rank * flat.stride + (peerWorld - loadConst(&w->worldRank));
  *leId = loadConst(&w->ucLeIdBase) + ncclCftLeId(index);
  *leOffset = (size_t(loadConst(&w->mcOffset4K)) << 12) + offset;
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void ncclGetMultimemLeInfo(ncclWindow_t w, size_t offset, ncclDevComm const& comm,
                                                               ncclCftLeId* leId, size_t* leOffset) {
  using nccl::utility::loadConst;
  bool counted = (loadConst(&w->winFlags) & NCCL_WIN_CFT_COUNTED) != 0;
  *leId = loadConst(&comm.mcLeId) + (counted ? 1u : 0u);
  *leOffset = (size_t(loadConst(&w->mcOffset4K)) << 12) + offset;
}

/* The window registered over `ptr` (a local address), found in the communicator's window table
 * by the lanes of the caller's warp that `coop` lets act together; NULL when no window covers it. */
template <typename Coop>
NCCL_DEVICE_INLINE ncclWindow_t ncclFindWindow(Coop coop, ncclDevComm const& comm, void const* ptr) {
  using nccl::utility::loadConst;
  auto lanes = ncclCoopCoalesced(coop);
  uint32_t mask = ncclCoopGetLaneMask(lanes);
  uintptr_t addr = reinterpret_cast<uintptr_t>(ptr);
  for (ncclDevCommWindowTable* table = loadConst(&comm.windowTable); table != nullptr;
       table = loadConst(&table->next)) {
    int hit = -1;
    NVCC_PRAGMA_UNROLL_DISABLED
    for (int i = lanes.thread_rank(); i < 32; i += lanes.size()) {
      ncclDevCommWindowTable::Entry e = loadConst(&table->entries[i]);
      if (e.base != 0 && e.size != 0 && e.window != nullptr && addr - e.base < e.size) {
        hit = i;
        break;
      }
    }
    uint32_t found = __ballot_sync(mask, hit >= 0);
    if (found != 0) {
      /* The lowest lane that found it answers for all. */
      hit = __shfl_sync(mask, hit, __ffs(found) - 1);
      return loadConst(&table->entries[hit].window);
    }
  }
  return nullptr;
}

/* ---- Resource buffers (device) ---- */

NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetResourceBufferLocalPointer(ncclDevComm const& comm,
                                                                            ncclDevResourceHandle h) {
  return nccl::detail::resourceLsaCopy(comm, h, comm.lsaRank);
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetResourceBufferLsaPointer(ncclDevComm const& comm,
                                                                          ncclDevResourceHandle h, int peer) {
  return nccl::detail::resourceLsaCopy(comm, h, peer);
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetResourceBufferPeerPointer(ncclDevComm const& comm,
                                                                           ncclDevResourceHandle h, ncclTeam team,
                                                                           int peer) {
  return nccl::detail::resourceLsaCopy(comm, h, comm.lsaRank + (peer - team.rank) * team.stride);
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetResourceBufferMultimemPointer(ncclDevComm const& comm,
                                                                               ncclDevResourceHandle h,
                                                                               ncclMultimemHandle mm) {
  if (mm.mcBasePtr == nullptr) return nullptr;
  size_t mcOffset = size_t(comm.resourceWindow_inlined.mcOffset4K) << 12;
  return static_cast<char*>(mm.mcBasePtr) + mcOffset + ncclGetResourceBufferOffset(h);
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void* ncclGetResourceBufferLsaMultimemPointer(ncclDevComm const& comm,
                                                                                  ncclDevResourceHandle h) {
  return ncclGetResourceBufferMultimemPointer(comm, h, comm.lsaMultimem);
}

NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void ncclGetResourceBufferCftLeInfo(ncclDevComm const& comm,
                                                                        ncclDevResourceHandle h, int peerCft,
                                                                        ncclCftLeId* leId, size_t* leOffset) {
  *leId = comm.ucLeId + ncclCftLeId(peerCft * ncclTeamCft(comm).stride);
  *leOffset = (size_t(comm.resourceWindow_inlined.mcOffset4K) << 12) + ncclGetResourceBufferOffset(h);
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void ncclGetResourceBufferPeerLeInfo(ncclDevComm const& comm,
                                                                         ncclDevResourceHandle h, int peerWorld,
                                                                         ncclCftLeId* leId, size_t* leOffset) {
  ncclTeam flat = ncclTeamCft(comm);
  *leId = comm.ucLeId + ncclCftLeId(flat.rank * flat.stride + (peerWorld - comm.rank));
  *leOffset = (size_t(comm.resourceWindow_inlined.mcOffset4K) << 12) + ncclGetResourceBufferOffset(h);
}
NCCL_IR_EXTERN_C NCCL_DEVICE_INLINE void ncclGetResourceBufferMultimemLeInfo(ncclDevComm const& comm,
                                                                             ncclDevResourceHandle h, ncclCftLeId* leId,
                                                                             size_t* leOffset) {
  *leId = comm.mcLeId;
  *leOffset = (size_t(comm.resourceWindow_inlined.mcOffset4K) << 12) + ncclGetResourceBufferOffset(h);
}

/* Resource buffer h as a symmetric pointer (defined in nccl_device/ptr.h, included below). */
NCCL_DEVICE_INLINE ncclSymPtr<char> ncclGetResourceBuffer(ncclDevComm const& comm, ncclDevResourceHandle h);
#endif /* __CUDACC__ */

#include "ptr.h"

#endif /* NCCL_DEVICE_CORE_H_ */
