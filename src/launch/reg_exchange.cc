#include "launch/reg_exchange.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_driver.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/text.h"

namespace braid {
namespace {

using transport::Mechanism;

// Numbers the sockets of this process's exchanges (the name must differ from every other's).
std::atomic<uint64_t> gSocketSerial{0};

Deadline exchangeDeadline(const transport::Context& ctx) {
  return Deadline::after(std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout)), ctx.abortFlag);
}

// The Unix socket a rank binds for its registrations' descriptors ("REGISTER" mixed into the hash
// keeps it apart from the transport's connect sockets).
std::string regSocketName(const transport::Context& ctx, int rank, int pid, uint64_t serial) {
  return transport::udsSocketName(ctx.commHash ^ 0x5245474953544552ull, rank, pid, serial);
}

bool sameProcess(const transport::Context& ctx, int peer) {
  const RankPlace& a = ctx.peers[peer];
  const RankPlace& b = ctx.peers[ctx.rank];
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

}  // namespace

// The payload of a descriptor's datagram: whose registration it maps.
struct PeerRegistrations::FdNote {
  int32_t rank;
  int32_t pad;
  uint64_t serial;
};

struct PeerRegistrations::Announce {
  Offer buff;        // the operation's shared buffer: receive (peers write) or send (peers read)
  uint32_t newFor;   // bit r: rank r has not been told of the registration (descriptor and verdict follow)
  int32_t knownBad;  // a rank could not map the registration before: the copy path
  int32_t pid;
  int32_t pad;
  uint64_t socketSerial;
  RetiredList retired;
};
static_assert(kMaxRegRanks <= 32, "Announce::newFor has a bit per rank");

PeerRegistrations::Offer PeerRegistrations::describe(const reg::Registration* reg, const char* buff) {
  Offer offer{};
  if (reg == nullptr) return offer;
  offer.registered = 1;
  offer.serial = reg->serial;
  offer.offset = static_cast<uint64_t>(buff - reg->allocBase);
  offer.info = reg->crossProcess;
  offer.vmm = reg->vmm ? 1 : 0;
  return offer;
}

bool PeerRegistrations::firstTell(int peer, uint64_t serial) { return told_.emplace(Key{peer, serial}, false).second; }

ncclResult_t PeerRegistrations::bindSocket(const transport::Context& ctx) {
  if (socket_.valid()) return ncclSuccess;
  socketSerial_ = gSocketSerial.fetch_add(1, std::memory_order_relaxed);
  std::string name = regSocketName(ctx, ctx.rank, static_cast<int>(::getpid()), socketSerial_);
  return transport::UdsSocket::bind(name, "rank " + std::to_string(ctx.rank),
                                    transport::udsSendersOf(ctx.peers, ctx.rank), &socket_);
}

ncclResult_t PeerRegistrations::sendFd(const transport::Context& ctx, const reg::Registration& mine, int peer, int pid,
                                       uint64_t socketSerial) {
  if (static_cast<Mechanism>(mine.crossProcess.mechanism) != Mechanism::kCuMemFd || sameProcess(ctx, peer)) {
    return ncclSuccess;
  }
  FdNote note{ctx.rank, 0, mine.serial};
  std::string dest = regSocketName(ctx, peer, pid, socketSerial);
  std::string what = "registered buffer of rank " + std::to_string(ctx.rank) + " for rank " + std::to_string(peer);
  // While the peer's queue is full, take in our own: the peer may be waiting for it to drain too.
  return socket_.sendFd(dest, mine.fd.get(), &note, sizeof(note), exchangeDeadline(ctx), what,
                        [this, &ctx] { return drainFds(ctx); });
}

ncclResult_t PeerRegistrations::drainFds(const transport::Context& ctx) {
  while (true) {
    FdNote note{};
    UniqueFd fd;
    bool got = false;
    NCCLCHECK(socket_.tryRecvFd(&note, sizeof(note), offsetof(FdNote, rank), &fd,
                                "registration descriptors at rank " + std::to_string(ctx.rank), &got));
    if (!got) return ncclSuccess;
    keepFd(ctx, note, std::move(fd));
  }
}

void PeerRegistrations::keepFd(const transport::Context& ctx, const FdNote& note, UniqueFd fd) {
  // Only the descriptors of this exchange's new offers are kept, one each.
  if (!fds_.offer(transport::FdKey{note.rank, note.serial, 0}, std::move(fd))) {
    INFO(kLogReg, "rank %d: dropped an unexpected registration descriptor (rank %d, serial %" PRIu64 ")", ctx.rank,
         note.rank, note.serial);
  }
}

void PeerRegistrations::expectFd(const transport::Context& ctx, int peer, const Offer& offer) {
  if (offer.registered != 0 && offer.isNew != 0 &&
      static_cast<Mechanism>(offer.info.mechanism) == Mechanism::kCuMemFd && !sameProcess(ctx, peer)) {
    fds_.expect(transport::FdKey{peer, offer.serial, 0});
  }
}

