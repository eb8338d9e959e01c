#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "transport/connect_internal.h"
#include "util/log.h"
#include "util/text.h"

namespace braid::transport {
namespace {

std::string describe(const Context& ctx, const Group& g) {
  std::string text = "rank " + std::to_string(ctx.rank) + " (GPU " + std::to_string(ctx.cudaDev) + ")";
  text += g.role == Role::kSend ? " -> " : " <- ";
  text += "peer rank " + std::to_string(g.peer) + " (GPU " + std::to_string(ctx.peers[g.peer].cudaDev) + "), ";
  text += g.kind == Kind::kP2p ? "P2P" : g.kind == Kind::kShm ? "SHM" : "NET";
  text += g.role == Role::kSend ? " send" : " recv";
  text += ", channels " + rankList(g.channels);
  return text;
}

bool validKind(Kind kind) { return kind == Kind::kP2p || kind == Kind::kShm || kind == Kind::kNet; }

ncclResult_t checkPeer(const Context& ctx, int channel, int peer, Kind kind, const char* dir) {
  if (peer == kNoPeer) return ncclSuccess;
  if (peer < 0 || peer >= ctx.nranks || !validKind(kind)) {
    WARN("Rank %d: channel %d %s peer %d or kind %d is invalid (nranks %d)", ctx.rank, channel, dir, peer,
         static_cast<int>(kind), ctx.nranks);
    return ncclInternalError;
  }
  if (kind != Kind::kNet && ctx.peers[peer].hostHash != ctx.peers[ctx.rank].hostHash) {
    WARN("Rank %d: channel %d %s peer rank %d is on another host; P2P and SHM connect ranks of one host only", ctx.rank,
         channel, dir, peer);
    return ncclInternalError;
  }
  return ncclSuccess;
}

}  // namespace

DeviceGuard::DeviceGuard() {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    (void)cudaGetLastError();
    previous_ = -1;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
}

ncclResult_t checkContext(const Context& ctx, const std::vector<ChannelLinks>& channels) {
  if (ctx.bootstrap == nullptr || ctx.rank < 0 || ctx.rank >= ctx.nranks ||
      ctx.peers.size() != static_cast<size_t>(ctx.nranks)) {
    WARN("Rank %d: transport context is incomplete (nranks %d, %zu peer descriptions, bootstrap %s)", ctx.rank,
         ctx.nranks, ctx.peers.size(), ctx.bootstrap == nullptr ? "missing" : "present");
    return ncclInternalError;
  }
  if (channels.size() > static_cast<size_t>(kMaxConnectChannels)) {
    WARN("Rank %d: %zu channels requested, at most %d", ctx.rank, channels.size(), kMaxConnectChannels);
    return ncclInternalError;
  }
  for (int p = 0; p < kNumProtos; ++p) {
    if (ctx.buffBytes[p] % kBufferAlign != 0) {
      WARN("Rank %d: FIFO size %zu of protocol %d is not a multiple of %zu", ctx.rank, ctx.buffBytes[p], p,
           kBufferAlign);
      return ncclInternalError;
    }
  }
  for (size_t c = 0; c < channels.size(); ++c) {
    const ChannelLinks& link = channels[c];
    ncclResult_t res = checkPeer(ctx, static_cast<int>(c), link.sendPeer, link.sendKind, "send");
    if (res == ncclSuccess) res = checkPeer(ctx, static_cast<int>(c), link.recvPeer, link.recvKind, "recv");
    if (res != ncclSuccess) return res;
  }
  return ncclSuccess;
}

std::vector<Group> makeGroups(const Context& ctx, const std::vector<ChannelLinks>& channels) {
  using Key = std::tuple<int, int, int>;  // peer, kind, role
  std::map<Key, std::vector<int>> byKey;
  for (size_t c = 0; c < channels.size(); ++c) {
    const ChannelLinks& link = channels[c];
    if (link.sendPeer != kNoPeer) {
      byKey[Key(link.sendPeer, static_cast<int>(link.sendKind), static_cast<int>(Role::kSend))].push_back(
          static_cast<int>(c));
    }
    if (link.recvPeer != kNoPeer) {
      byKey[Key(link.recvPeer, static_cast<int>(link.recvKind), static_cast<int>(Role::kRecv))].push_back(
          static_cast<int>(c));
    }
  }
  std::vector<Group> groups;
  groups.reserve(byKey.size());
  for (auto& [key, list] : byKey) {
    Group g;
    g.peer = std::get<0>(key);
    g.kind = static_cast<Kind>(std::get<1>(key));
    g.role = static_cast<Role>(std::get<2>(key));
    g.crossProcess = ctx.peers[g.peer].pidHash != ctx.peers[ctx.rank].pidHash;
    g.channels = list;
    for (int c : list) g.channelMask |= 1ull << c;
    std::copy(ctx.buffBytes, ctx.buffBytes + kNumProtos, g.buffBytes);
    g.layout = computeLayout(g.role, static_cast<int>(list.size()), ctx.buffBytes, 1);
    g.what = describe(ctx, g);
    groups.push_back(std::move(g));
  }
  return groups;
}

void fillConns(const std::vector<Group>& groups, const size_t buffBytes[kNumProtos], std::vector<DevSendConn>* send,
               std::vector<DevRecvConn>* recv) {
  size_t nChannels = 0;
  for (const Group& g : groups) {
    for (int c : g.channels) nChannels = std::max(nChannels, static_cast<size_t>(c) + 1);
  }
  send->assign(nChannels, DevSendConn{});
  recv->assign(nChannels, DevRecvConn{});
  for (const Group& g : groups) {
    int n = static_cast<int>(g.channels.size());
    BlockLayout recvLayout = computeLayout(Role::kRecv, n, buffBytes, 1);
    BlockLayout sendLayout = computeLayout(Role::kSend, n, buffBytes, 1);
    char* recvBase = (g.role == Role::kRecv ? g.local : g.remote)->devPtr();
    char* sendBase = (g.role == Role::kSend ? g.local : g.remote)->devPtr();
    for (int i = 0; i < n; ++i) {
      char* buffs[kNumProtos];
      for (int p = 0; p < kNumProtos; ++p) {
        buffs[p] = recvLayout.protoBytes[p] != 0 ? recvBase + recvLayout.bufferOffset(i, p) : nullptr;
      }
      auto* tail = reinterpret_cast<uint64_t*>(recvBase + recvLayout.counterOffset(i));
      auto* head = reinterpret_cast<uint64_t*>(sendBase + sendLayout.counterOffset(i));
      auto* tags = reinterpret_cast<uint64_t*>(recvBase + recvLayout.stepTagsOffset(i));
      size_t c = static_cast<size_t>(g.channels[i]);
      if (g.role == Role::kSend) {
        (*send)[c] = DevSendConn{{buffs[0], buffs[1], buffs[2]}, tail, head, 0, 0, nullptr, tags};
      } else {
        (*recv)[c] = DevRecvConn{{buffs[0], buffs[1], buffs[2]}, tail, head, 0, tags};
      }
    }
  }
}

}  // namespace braid::transport
