#include "launch/reg_exchange.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_driver.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

using transport::Mechanism;

// Numbers the sockets of this process's exchanges (the name must differ from every other's).
std::atomic<uint64_t> gSocketSerial{0};

// The payload of a descriptor's datagram: whose registration it maps.
struct FdNote {
  int32_t rank;
  int32_t pad;
  uint64_t serial;
};

Deadline exchangeDeadline(const transport::Context& ctx) {
  return Deadline::after(std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout)), ctx.abortFlag);
}

// The Unix socket a rank binds for its registrations' descriptors ("REGISTER" mixed into the hash
// keeps it apart from the transport's connect sockets).
std::string regSocketName(const transport::Context& ctx, int rank, int pid, uint64_t serial) {
  return transport::udsSocketName(ctx.commHash ^ 0x5245474953544552ull, rank, pid, serial);
}

bool sameProcess(const transport::Context& ctx, int peer) {
  const transport::PeerDesc& a = ctx.peers[peer];
  const transport::PeerDesc& b = ctx.peers[ctx.rank];
  return a.pidHash == b.pidHash && a.hostHash == b.hostHash;
}

// A peer's cuMem mapping is usable by pointer only if its owner gave this GPU access to it
// (ncclMemAlloc does; another allocator may not). cudaMalloc memory is covered by peer access
// instead (which cuMemGetAccess does not report).
bool accessibleHere(const CudaDriver* drv, int cudaDev, uint64_t ptr) {
  CUmemLocation here{};
  here.type = CU_MEM_LOCATION_TYPE_DEVICE;
  here.id = cudaDev;
  unsigned long long flags = 0;
  CUresult res = drv->cuMemGetAccess(&flags, &here, static_cast<CUdeviceptr>(ptr));
  return res == CUDA_SUCCESS && flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

}  // namespace

struct PeerRegistrations::Announce {
  int32_t registered;  // the receive buffer lies in a registration
  int32_t isNew;       // first announcement of that registration here: descriptors follow
  int32_t pid;
  int32_t vmm;  // a cuMem mapping (see accessibleHere)
  uint64_t serial;
  uint64_t offset;  // receive buffer - allocation base
  uint64_t socketSerial;
  transport::ExportInfo info;
  uint64_t nRetired;
  uint64_t retired[kRetiredPerAnnounce];  // serials this rank released since its last announcement
};

ncclResult_t PeerRegistrations::bindSocket(const transport::Context& ctx) {
  if (socket_.valid()) return ncclSuccess;
  socketSerial_ = gSocketSerial.fetch_add(1, std::memory_order_relaxed);
  std::string name = regSocketName(ctx, ctx.rank, static_cast<int>(::getpid()), socketSerial_);
  return transport::UdsSocket::bind(name, "rank " + std::to_string(ctx.rank), &socket_);
}

ncclResult_t PeerRegistrations::sendFds(const transport::Context& ctx, const reg::Registration& mine,
                                        const Announce* all) {
  if (static_cast<Mechanism>(mine.crossProcess.mechanism) != Mechanism::kCuMemFd) return ncclSuccess;
  FdNote note{ctx.rank, 0, mine.serial};
  Deadline deadline = exchangeDeadline(ctx);
  for (int peer = 0; peer < ctx.nranks; peer++) {
    if (peer == ctx.rank || sameProcess(ctx, peer)) continue;
    std::string dest = regSocketName(ctx, peer, all[peer].pid, all[peer].socketSerial);
    std::string what = "registered buffer of rank " + std::to_string(ctx.rank) + " for rank " + std::to_string(peer);
    NCCLCHECK(socket_.sendFd(dest, mine.fd.get(), &note, sizeof(note), deadline, what));
  }
  return ncclSuccess;
}

ncclResult_t PeerRegistrations::receiveFd(const transport::Context& ctx, int peer, uint64_t serial,
                                          transport::UniqueFd* fd) {
  Key key{peer, serial};
  Deadline deadline = exchangeDeadline(ctx);
  while (earlyFds_.count(key) == 0) {
    FdNote note{};
    transport::UniqueFd got;
    NCCLCHECK(
        socket_.recvFd(&note, sizeof(note), &got, deadline,
                       "registered buffer of rank " + std::to_string(peer) + " at rank " + std::to_string(ctx.rank)));
    earlyFds_[Key{note.rank, note.serial}] = std::move(got);
  }
  *fd = std::move(earlyFds_[key]);
  earlyFds_.erase(key);
  return ncclSuccess;
}

// Maps the allocation of peer's announced registration; logs (REG) what it used or why not.
ncclResult_t PeerRegistrations::mapPeer(const transport::Context& ctx, int peer, const Announce& a, char** base) {
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  transport::ImportArgs args{
      drv, ctx.cudaDev, ctx.peers[peer].cudaDev,
      "registered buffer of rank " + std::to_string(peer) + " mapped at rank " + std::to_string(ctx.rank)};
  transport::ExportInfo info = a.info;
  transport::UniqueFd fd;
  if (sameProcess(ctx, peer)) {
    if (a.vmm != 0 && !accessibleHere(drv, ctx.cudaDev, info.ptr)) {
      INFO(kLogReg, "%s: its cuMem mapping gives GPU %d no access; not used zero-copy", args.what.c_str(), ctx.cudaDev);
      return ncclInvalidUsage;
    }
    info.mechanism = static_cast<int32_t>(Mechanism::kRawDevice);
  } else if (static_cast<Mechanism>(info.mechanism) == Mechanism::kCuMemFd) {
    NCCLCHECK(receiveFd(ctx, peer, a.serial, &fd));
  } else if (static_cast<Mechanism>(info.mechanism) == Mechanism::kNone) {
    INFO(kLogReg, "%s: its allocation cannot be shared across processes; not used zero-copy", args.what.c_str());
    return ncclInvalidUsage;
  }
  std::unique_ptr<transport::Block> block;
  NCCLCHECK(transport::p2pImport(args, info, std::move(fd), &block));
  INFO(kLogReg, "%s: allocation of %zu bytes mapped at %p (%s)", args.what.c_str(), block->bytes(),
       static_cast<void*>(block->devPtr()), transport::mechanismName(static_cast<Mechanism>(info.mechanism)));
  *base = block->devPtr();
  mapped_[Key{peer, a.serial}] = std::move(block);
  return ncclSuccess;
}

