// Collective window registration. Message order, the same on every rank:
//   1. allGather of every rank's offer (window/offer.h), refusals included;
//   2. every rank checks all offers the same way (judgeOffers): all fail together, or go on;
//   3. each rank sends its allocation's file descriptor to the LSA peers in other processes (Unix
//      datagrams, never waiting for the receiver), then maps its LSA team's allocations into a new
//      flat range: its own and same-process peers' by retaining them, the others' from their
//      descriptors; then writes the window's device struct;
//   4. allGather of every rank's outcome of step 3: all succeed, or all undo and fail.
// After step 4 every peer has mapped this rank's memory, so the window can be used at once.
#include "window/registrar.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "transport/uds.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "window/support.h"

namespace braid::window {

static_assert(kWinCollSymmetric == NCCL_WIN_COLL_SYMMETRIC && kWinStrictOrdering == NCCL_WIN_STRICT_ORDERING &&
                  kWinGinOnly == NCCL_WIN_GIN_ONLY && kWinCftCounted == NCCL_WIN_CFT_COUNTED &&
                  kWinAlignment == NCCL_WIN_REQUIRED_ALIGNMENT,
              "window flags as nccl.h defines them");

Registrar::~Registrar() { closeStream(); }

void Registrar::closeStream() {
  if (setupStream_ != nullptr) (void)cudaStreamDestroy(setupStream_);
  setupStream_ = nullptr;
}

ncclResult_t Registrar::open() {
  CUDACHECK(cudaStreamCreateWithFlags(&setupStream_, cudaStreamNonBlocking));
  NCCLCHECK(fds_.open(ctx_.commHash, ctx_.rank, transport::udsSendersOf(ctx_.places, ctx_.rank)));
  return ncclSuccess;
}

void Registrar::unpublish(Window* w) {
  if (table_.remove(w->slot, setupStream_) != ncclSuccess) {
    INFO(kLogAlloc, "%s: the device table of windows could not drop window %llu", ctx_.me().c_str(),
         static_cast<unsigned long long>(w->serial));
  }
  structs_.give(w->slot);
}

ncclResult_t Registrar::localRefusal(void* buff, size_t size, int winFlags) const {
  const char* caller = "ncclCommWindowRegister";
  if (buff == nullptr || size == 0) {
    WARN("%s: rank %d: buff %p / size %zu: a window needs a buffer of at least one byte", caller, ctx_.rank, buff,
         size);
    return ncclInvalidArgument;
  }
  if ((winFlags & ~kWinKnownFlags) != 0) {
    WARN("%s: rank %d: winFlags 0x%x has bits that name no NCCL_WIN_* flag", caller, ctx_.rank,
         static_cast<unsigned>(winFlags));
    return ncclInvalidArgument;
  }
  if ((winFlags & (kWinGinOnly | kWinCftCounted)) != 0) {
    WARN(
        "%s: rank %d: winFlags 0x%x restrict the window to %s, which this version of Braid does not implement "
        "(GIN needs a GPU-driven InfiniBand/RoCE or EFA NIC, CFT Blackwell GPUs and CUDA 13.3)",
        caller, ctx_.rank, static_cast<unsigned>(winFlags),
        (winFlags & kWinGinOnly) != 0 ? "GIN (NCCL_WIN_GIN_ONLY)" : "counted CFT (NCCL_WIN_CFT_COUNTED)");
    return ncclInvalidUsage;
  }
  std::string why;
  if (!windowSupport(drv_, ctx_.cudaDev, &why)) {
    WARN("%s: rank %d: %s", caller, ctx_.rank, why.c_str());
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

ncclResult_t Registrar::agree(ncclResult_t mine, const std::string& what) {
  std::vector<int32_t> outcomes(ctx_.nranks, 0);
  outcomes[ctx_.rank] = static_cast<int32_t>(mine);
  NCCLCHECK(ctx_.bootstrap->allGather(outcomes.data(), sizeof(int32_t)));
  if (mine != ncclSuccess) return mine;  // its WARN is out
  for (int r = 0; r < ctx_.nranks; ++r) {
    if (outcomes[r] != ncclSuccess) {
      WARN("%s: rank %d could not map the window (its WARN says why); every rank undoes its part", what.c_str(), r);
      return static_cast<ncclResult_t>(outcomes[r]);
    }
  }
  return ncclSuccess;
}

ncclResult_t Registrar::mapTeam(uint64_t serial, const std::vector<WindowOffer>& offers, const OfferVerdict& verdict,
                                LocalAllocation* local, Window* w) {
  const std::string what = ctx_.me() + ": window " + std::to_string(serial);
  const FlatLayout& layout = verdict.layout;
  const Deadline deadline = Deadline::after(std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout)), ctx_.abortFlag);
  // This registration expects one descriptor from each LSA peer in another process (set before
  // anything is received: a peer's may arrive while this rank sends); the rest are closed.
  std::vector<int> senders;
  for (int i = 0; i < ctx_.lsaSize; ++i) {
    if (!ctx_.sameProcess(ctx_.lsaBase() + i)) senders.push_back(ctx_.lsaBase() + i);
  }
  const transport::FdInbox::Round round = fds_.expect(serial, senders);
  // Descriptors go out first: a peer waits for them, so nothing that may fail comes before.
  for (int i = 0; i < ctx_.lsaSize && local->fd.valid(); ++i) {
    const int peer = ctx_.lsaBase() + i;
    if (ctx_.sameProcess(peer)) continue;
    NCCLCHECK(fds_.send(offers[peer].udsName, local->fd.get(), serial, ctx_.rank, deadline,
                        what + " -> rank " + std::to_string(peer)));
  }
  local->fd.reset();
  NCCLCHECK(FlatRange::reserve(drv_, layout.rangeBytes(), verdict.granularity, ctx_.cudaDev, what, &w->flat));
  for (int i = 0; i < ctx_.lsaSize; ++i) {
    const int peer = ctx_.lsaBase() + i;
    const std::string from = what + ", memory of rank " + std::to_string(peer);
    AllocHandle handle;
    if (peer == ctx_.rank) {
      handle = std::move(local->handle);
    } else if (ctx_.sameProcess(peer)) {
      NCCLCHECK(AllocHandle::retain(drv_, reinterpret_cast<void*>(offers[peer].allocBase), from, &handle));
    } else {
      UniqueFd fd;
      NCCLCHECK(fds_.take(serial, peer, deadline, from, &fd));
      NCCLCHECK(AllocHandle::import(drv_, std::move(fd), from, &handle));
    }
    // The mapping holds the memory; the handle's reference goes at the end of this scope.
    NCCLCHECK(
        w->flat->map(static_cast<uint64_t>(i) * layout.stride + layout.mapOffsets[i], offers[peer].allocBytes, handle));
  }
  auto info = std::make_shared<WindowInfo>();
  info->userPtr = reinterpret_cast<char*>(offers[ctx_.rank].allocBase) + offers[ctx_.rank].memOffset;
  info->userBytes = offers[ctx_.rank].userBytes;
  info->winFlags = offers[ctx_.rank].winFlags;
  info->role = static_cast<WindowRole>(offers[ctx_.rank].role);
  info->worldRank = ctx_.rank;
  info->nranks = ctx_.nranks;
  info->lsaRank = ctx_.lsaRank;
  info->lsaSize = ctx_.lsaSize;
  info->lsaFlatBase = w->flat->base() + layout.userOffset;
  info->stride = layout.stride;
  for (const WindowOffer& o : offers) info->worldBytes.push_back(o.userBytes);
  w->serial = serial;
  if (info->role != WindowRole::kSignals) NCCLCHECK(publish(w, info.get()));
  w->info = std::move(info);
  return ncclSuccess;
}

ncclResult_t Registrar::publish(Window* w, WindowInfo* info) {
  NCCLCHECK(structs_.take(&w->slot));
  WindowVidmem d;
  std::memset(&d, 0, sizeof(d));
  d.winHost = w;
  d.lsaFlatBase = info->lsaFlatBase;
  d.lsaRank = info->lsaRank;
  d.worldRank = info->worldRank;
  d.stride4G = static_cast<uint32_t>(info->stride / kStrideUnit);
  d.winFlags = static_cast<uint32_t>(info->winFlags);
  d.numSegments = 1;
  // Its GIN handle on the proxy connection is its serial, which names it alike on every rank
  // (nccl_device/gin_proxy.h).
  d.ginWins[0] = reinterpret_cast<void*>(static_cast<uintptr_t>(w->serial));
  d.cftFlatRank = -1;
  d.ucLeIdBase = kLeIdInvalid;
  NCCLCHECK(StructPool::write(w->slot, d, setupStream_));
  w->desc = d;
  info->handle = reinterpret_cast<ncclWindow_t>(w->slot);
  return table_.add(reinterpret_cast<uintptr_t>(info->userPtr), info->userBytes, w->slot, setupStream_);
}

namespace {

const char* registrationName(WindowRole role) {
  switch (role) {
    case WindowRole::kSignals:
      return "signal memory";
    case WindowRole::kDevResources:
      return "ncclDevCommCreate";
    default:
      return "ncclCommWindowRegister";
  }
}

}  // namespace

ncclResult_t Registrar::registerCollective(void* buff, uint64_t size, int winFlags, WindowRole role,
                                           ncclResult_t refusal, std::unique_ptr<Window>* out) {
  const uint64_t serial = ++serial_;
  const bool internal = role == WindowRole::kSignals;
  const std::string what = ctx_.me() + ": " + registrationName(role);
  WindowOffer mine;
  std::memset(&mine, 0, sizeof(mine));
  mine.magic = kOfferMagic;
  mine.serial = serial;
  mine.winFlags = winFlags;
  mine.userBytes = size;
  mine.cudaDev = ctx_.cudaDev;
  mine.role = static_cast<int32_t>(role);
  std::strncpy(mine.udsName, fds_.name().c_str(), sizeof(mine.udsName) - 1);
  LocalAllocation local;
  ncclResult_t status = refusal;
  if (status == ncclSuccess)
    status = prepareLocalAllocation(drv_, ctx_.cudaDev, buff, size, ctx_.anyLsaPeerProcess(), what, &local);
  if (status == ncclSuccess) {
    mine.allocBytes = local.allocBytes;
    mine.memOffset = local.memOffset;
    mine.allocBase = reinterpret_cast<uintptr_t>(local.allocBase);
    mine.granularity = local.granularity;
  }
  mine.status = static_cast<int32_t>(status);
  std::vector<WindowOffer> offers(ctx_.nranks);
  offers[ctx_.rank] = mine;
  NCCLCHECK(ctx_.bootstrap->allGather(offers.data(), sizeof(WindowOffer)));
  for (WindowOffer& o : offers) o.udsName[sizeof(o.udsName) - 1] = '\0';
  const OfferVerdict verdict = judgeOffers(offers, ctx_.lsaBase(), ctx_.lsaSize);
  if (verdict.result != ncclSuccess) {
    // The signal memory is optional (windows work without it): a peer's refusal is news, not an error.
    if (status == ncclSuccess && internal) INFO(kLogInit, "%s: %s", what.c_str(), verdict.why.c_str());
    if (status == ncclSuccess && !internal) WARN("%s: %s", what.c_str(), verdict.why.c_str());
    return status != ncclSuccess ? status : verdict.result;
  }
  auto w = std::make_unique<Window>();
  const ncclResult_t agreed = agree(mapTeam(serial, offers, verdict, &local, w.get()), what);
  if (agreed != ncclSuccess) {
    (void)table_.remove(w->slot, setupStream_);
    structs_.give(w->slot);  // the flat range goes with w
    return agreed;
  }
  INFO(kLogInit | kLogAlloc,
       "%s: window %llu of %llu bytes at %p, flags 0x%x: LSA team of %d ranks mapped at %p, stride %llu GiB",
       what.c_str(), static_cast<unsigned long long>(serial), static_cast<unsigned long long>(size), buff,
       static_cast<unsigned>(winFlags), ctx_.lsaSize, static_cast<void*>(w->flat->base()),
       static_cast<unsigned long long>(w->info->stride >> 30));
  *out = std::move(w);
  return ncclSuccess;
}

}  // namespace braid::window