ncclResult_t PeerRegistrations::receiveFd(const transport::Context& ctx, int peer, uint64_t serial, UniqueFd* fd) {
  Deadline deadline = exchangeDeadline(ctx);
  while (!fds_.take(transport::FdKey{peer, serial, 0}, fd)) {
    FdNote note{};
    UniqueFd got;
    NCCLCHECK(
        socket_.recvFd(&note, sizeof(note), offsetof(FdNote, rank), &got, deadline,
                       "registered buffer of rank " + std::to_string(peer) + " at rank " + std::to_string(ctx.rank)));
    keepFd(ctx, note, std::move(got));
  }
  return ncclSuccess;
}

// Maps the allocation of peer's offered registration; logs (REG) what it used or why not.
ncclResult_t PeerRegistrations::mapPeer(const transport::Context& ctx, int peer, const Offer& offer, char** base) {
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  transport::ImportArgs args{
      drv, ctx.cudaDev, ctx.peers[peer].cudaDev,
      "registered buffer of rank " + std::to_string(peer) + " mapped at rank " + std::to_string(ctx.rank)};
  transport::ExportInfo info = offer.info;
  UniqueFd fd;
  if (sameProcess(ctx, peer)) {
    if (offer.vmm != 0 && !accessibleHere(drv, ctx.cudaDev, info.ptr)) {
      INFO(kLogReg, "%s: its cuMem mapping gives GPU %d no access; not used zero-copy", args.what.c_str(), ctx.cudaDev);
      return ncclInvalidUsage;
    }
    info.mechanism = static_cast<int32_t>(Mechanism::kRawDevice);
  } else if (static_cast<Mechanism>(info.mechanism) == Mechanism::kCuMemFd) {
    NCCLCHECK(receiveFd(ctx, peer, offer.serial, &fd));
  } else if (static_cast<Mechanism>(info.mechanism) == Mechanism::kNone) {
    INFO(kLogReg, "%s: its allocation cannot be shared across processes; not used zero-copy", args.what.c_str());
    return ncclInvalidUsage;
  }
  std::unique_ptr<transport::Block> block;
  NCCLCHECK(transport::p2pImport(args, info, std::move(fd), &block));
  INFO(kLogReg, "%s: allocation of %zu bytes mapped at %p (%s)", args.what.c_str(), block->bytes(),
       static_cast<void*>(block->devPtr()), transport::mechanismName(static_cast<Mechanism>(info.mechanism)));
  *base = block->devPtr();
  mapped_[Key{peer, offer.serial}] = std::move(block);
  return ncclSuccess;
}

char* PeerRegistrations::peerBuffer(const transport::Context& ctx, int peer, const Offer& offer) {
  Key key{peer, offer.serial};
  if (unusable_.count(key) != 0) return nullptr;
  auto it = mapped_.find(key);
  if (it != mapped_.end()) return it->second->devPtr() + offer.offset;
  char* base = nullptr;
  // Only an offer made as new comes with a descriptor; any other one was mapped or refused before.
  if (offer.isNew == 0 || mapPeer(ctx, peer, offer, &base) != ncclSuccess) {
    unusable_.insert(key);
    return nullptr;
  }
  return base + offer.offset;
}

void PeerRegistrations::noteRetired(const std::vector<uint64_t>& serials) {
  for (uint64_t serial : serials) {
    retiredQueue_.push_back(serial);
    for (auto it = told_.begin(); it != told_.end();) it = it->first.second == serial ? told_.erase(it) : std::next(it);
  }
}

PeerRegistrations::RetiredList PeerRegistrations::takeRetiredFor(const transport::Context& ctx, int peer) {
  if (retiredSent_.empty()) {
    retiredSent_.assign(ctx.nranks, retiredBase_);
    retiredSent_[ctx.rank] = UINT64_MAX;  // never told, never holds the queue back
  }
  const uint64_t start = peer >= 0 ? retiredSent_[peer] : *std::min_element(retiredSent_.begin(), retiredSent_.end());
  RetiredList list{};
  list.n = std::min<uint64_t>(retiredBase_ + retiredQueue_.size() - start, kRetiredPerAnnounce);
  for (uint64_t i = 0; i < list.n; i++) list.serials[i] = retiredQueue_[start - retiredBase_ + i];
  for (int r = 0; r < ctx.nranks; r++) {
    if (peer < 0 || r == peer) retiredSent_[r] = std::max(retiredSent_[r], start + list.n);
  }
  // What every peer has heard leaves the queue.
  const uint64_t heard = *std::min_element(retiredSent_.begin(), retiredSent_.end());
  retiredQueue_.erase(retiredQueue_.begin(), retiredQueue_.begin() + static_cast<std::ptrdiff_t>(heard - retiredBase_));
  retiredBase_ = heard;
  return list;
}

