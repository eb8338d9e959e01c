// connectChannels: groups the channels by (peer, direction, kind), allocates one block per group,
// exchanges the blocks' descriptions through the bootstrap (and cuMem file descriptors over a Unix
// socket), maps the peers' blocks and fills the device-visible connection structs.
//
// Message order, the same on every rank, so that nobody waits for a message that comes later:
//   1. bind this rank's Unix socket (only if some peer is another process reached by P2P);
//   2. allocate and zero every local block (device memory: one stream, synchronized);
//   3. send every group's ConnDesc to its peer (bootstrap sends do not wait for the receiver);
//   4. receive the peer's ConnDesc of every group and check that both sides agree;
//   5. send every cuMem file descriptor to its peer's socket, named in the peer's ConnDesc
//      (datagrams: queued by the kernel, never waiting for the receiver);
//   6. receive the file descriptors and map every peer block.
// A block is zeroed before step 3, so a peer can never see it dirty.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "transport/connect_internal.h"
#include "transport/layout.h"
#include "transport/memory.h"
#include "transport/net_connect.h"
#include "transport/transport.h"
#include "transport/uds.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/shm_segment.h"
#include "util/text.h"

namespace braid::transport {
namespace {

constexpr uint32_t kDescMagic = 0x42524454;  // "BRDT"
constexpr uint32_t kDescVersion = 1;
constexpr uint64_t kFdNoteMagic = 0x4252414944464400ull;

// One group's description, sent to its peer through the bootstrap.
struct ConnDesc {
  uint32_t magic;
  uint32_t version;
  uint64_t commHash;
  int32_t fromRank;
  int32_t toRank;
  int32_t role;  // the sender's Role for these channels
  int32_t kind;  // Kind
  uint64_t channelMask;
  uint64_t buffBytes[kNumProtos];
  int32_t cudaDev;
  int32_t pad;
  char udsName[104];  // the sender's Unix socket ("" if it has none)
  ExportInfo block;
};

// The payload of the datagram that carries a cuMem file descriptor.
struct FdNote {
  uint64_t magic;
  uint64_t commHash;
  int32_t fromRank;
  int32_t role;  // the exporter's Role
  int32_t kind;
  int32_t pad;
};

class ConnectionsImpl final : public Connections {
 public:
  explicit ConnectionsImpl(int cudaDev) : cudaDev_(cudaDev) {}
  ~ConnectionsImpl() override {
    DeviceGuard guard;
    if (cudaSetDevice(cudaDev_) != cudaSuccess) (void)cudaGetLastError();
    net_.reset();                                 // off the proxy, connections closed, host FIFOs freed
    while (!blocks_.empty()) blocks_.pop_back();  // reverse order of creation: imports first
  }
  Block* keep(std::unique_ptr<Block> block, bool own, int peer, size_t keepBytes, uint64_t ownerAddress) {
    blocks_.push_back(std::move(block));
    records_.push_back(BlockRecord{blocks_.back().get(), own, peer, keepBytes, ownerAddress});
    return blocks_.back().get();
  }
  const std::vector<BlockRecord>& blocks() const override { return records_; }
  void keepNet(std::unique_ptr<NetLinks> net) { net_ = std::move(net); }

