#include "transport/net_connect.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "net/network.h"
#include "proxy/proxy.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::transport {
namespace {

constexpr uint32_t kHandlesMagic = 0x4252484e;  // "BRHN"
constexpr size_t kCountersBytes = 4096;         // per channel: head, tail, sizes
constexpr size_t kHeadOffset = 0;
constexpr size_t kTailOffset = 128;
constexpr size_t kSizesOffset = 256;
static_assert(kSizesOffset + kNetSizeSlots * sizeof(uint32_t) <= kCountersBytes, "the sizes fit the counter line");
// An LL slot travels with an 8-byte trailer (device/dev_types.h): the last slot's lies past the
// buffer, in this padding.
constexpr size_t kLlTrailerPad = 16;

// What a receiver sends its sender before the handles of the group's channels.
struct HandlesHeader {
  uint32_t magic;
  uint32_t nChannels;
  uint64_t commHash;
  int32_t fromRank;
  int32_t toRank;
  uint64_t channelMask;
};

// Per channel: the counter line, the Simple FIFO, then (LL over the network) the LL FIFO.
size_t llBytes(const Context& ctx, const Group& g) { return ctx.netLl ? g.buffBytes[kProtoLL] : 0; }
// Every step lands in a Simple slot, LL steps too (see proxy.h), so a connection with LL over the
// network has Simple slots that hold an LL slot and its trailer even where its users run LL only
// (the direct channels ask for no Simple FIFO).
size_t simpleBytes(const Context& ctx, const Group& g) {
  const size_t ll = llBytes(ctx, g);
  const size_t landing = ll > 0 ? kFifoSlotsSimple * alignUp(ll / kFifoSlotsLL + kLlTrailerPad, 16) : 0;
  return std::max(g.buffBytes[kProtoSimple], landing);
}
size_t channelStride(const Context& ctx, const Group& g) {
  const size_t ll = llBytes(ctx, g);
  return kCountersBytes + alignUp(simpleBytes(ctx, g), kBufferAlign) +
         (ll > 0 ? alignUp(ll + kLlTrailerPad, kBufferAlign) : 0);
}

int handlesTag(const Context& ctx) { return connectTag(ctx, Kind::kNet, static_cast<int>(Role::kRecv)); }

std::string hostText(uint64_t hostHash) {
  char text[32];
  std::snprintf(text, sizeof(text), "host %016llx", static_cast<unsigned long long>(hostHash));
  return text;
}

}  // namespace

NetLinks::~NetLinks() {
  if (proxy_ != nullptr && proxyKey_ != 0) proxy_->remove(proxyKey_);
  for (const Conn& c : conns_) {
    if (c.mhandle != nullptr) (void)net_->deregMr(c.comm, c.mhandle);
    (void)(c.isSend ? net_->closeSend(c.comm) : net_->closeRecv(c.comm));
  }
  for (void* l : listens_) (void)net_->closeListen(l);
}

NetConnect::NetConnect(const Context& ctx, std::vector<Group*> groups)
    : ctx_(ctx), groups_(std::move(groups)), links_(std::make_unique<NetLinks>()) {
  for (Group* g : groups_) {
    for (size_t i = 0; i < g->channels.size(); ++i) {
      Channel c;
      c.group = g;
      c.channel = g->channels[i];
      c.index = static_cast<int>(i);
      channels_.push_back(c);
    }
  }
}

std::vector<NetConnect::Channel*> NetConnect::channelsOf(const Group& g) {
  std::vector<Channel*> out;
  for (Channel& c : channels_) {
    if (c.group == &g) out.push_back(&c);
  }
  return out;
}

ncclResult_t NetConnect::allocate(Group* g, char** host) {
  const size_t bytes = g->channels.size() * channelStride(ctx_, *g);
  AllocArgs args{nullptr, ctx_.cudaDev, bytes, false, false, std::string(), g->what};
  std::unique_ptr<Block> block;
  ExportInfo info{};
  NCCLCHECK(shmAlloc(args, &block, &info));  // in-process: cudaHostAlloc, mapped, zeroed
  *host = reinterpret_cast<char*>(static_cast<uintptr_t>(info.ptr));
  g->local = block.get();
  links_->blocks_.push_back(std::move(block));
  return ncclSuccess;
}

ncclResult_t NetConnect::sendHandles(const Group& g) {
  std::vector<Channel*> chans = channelsOf(g);
  std::vector<char> message(sizeof(HandlesHeader) + chans.size() * NCCL_NET_HANDLE_MAXSIZE);
  HandlesHeader header{kHandlesMagic, static_cast<uint32_t>(chans.size()), ctx_.commHash, ctx_.rank, g.peer,
                       g.channelMask};
  std::memcpy(message.data(), &header, sizeof(header));
  for (size_t i = 0; i < chans.size(); ++i) {
    std::memcpy(message.data() + sizeof(header) + i * NCCL_NET_HANDLE_MAXSIZE, chans[i]->handle,
                NCCL_NET_HANDLE_MAXSIZE);
  }
  return ctx_.bootstrap->send(g.peer, handlesTag(ctx_), message.data(), message.size());
}