// A peer released these registrations (its buffers may be freed): its mappings here are set aside.
void PeerRegistrations::retirePeer(int me, int peer, const RetiredList& list) {
  for (uint64_t i = 0; i < std::min<uint64_t>(list.n, kRetiredPerAnnounce); i++) {
    Key key{peer, list.serials[i]};
    unusable_.erase(key);
    auto it = mapped_.find(key);
    if (it == mapped_.end()) continue;
    INFO(kLogReg, "rank %d released registration %llu: rank %d unmaps it once its earlier kernels are done", peer,
         static_cast<unsigned long long>(key.second), me);
    retiredMappings_.push_back(std::move(it->second));
    mapped_.erase(it);
  }
}

ncclResult_t PeerRegistrations::exchange(const transport::Context& ctx, reg::Registration* mine, void* buff,
                                         bool peersRead, const char* opName, DevRegPeers* peers, bool* direct) {
  *direct = false;
  NCCLCHECK(bindSocket(ctx));  // before the allGather: once it is over, peers may send to it
  transport::FdInbox::Round round(&fds_);
  std::vector<Announce> all(ctx.nranks);
  Announce& me = all[ctx.rank];
  std::memset(&me, 0, sizeof(me));
  me.pid = static_cast<int32_t>(::getpid());
  me.socketSerial = socketSerial_;
  me.retired = takeRetiredFor(ctx, -1);
  me.buff = describe(mine, static_cast<char*>(buff));
  if (mine != nullptr) {
    for (int r = 0; r < ctx.nranks; r++) {
      if (r == ctx.rank) continue;
      if (firstTell(r, mine->serial)) {
        me.newFor |= 1u << r;  // verdict below
      } else if (!told_[Key{r, mine->serial}]) {
        me.knownBad = 1;
      }
    }
  }
  NCCLCHECK(ctx.bootstrap->allGather(all.data(), sizeof(Announce)));
  for (int r = 0; r < ctx.nranks; r++) {
    if (r == ctx.rank) continue;
    retirePeer(ctx.rank, r, all[r].retired);
    Offer offer = all[r].buff;
    offer.isNew = (all[r].newFor >> ctx.rank & 1u) != 0 ? 1 : 0;
    expectFd(ctx, r, offer);
  }
  for (int r = 0; r < ctx.nranks; r++) {
    if ((me.newFor >> r & 1u) != 0) NCCLCHECK(sendFd(ctx, *mine, r, all[r].pid, all[r].socketSerial));
  }

  // Every offered buffer is mapped, whatever the verdict: its descriptor was sent once.
  bool anyNew = false;
  bool mapped = true;
  uint32_t okMask = ~0u;  // bit r: this rank can reach rank r's buffer
  std::vector<int> registered, unregistered;
  for (int r = 0; r < ctx.nranks; r++) {
    const Announce& a = all[r];
    anyNew = anyNew || a.newFor != 0;
    mapped = mapped && a.knownBad == 0;
    (a.buff.registered != 0 ? registered : unregistered).push_back(r);
    if (a.buff.registered == 0) continue;
    if (r == ctx.rank) {
      peers->buff[r] = static_cast<char*>(buff);
      continue;
    }
    Offer offer = a.buff;
    offer.isNew = (a.newFor >> ctx.rank & 1u) != 0 ? 1 : 0;
    peers->buff[r] = peerBuffer(ctx, r, offer);
    if (peers->buff[r] == nullptr) okMask &= ~(1u << r);
  }
  if (anyNew) {
    // A new registration's verdict: every rank says which buffers it could map.
    std::vector<uint32_t> oks(ctx.nranks, 0);
    oks[ctx.rank] = okMask;
    NCCLCHECK(ctx.bootstrap->allGather(oks.data(), sizeof(uint32_t)));
    for (int r = 0; r < ctx.nranks; r++) {
      if ((me.newFor >> r & 1u) != 0) told_[Key{r, mine->serial}] = (oks[r] >> ctx.rank & 1u) != 0;
      for (int o : registered) mapped = mapped && (r == o || (oks[r] >> o & 1u) != 0);
    }
  } else {
    mapped = mapped && okMask == ~0u;  // nothing new: every failure was known before
  }
  const char* which = peersRead ? "send" : "receive";
  if (registered.empty()) {
    INFO(kLogReg, "%s: no rank's %s buffer is registered: copy path", opName, which);
    return ncclSuccess;
  }
  if (!unregistered.empty()) {
    WARN(
        "%s: the %s buffers of ranks %s are registered but not those of ranks %s; all ranks must pass "
        "registered buffers or none (this operation uses the copy path)",
        opName, which, rankList(registered).c_str(), rankList(unregistered).c_str());
    return ncclSuccess;
  }
  *direct = mapped;
  const char* how = peersRead ? "zero-copy (peers read from them)" : "zero-copy (peers write into them)";
  INFO(kLogReg, "%s: %s buffers registered on all %d ranks: %s", opName, which, ctx.nranks,
       mapped ? how : "copy path (a rank could not map a peer's buffer, see above)");
  return ncclSuccess;
}

}  // namespace braid