 private:
  int cudaDev_;
  std::unique_ptr<NetLinks> net_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<BlockRecord> records_;  // of blocks_, in the same order
};

class ScopedStream {
 public:
  ScopedStream() = default;
  ~ScopedStream() {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  cudaStream_t* addr() { return &stream_; }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

Role opposite(Role role) { return role == Role::kSend ? Role::kRecv : Role::kSend; }
const char* roleName(Role role) { return role == Role::kSend ? "send" : "recv"; }
int descTag(const Context& ctx, Role senderRole, Kind kind) {
  return connectTag(ctx, kind, static_cast<int>(senderRole));
}

// State of one connectChannels call.
struct Session {
  Session(const Context& context, std::vector<Group> groupList, ConnectionsImpl* connections)
      : ctx(context), groups(std::move(groupList)), conns(connections) {}
  const Context& ctx;
  std::vector<Group> groups;
  ConnectionsImpl* conns;
  const CudaDriver* driver = nullptr;
  bool useCuMem = false;
  UdsSocket uds;
  std::vector<std::pair<FdNote, UniqueFd>> earlyFds;  // arrived before importAll asked for them
  uint64_t serial = 0;
  Deadline deadline;
  std::string me;
};

ncclResult_t prepare(Session* s) {
  bool anyP2p = false;
  bool crossP2p = false;
  for (const Group& g : s->groups) {
    anyP2p = anyP2p || g.kind == Kind::kP2p;
    crossP2p = crossP2p || (g.kind == Kind::kP2p && g.crossProcess);
  }
  if (!anyP2p) return ncclSuccess;
  NCCLCHECK(cudaDriver(&s->driver));
  NCCLCHECK(cuMemWanted(s->driver, s->ctx.cudaDev, &s->useCuMem));
  if (!crossP2p) return ncclSuccess;
  std::string name = udsSocketName(s->ctx.commHash, s->ctx.rank, static_cast<int>(::getpid()), s->serial);
  return UdsSocket::bind(name, s->me, &s->uds);
}

ncclResult_t allocateAll(Session* s) {
  ScopedStream zero;
  bool anyP2p = false;
  for (const Group& g : s->groups) anyP2p = anyP2p || g.kind == Kind::kP2p;
  if (anyP2p) CUDACHECK_AT(s->me, cudaStreamCreateWithFlags(zero.addr(), cudaStreamNonBlocking));
  for (Group& g : s->groups) {
    AllocArgs args{s->driver, s->ctx.cudaDev, g.layout.bytes, g.crossProcess, s->useCuMem, std::string(), g.what};
    std::unique_ptr<Block> block;
    if (g.kind == Kind::kP2p) {
      NCCLCHECK(p2pAlloc(args, zero.get(), &block, &g.localInfo, &g.exportFd));
    } else {
      args.shmName = shmSegmentName(s->ctx.commHash, s->ctx.rank, g.peer, roleName(g.role),
                                    static_cast<int>(::getpid()), s->serial);
      NCCLCHECK(shmAlloc(args, &block, &g.localInfo));
    }
    g.local = s->conns->keep(std::move(block), true, g.peer, g.layout.buffersStart, g.localInfo.ptr);
  }
  if (anyP2p) CUDACHECK_AT(s->me, cudaStreamSynchronize(zero.get()));
  return ncclSuccess;
}

ncclResult_t sendDescs(Session* s) {
  for (const Group& g : s->groups) {
    ConnDesc desc;
    std::memset(&desc, 0, sizeof(desc));
    desc.magic = kDescMagic;
    desc.version = kDescVersion;
    desc.commHash = s->ctx.commHash;
    desc.fromRank = s->ctx.rank;
    desc.toRank = g.peer;
    desc.role = static_cast<int32_t>(g.role);
    desc.kind = static_cast<int32_t>(g.kind);
    desc.channelMask = g.channelMask;
    for (int p = 0; p < kNumProtos; ++p) desc.buffBytes[p] = s->ctx.buffBytes[p];
    desc.cudaDev = s->ctx.cudaDev;
    std::strncpy(desc.udsName, s->uds.name().c_str(), sizeof(desc.udsName) - 1);
    desc.block = g.localInfo;
    NCCLCHECK(s->ctx.bootstrap->send(g.peer, descTag(s->ctx, g.role, g.kind), &desc, sizeof(desc)));
  }
  return ncclSuccess;
}

// The peer's description must mirror ours: same communicator, channels, sizes and a block large
// enough for the layout both sides compute.
ncclResult_t checkDesc(const Session& s, const Group& g, const ConnDesc& d) {
  const char* problem = nullptr;
  if (d.magic != kDescMagic || d.version != kDescVersion)
    problem = "a message of another version or garbage";
  else if (d.commHash != s.ctx.commHash)
    problem = "a description for another communicator";
  else if (d.fromRank != g.peer || d.toRank != s.ctx.rank)
    problem = "a description addressed to another rank";
  else if (d.channelMask != g.channelMask)
    problem = "another set of channels (the ring lists do not match)";
  else if (std::memcmp(d.buffBytes, g.buffBytes, sizeof(d.buffBytes)) != 0)
    problem = "other FIFO sizes (NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE or NCCL_LL128_BUFFSIZE differ between ranks)";
  else if (d.block.bytes < computeLayout(opposite(g.role), static_cast<int>(g.channels.size()), g.buffBytes, 1).bytes)
    problem = "a block smaller than the layout needs";
  if (problem == nullptr) return ncclSuccess;
  WARN("%s: the peer sent %s (channel mask 0x%llx here, 0x%llx from the peer)", g.what.c_str(), problem,
       static_cast<unsigned long long>(g.channelMask), static_cast<unsigned long long>(d.channelMask));
  return ncclInternalError;
}

ncclResult_t recvDescs(Session* s) {
  for (Group& g : s->groups) {
    ConnDesc desc;
    NCCLCHECK(s->ctx.bootstrap->recv(g.peer, descTag(s->ctx, opposite(g.role), g.kind), &desc, sizeof(desc)));
    NCCLCHECK(checkDesc(*s, g, desc));
    desc.udsName[sizeof(desc.udsName) - 1] = '\0';
    if (peerText(desc.udsName) != desc.udsName) {
      WARN("%s: the peer sent the Unix socket name %s, which is not printable text", g.what.c_str(),
           peerText(desc.udsName).c_str());
      return ncclInternalError;
    }
    g.peerUds = desc.udsName;
    g.peerCudaDev = desc.cudaDev;
    g.peerInfo = desc.block;
  }
  return ncclSuccess;
}

// Keeps a datagram that arrived (possibly before its group is imported); drops strangers. At most
// one descriptor per (rank, role, kind) and one per group is kept, so datagrams from anyone else on
// the host cannot pile up descriptors in this process.
void keepFd(Session* s, const FdNote& note, UniqueFd fd) {
  if (note.magic != kFdNoteMagic || note.commHash != s->ctx.commHash) {
    INFO(kLogInit | kLogP2p, "%s: dropped a file descriptor datagram of another communicator", s->me.c_str());
    return;
  }
  const bool duplicate = std::any_of(s->earlyFds.begin(), s->earlyFds.end(), [&](const auto& kept) {
    return kept.first.fromRank == note.fromRank && kept.first.role == note.role && kept.first.kind == note.kind;
  });
  if (note.fromRank < 0 || note.fromRank >= s->ctx.nranks || duplicate || s->earlyFds.size() >= s->groups.size()) {
    INFO(kLogInit | kLogP2p, "%s: dropped an unexpected file descriptor datagram (rank %d, role %d, kind %d)",
         s->me.c_str(), note.fromRank, note.role, note.kind);
    return;
  }
  s->earlyFds.emplace_back(note, std::move(fd));
}

// Takes in every datagram already queued on this rank's socket.
ncclResult_t drainFds(Session* s) {
  while (true) {
    FdNote note{};
    UniqueFd fd;
    bool got = false;
    NCCLCHECK(s->uds.tryRecvFd(&note, sizeof(note), &fd, s->me, &got));
    if (!got) return ncclSuccess;
    keepFd(s, note, std::move(fd));
  }
}

// Every rank sends before it imports, so a rank drains its own socket whenever a peer's is full:
// with 8 ranks all-to-all, 14 datagrams head for each socket, more than its queue holds.
ncclResult_t sendFds(Session* s) {
  auto drain = [s] { return drainFds(s); };
  for (Group& g : s->groups) {
    if (!g.exportFd.valid()) continue;
    if (g.peerUds.empty()) {
      WARN("%s: the peer has no Unix socket to receive this rank's cuMem file descriptor", g.what.c_str());
      return ncclInternalError;
    }
    FdNote note{
        kFdNoteMagic, s->ctx.commHash, s->ctx.rank, static_cast<int32_t>(g.role), static_cast<int32_t>(g.kind), 0};
    NCCLCHECK(s->uds.sendFd(g.peerUds, g.exportFd.get(), &note, sizeof(note), s->deadline, g.what, drain));
    g.exportFd.reset();  // the datagram holds its own reference until the peer takes it
  }
  return ncclSuccess;
}

// Receives datagrams until the one for `g` has arrived; others (for later groups) are kept.
ncclResult_t takeFd(Session* s, Group* g) {
  Role peerRole = opposite(g->role);
  auto& early = s->earlyFds;
  while (true) {
    for (auto it = early.begin(); it != early.end(); ++it) {
      if (it->first.fromRank == g->peer && it->first.role == static_cast<int32_t>(peerRole) &&
          it->first.kind == static_cast<int32_t>(g->kind)) {
        g->importFd = std::move(it->second);
        early.erase(it);
        return ncclSuccess;
      }
    }
    FdNote note{};
    UniqueFd fd;
    NCCLCHECK(s->uds.recvFd(&note, sizeof(note), &fd, s->deadline, g->what));
    keepFd(s, note, std::move(fd));
  }
}

ncclResult_t importAll(Session* s) {
  for (Group& g : s->groups) {
    if (static_cast<Mechanism>(g.peerInfo.mechanism) == Mechanism::kCuMemFd) NCCLCHECK(takeFd(s, &g));
    ImportArgs args{s->driver, s->ctx.cudaDev, g.peerCudaDev, g.what};
    if (args.driver == nullptr && g.importFd.valid()) NCCLCHECK(cudaDriver(&args.driver));
    std::unique_ptr<Block> block;
    if (g.kind == Kind::kP2p) {
      NCCLCHECK(p2pImport(args, g.peerInfo, std::move(g.importFd), &block));
    } else {
      NCCLCHECK(shmImport(args, g.peerInfo, &block));
    }
    g.remote = s->conns->keep(std::move(block), false, g.peer, 0, g.peerInfo.ptr);
    INFO(kLogInit | (g.kind == Kind::kP2p ? kLogP2p : kLogShm), "%s: local block %zu bytes by %s, peer's by %s",
         g.what.c_str(), g.local->bytes(), mechanismName(static_cast<Mechanism>(g.localInfo.mechanism)),
         mechanismName(static_cast<Mechanism>(g.peerInfo.mechanism)));
  }
  return ncclSuccess;
}

// The groups of one host (P2P, SHM) in s->groups; the NET ones around them (net_connect.h).
ncclResult_t runSession(Session* s, NetConnect* net, size_t nChannels, std::vector<DevSendConn>* send,
                        std::vector<DevRecvConn>* recv) {
  NCCLCHECK(net->listen());
  NCCLCHECK(prepare(s));
  NCCLCHECK(allocateAll(s));
  NCCLCHECK(sendDescs(s));
  NCCLCHECK(recvDescs(s));
  NCCLCHECK(sendFds(s));
  NCCLCHECK(importAll(s));
  NCCLCHECK(net->establish(s->deadline));
  fillConns(s->groups, s->ctx.buffBytes, send, recv);
  send->resize(nChannels, DevSendConn{});
  recv->resize(nChannels, DevRecvConn{});
  std::unique_ptr<NetLinks> links;
  NCCLCHECK(net->finish(send, recv, &links));
  s->conns->keepNet(std::move(links));
  return ncclSuccess;
}

}  // namespace

ncclResult_t connectChannels(const Context& ctx, const std::vector<ChannelLinks>& channels,
                             std::unique_ptr<Connections>* out, std::vector<DevSendConn>* send,
                             std::vector<DevRecvConn>* recv) {
  out->reset();
  NCCLCHECK(checkContext(ctx, channels));
  std::vector<Group> all = makeGroups(ctx, channels);
  std::vector<Group> local;
  std::vector<Group> remote;
  for (Group& g : all) (g.kind == Kind::kNet ? remote : local).push_back(std::move(g));
  std::vector<Group*> remotePtrs(remote.size());
  for (size_t i = 0; i < remote.size(); ++i) remotePtrs[i] = &remote[i];
  Session s{ctx, std::move(local), nullptr};
  s.serial = nextUdsSerial();
  s.deadline = Deadline::after(std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout)), ctx.abortFlag);
  s.me = "rank " + std::to_string(ctx.rank) + " (GPU " + std::to_string(ctx.cudaDev) + ")";
  DeviceGuard guard;
  CUDACHECK_AT(s.me, cudaSetDevice(ctx.cudaDev));
  auto conns = std::make_unique<ConnectionsImpl>(ctx.cudaDev);
  s.conns = conns.get();
  NetConnect net(ctx, std::move(remotePtrs));
  NCCLCHECK(runSession(&s, &net, channels.size(), send, recv));
  *out = std::move(conns);
  return ncclSuccess;
}

}  // namespace braid::transport
