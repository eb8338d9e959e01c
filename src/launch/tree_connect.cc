// The tree channels' connections (topo/trees.cc gives the shape): one transport channel per tree
// edge and channel, both directions. Both ends of an edge must name it with the same channel
// number, and a rank's own edges must get distinct numbers, so an edge is numbered from its lower
// end x (the child): tree channel c, slot (depth of x % 2) * 3 + (x's place among its parent's
// children). A rank's edge up and its edges down then differ in the depth parity, and its children
// differ in their place. The numbers a rank has no edge for stay holes (transport::kNoPeer).
#include <algorithm>

#include "core/comm.h"
#include "launch/collective_engine.h"
#include "launch/share_membership.h"
#include "util/check.h"

namespace braid {
namespace {

constexpr int kTreeEdgeSlots = 2 * kMaxTreeChildren;
// Tree channels per transport call: each takes kTreeEdgeSlots channel numbers.
constexpr int kTreeChannelsPerCall = transport::kMaxConnectChannels / kTreeEdgeSlots;

int depthOf(const std::vector<topo::TreeLinks>& tree, int rank) {
  int depth = 0;
  for (int x = rank; tree[x].parent >= 0; x = tree[x].parent) depth++;
  return depth;
}

int placeAmongSiblings(const std::vector<topo::TreeLinks>& tree, int child) {
  const topo::TreeLinks& parent = tree[tree[child].parent];
  return static_cast<int>(std::find(parent.children.begin(), parent.children.begin() + parent.nChildren, child) -
                          parent.children.begin());
}

// The edge from `child` up to its parent, numbered within its tree channel.
int edgeSlot(const std::vector<topo::TreeLinks>& tree, int child) {
  return (depthOf(tree, child) % 2) * kMaxTreeChildren + placeAmongSiblings(tree, child);
}

}  // namespace

ncclResult_t CollectiveEngine::connectTrees(transport::Context ctx, DevComm* dev) {
  const int rank = ctx_.comm->rank_;
  const int nranks = ctx_.comm->nranks_;
  const int nTrees = static_cast<int>(topo_.trees.size());
  dev->nTreeChannels = nTrees;
  ctx.buffBytes[kProtoLL128] = 0;  // trees run LL and Simple
  auto kind = [&](int from, int to) { return transportKind(topo_.transport[from * nranks + to]); };
  for (int first = 0; first < nTrees; first += kTreeChannelsPerCall) {
    const int count = std::min(kTreeChannelsPerCall, nTrees - first);
    const transport::ChannelLinks hole{transport::kNoPeer, transport::Kind::kP2p, transport::kNoPeer,
                                       transport::Kind::kP2p};
    std::vector<transport::ChannelLinks> channels(static_cast<size_t>(count) * kTreeEdgeSlots, hole);
    auto edge = [&](int c, int child) { return (c - first) * kTreeEdgeSlots + edgeSlot(topo_.trees[c], child); };
    for (int c = first; c < first + count; c++) {
      const topo::TreeLinks& me = topo_.trees[c][rank];
      if (me.parent >= 0) {
        channels[edge(c, rank)] = {me.parent, kind(rank, me.parent), me.parent, kind(me.parent, rank)};
      }
      for (int k = 0; k < me.nChildren; k++) {
        const int child = me.children[k];
        channels[edge(c, child)] = {child, kind(rank, child), child, kind(child, rank)};
      }
    }
    std::vector<DevSendConn> send;
    std::vector<DevRecvConn> recv;
    std::unique_ptr<transport::Connections> conns;
    NCCLCHECK(transport::connectChannels(ctx, channels, &conns, &send, &recv));
    ctx_.share->keep(std::move(conns));
    for (int c = first; c < first + count; c++) {
      const topo::TreeLinks& me = topo_.trees[c][rank];
      DevTreeChannel& t = dev->tree[c];
      t.parent = me.parent;
      t.nChildren = me.nChildren;
      if (me.parent >= 0) {
        t.toParent = send[edge(c, rank)];
        t.fromParent = recv[edge(c, rank)];
      }
      for (int k = 0; k < me.nChildren; k++) {
        t.toChild[k] = send[edge(c, me.children[k])];
        t.fromChild[k] = recv[edge(c, me.children[k])];
      }
    }
  }
  return ncclSuccess;
}

}  // namespace braid