// A peer released these registrations (its buffers may be freed): its mappings here are set aside.
void PeerRegistrations::retirePeer(int me, int peer, const Announce& a) {
  for (uint64_t i = 0; i < std::min<uint64_t>(a.nRetired, kRetiredPerAnnounce); i++) {
    Key key{peer, a.retired[i]};
    unusable_.erase(key);
    earlyFds_.erase(key);
    auto it = mapped_.find(key);
    if (it == mapped_.end()) continue;
    INFO(kLogReg, "rank %d released registration %llu: rank %d unmaps it once its earlier kernels are done", peer,
         static_cast<unsigned long long>(key.second), me);
    retiredMappings_.push_back(std::move(it->second));
    mapped_.erase(it);
  }
}

ncclResult_t PeerRegistrations::exchange(const transport::Context& ctx, reg::Registration* mine, void* recvbuff,
                                         const std::vector<uint64_t>& retired, const char* opName, DevRegPeers* peers,
                                         bool* direct) {
  *direct = false;
  NCCLCHECK(bindSocket(ctx));  // before the allGather: once it is over, peers may send to it
  std::vector<Announce> all(ctx.nranks);
  Announce& me = all[ctx.rank];
  std::memset(&me, 0, sizeof(me));
  me.pid = static_cast<int32_t>(::getpid());
  me.socketSerial = socketSerial_;
  me.nRetired = std::min(retired.size(), kRetiredPerAnnounce);
  for (uint64_t serial : retired) announced_.erase(serial);
  std::copy(retired.begin(), retired.begin() + static_cast<std::ptrdiff_t>(me.nRetired), me.retired);
  if (mine != nullptr) {
    me.registered = 1;
    me.serial = mine->serial;
    me.offset = static_cast<uint64_t>(static_cast<char*>(recvbuff) - mine->allocBase);
    me.info = mine->crossProcess;
    me.vmm = mine->vmm ? 1 : 0;
    me.isNew = announced_.count(mine->serial) == 0 ? 1 : 0;
  }
  NCCLCHECK(ctx.bootstrap->allGather(all.data(), sizeof(Announce)));
  for (int r = 0; r < ctx.nranks; r++) {
    if (r != ctx.rank) retirePeer(ctx.rank, r, all[r]);
  }
  if (me.isNew != 0) {
    announced_.insert(me.serial);
    NCCLCHECK(sendFds(ctx, *mine, all.data()));
  }

  // Every registered receive buffer is mapped, whatever the verdict: its descriptor was sent once.
  bool anyNew = false;
  bool mapped = true;
  std::vector<int> registered, unregistered;
  for (int r = 0; r < ctx.nranks; r++) {
    const Announce& a = all[r];
    anyNew = anyNew || a.isNew != 0;
    (a.registered != 0 ? registered : unregistered).push_back(r);
    if (a.registered == 0) continue;
    if (r == ctx.rank) {
      peers->recvbuff[r] = static_cast<char*>(recvbuff);
      continue;
    }
    Key key{r, a.serial};
    if (unusable_.count(key) != 0) {
      mapped = false;
      continue;
    }
    auto it = mapped_.find(key);
    char* base = it != mapped_.end() ? it->second->devPtr() : nullptr;
    if (base == nullptr && mapPeer(ctx, r, a, &base) != ncclSuccess) {
      mapped = false;
      continue;
    }
    peers->recvbuff[r] = base + a.offset;
  }
  if (anyNew) {
    // Only a new registration can fail to map; the verdict on it is then the same everywhere.
    std::vector<int32_t> oks(ctx.nranks, 0);
    oks[ctx.rank] = mapped ? 1 : 0;
    NCCLCHECK(ctx.bootstrap->allGather(oks.data(), sizeof(int32_t)));
    for (int r = 0; r < ctx.nranks; r++) mapped = mapped && oks[r] != 0;
    if (!mapped) {
      for (int r = 0; r < ctx.nranks; r++) {
        if (all[r].isNew != 0) unusable_.insert(Key{r, all[r].serial});
      }
    }
  }
  if (registered.empty()) {
    INFO(kLogReg, "%s: no rank's receive buffer is registered (only send buffers): copy path", opName);
    return ncclSuccess;
  }
  if (!unregistered.empty()) {
    WARN(
        "%s: the receive buffers of ranks %s are registered but not those of ranks %s; all ranks must pass "
        "registered buffers or none (this operation uses the copy path)",
        opName, rankList(registered).c_str(), rankList(unregistered).c_str());
    return ncclSuccess;
  }
  *direct = mapped;
  INFO(kLogReg, "%s: receive buffers registered on all %d ranks: %s", opName, ctx.nranks,
       mapped ? "zero-copy (peers write into them)" : "copy path (a rank could not map a peer's buffer, see above)");
  return ncclSuccess;
}

}  // namespace braid