ncclResult_t NetConnect::recvHandles(const Group& g) {
  std::vector<Channel*> chans = channelsOf(g);
  std::vector<char> message(sizeof(HandlesHeader) + chans.size() * NCCL_NET_HANDLE_MAXSIZE);
  NCCLCHECK(ctx_.bootstrap->recv(g.peer, handlesTag(ctx_), message.data(), message.size()));
  HandlesHeader header{};
  std::memcpy(&header, message.data(), sizeof(header));
  if (header.magic != kHandlesMagic || header.commHash != ctx_.commHash || header.fromRank != g.peer ||
      header.toRank != ctx_.rank || header.channelMask != g.channelMask || header.nChannels != chans.size()) {
    WARN("%s: the peer's network handles do not match (channel mask 0x%llx here, 0x%llx from the peer)", g.what.c_str(),
         static_cast<unsigned long long>(g.channelMask), static_cast<unsigned long long>(header.channelMask));
    return ncclInternalError;
  }
  for (size_t i = 0; i < chans.size(); ++i) {
    std::memcpy(chans[i]->handle, message.data() + sizeof(header) + i * NCCL_NET_HANDLE_MAXSIZE,
                NCCL_NET_HANDLE_MAXSIZE);
  }
  return ncclSuccess;
}

ncclResult_t NetConnect::listen() {
  if (groups_.empty()) return ncclSuccess;
  if (ctx_.network == nullptr || ctx_.proxy == nullptr) {
    WARN("rank %d: connections to other hosts need the communicator's network and proxy", ctx_.rank);
    return ncclInternalError;
  }
  const ncclNet_v11_t& net = ctx_.network->table();
  links_->net_ = &net;
  hosts_.resize(groups_.size());
  for (size_t i = 0; i < groups_.size(); ++i) NCCLCHECK(allocate(groups_[i], &hosts_[i]));
  for (Channel& c : channels_) {
    if (c.group->role != Role::kRecv) continue;
    const int dev = ctx_.network->deviceFor(c.channel);
    NCCLCHECK(net.listen(ctx_.network->context(), dev, c.handle, &c.listen));
    links_->listens_.push_back(c.listen);
  }
  for (Group* g : groups_) {
    if (g->role == Role::kRecv) NCCLCHECK(sendHandles(*g));
  }
  return ncclSuccess;
}

ncclResult_t NetConnect::pollOnce(bool* allDone) {
  const ncclNet_v11_t& net = *links_->net_;
  *allDone = true;
  for (Channel& c : channels_) {
    if (c.conn >= 0) continue;
    void* comm = nullptr;
    // A valid place for the device handle, as NCCL gives: some plugins write it unconditionally.
    ncclNetDeviceHandle_v11_t* devHandle = nullptr;
    if (c.group->role == Role::kSend) {
      NCCLCHECK(net.connect(ctx_.network->context(), ctx_.network->deviceFor(c.channel), c.handle, &comm, &devHandle));
    } else {
      NCCLCHECK(net.accept(c.listen, &comm, &devHandle));
    }
    if (comm == nullptr) {
      *allDone = false;
      continue;
    }
    if (devHandle != nullptr && devHandle->netDeviceType != NCCL_NET_DEVICE_HOST) {
      // Braid's proxies move every byte through host staging; a plugin whose data needs the GPU's
      // own unpacking (NCCL_NET_DEVICE_UNPACK) cannot be served, and its connection is not used.
      WARN(
          "net plugin %s: a connection asks for device type %d (device-side unpack); Braid supports only host "
          "(NCCL_NET_DEVICE_HOST) connections: choose another network with NCCL_NET",
          net.name, static_cast<int>(devHandle->netDeviceType));
      if (c.group->role == Role::kSend) {
        (void)net.closeSend(comm);
      } else {
        (void)net.closeRecv(comm);
      }
      return ncclInvalidUsage;
    }
    c.conn = static_cast<int>(links_->conns_.size());
    links_->conns_.push_back(NetLinks::Conn{comm, nullptr, c.group->role == Role::kSend});
  }
  return ncclSuccess;
}

ncclResult_t NetConnect::establish(const Deadline& deadline) {
  if (groups_.empty()) return ncclSuccess;
  for (Group* g : groups_) {
    if (g->role == Role::kSend) NCCLCHECK(recvHandles(*g));
  }
  while (true) {
    bool allDone = false;
    NCCLCHECK(pollOnce(&allDone));
    if (allDone) break;
    if (deadline.aborted()) return ncclInternalError;
    if (deadline.expired()) {
      for (const Channel& c : channels_) {
        if (c.conn >= 0) continue;
        WARN("%s: channel %d: no network connection after %.0f s (NCCL_BOOTSTRAP_TIMEOUT); is %s reachable?",
             c.group->what.c_str(), c.channel, deadline.timeoutSeconds(),
             hostText(ctx_.peers[c.group->peer].hostHash).c_str());
        break;
      }
      return ncclSystemError;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // Listeners are done once every receive is accepted.
  for (void* l : links_->listens_) (void)links_->net_->closeListen(l);
  links_->listens_.clear();
  return ncclSuccess;
}

ncclResult_t NetConnect::finish(std::vector<DevSendConn>* send, std::vector<DevRecvConn>* recv,
                                std::unique_ptr<NetLinks>* out) {
  std::vector<proxy::NetFifo> fifos;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group* g = groups_[gi];
    const size_t stride = channelStride(ctx_, *g);
    const size_t fifoBytes = simpleBytes(ctx_, *g);
    const size_t ll = llBytes(ctx_, *g);
    const size_t llOffset = kCountersBytes + alignUp(fifoBytes, kBufferAlign);
    // A received LL step (its lines and trailer) lands in a Simple slot first.
    if (ll > 0 && ll / kFifoSlotsLL + 8 > fifoBytes / kFifoSlotsSimple) {
      WARN(
          "%s: an LL slot of %zu bytes does not fit a Simple slot of %zu bytes for the network; lower "
          "NCCL_LL_BUFFSIZE or set BRAID_NET_LL=0",
          g->what.c_str(), ll / kFifoSlotsLL, fifoBytes / kFifoSlotsSimple);
      return ncclInvalidUsage;
    }
    for (Channel* c : channelsOf(*g)) {
      char* host = hosts_[gi] + static_cast<size_t>(c->index) * stride;
      char* dev = g->local->devPtr() + static_cast<size_t>(c->index) * stride;
      NetLinks::Conn& conn = links_->conns_[c->conn];
      // A step travels as one message of up to a Simple slot (an LL step fits one, checked above).
      const size_t maxMessage = ctx_.network->properties(ctx_.network->deviceFor(c->channel)).maxP2pBytes;
      if (maxMessage != 0 && fifoBytes / kFifoSlotsSimple > maxMessage) {
        WARN(
            "%s: network %s takes messages of at most %zu bytes (maxP2pBytes), less than a %zu-byte FIFO slot; lower "
            "NCCL_BUFFSIZE",
            g->what.c_str(), links_->net_->name, maxMessage, fifoBytes / kFifoSlotsSimple);
        return ncclInvalidUsage;
      }
      // One registration for both FIFOs: LL slots are sent from the LL FIFO.
      NCCLCHECK(
          links_->net_->regMr(conn.comm, host + kCountersBytes, stride - kCountersBytes, NCCL_PTR_HOST, &conn.mhandle));
      proxy::NetFifo fifo;
      fifo.isSend = g->role == Role::kSend;
      fifo.net = links_->net_;
      fifo.comm = conn.comm;
      fifo.mhandle = conn.mhandle;
      fifo.buff = host + kCountersBytes;
      fifo.slots = kFifoSlotsSimple;
      fifo.slotBytes = fifoBytes / kFifoSlotsSimple;
      fifo.head = reinterpret_cast<uint64_t*>(host + kHeadOffset);
      fifo.tail = reinterpret_cast<uint64_t*>(host + kTailOffset);
      fifo.sizes = reinterpret_cast<uint32_t*>(host + kSizesOffset);
      if (ll > 0) {
        fifo.llBuff = host + llOffset;
        fifo.llSlotBytes = ll / kFifoSlotsLL;
      }
      fifo.tag = c->channel;
      fifo.peer = g->peer;
      fifo.what = g->what + " (" + hostText(ctx_.peers[g->peer].hostHash) + "), channel " + std::to_string(c->channel);
      fifos.push_back(std::move(fifo));
      char* buffs[kNumProtos] = {ll > 0 ? dev + llOffset : nullptr, nullptr,
                                 g->buffBytes[kProtoSimple] > 0 ? dev + kCountersBytes : nullptr};
      auto* head = reinterpret_cast<uint64_t*>(dev + kHeadOffset);
      auto* tail = reinterpret_cast<uint64_t*>(dev + kTailOffset);
      if (g->role == Role::kSend) {
        (*send)[c->channel] = DevSendConn{
            {buffs[0], buffs[1], buffs[2]}, tail, head, 0, 0, reinterpret_cast<uint32_t*>(dev + kSizesOffset), nullptr};
      } else {
        (*recv)[c->channel] = DevRecvConn{{buffs[0], buffs[1], buffs[2]}, tail, head, 0, nullptr};
      }
    }
    INFO(kLogInit | kLogNet, "%s: via NET/%s, %zu-byte Simple and %zu-byte LL host FIFOs per channel", g->what.c_str(),
         links_->net_->name, fifoBytes, ll);
  }
  if (!fifos.empty()) {
    links_->proxy_ = ctx_.proxy;
    links_->proxyKey_ = ctx_.proxy->add(std::move(fifos));
  }
  *out = std::move(links_);
  return ncclSuccess;
}

}  // namespace braid::transport
