// Share groups on the host (launch/shared_connections.h): the tokens both ends of a connection
// compute, and the agreement on which pooled connections a connect reuses. Every case is played
// by two (or three) ranks whose messages go to each other, and checks that both ends of every
// connection decide alike.
#include "launch/shared_connections.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

namespace braid {
namespace {

using transport::ChannelLinks;
using transport::Kind;
using transport::kNoPeer;

// A rank of a ring exchange on `n` channels: channel c sends to `next` and receives from `prev`.
struct RingRank {
  int rank;
  std::vector<ChannelLinks> links;
  std::vector<uint64_t> mySend, myRecv;
};
RingRank ringRank(int rank, int next, int prev, int n) {
  return RingRank{rank, std::vector<ChannelLinks>(n, ChannelLinks{next, Kind::kP2p, prev, Kind::kP2p}),
                  std::vector<uint64_t>(n, 0), std::vector<uint64_t>(n, 0)};
}

// What `r` decides once every rank in `ranks` has sent it its message.
ReuseChoice decide(const RingRank& r, const std::vector<const RingRank*>& ranks) {
  std::map<int, std::vector<uint64_t>> theirs;
  for (const RingRank* q : ranks) {
    if (q->rank != r.rank) theirs[q->rank] = tokenMessage(q->links, q->mySend, q->myRecv, r.rank);
  }
  return agreeOnReuse(r.links, r.mySend, r.myRecv, theirs);
}

TEST(SharedConnections, BothEndsComputeTheSameToken) {
  const uint64_t a = gpuKey(7, 0x1b000);
  const uint64_t b = gpuKey(7, 0x2c000);
  EXPECT_NE(a, b);
  EXPECT_NE(gpuKey(8, 0x1b000), a) << "the same bus id on another host";
  const uint64_t ab = connectionToken(42, ConnFamily::kRing, 3, a, b);
  EXPECT_NE(ab, 0u);
  EXPECT_NE(ab, connectionToken(42, ConnFamily::kRing, 3, b, a)) << "direction";
  EXPECT_NE(ab, connectionToken(43, ConnFamily::kRing, 3, a, b)) << "another communicator made it";
  EXPECT_NE(ab, connectionToken(42, ConnFamily::kRing, 4, a, b)) << "channel";
  EXPECT_NE(ab, connectionToken(42, ConnFamily::kPointToPoint, 3, a, b)) << "family";
}

// Two ranks, 4 channels each way. Rank 0 pools its sends on channels 0-2 and receives on 0-1;
// rank 1 pools the matching receives on 0 and 2 (channel 1's with another communicator's token, as
// when the two ranks' members connected concurrently) and the matching sends on 0-1. Only the
// connections whose two ends hold the same token are reused, on both ends.
TEST(SharedConnections, AConnectionIsReusedOnlyWhereBothEndsHoldTheSameToken) {
  RingRank r0 = ringRank(0, 1, 1, 4);
  RingRank r1 = ringRank(1, 0, 0, 4);
  for (int c = 0; c < 3; c++) r0.mySend[c] = 100 + c;  // tokens of 0 -> 1 on channel c
  r0.myRecv[0] = 200;
  r0.myRecv[1] = 201;  // tokens of 1 -> 0
  r1.myRecv[0] = 100;
  r1.myRecv[1] = 999;  // another connection under the same key
  r1.myRecv[2] = 102;
  r1.mySend[0] = 200;
  r1.mySend[1] = 201;
  const ReuseChoice c0 = decide(r0, {&r0, &r1});
  const ReuseChoice c1 = decide(r1, {&r0, &r1});
  EXPECT_EQ(c0.send, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(c1.recv, c0.send) << "the two ends of 0 -> 1";
  EXPECT_EQ(c0.recv, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(c1.send, c0.recv) << "the two ends of 1 -> 0";
}

// Three ranks in a ring (0 -> 1 -> 2 -> 0). Each message to a peer carries only the tokens of that
// peer's connections, so a token of the connection to one neighbour never matches the other's.
TEST(SharedConnections, TokensGoOnlyToThePeerOfTheirConnection) {
  RingRank r0 = ringRank(0, 1, 2, 2);
  RingRank r1 = ringRank(1, 2, 0, 2);
  RingRank r2 = ringRank(2, 0, 1, 2);
  r0.mySend = {11, 12};  // 0 -> 1
  r1.myRecv = {11, 12};
  r1.mySend = {21, 22};  // 1 -> 2, but rank 2 holds nothing
  r2.mySend = {11, 12};  // 2 -> 0 with the tokens of 0 -> 1: never compared with them
  r0.myRecv = {11, 12};
  const std::vector<const RingRank*> all{&r0, &r1, &r2};
  EXPECT_EQ(decide(r0, all).send, (std::vector<bool>{true, true}));
  EXPECT_EQ(decide(r1, all).recv, (std::vector<bool>{true, true}));
  EXPECT_EQ(decide(r1, all).send, (std::vector<bool>{false, false}));
  EXPECT_EQ(decide(r2, all).recv, (std::vector<bool>{false, false}));
  // 2 -> 0: equal tokens, so reused; such a pair only arises from one connection (tokens name
  // both ends' GPUs), which is the point of agreeing on them.
  EXPECT_EQ(decide(r0, all).recv, decide(r2, all).send);
  // A channel without a peer takes part in nothing.
  RingRank lone = ringRank(0, kNoPeer, kNoPeer, 2);
  lone.mySend = {11, 12};
  EXPECT_EQ(decide(lone, {&lone}).send, (std::vector<bool>{false, false}));
}

// A communicator that joins after running operations brings its launch order: the group's first
// state takes it; a group that has a state already refuses it and leaves it with its owner (who
// keeps launching through it).
TEST(SharedConnectionsAdopt, TheFirstStateTakesTheOrderAndALaterOneRefusesIt) {
  ShareGroup group;
  auto order = std::make_unique<LaunchOrder>();
  LaunchOrder* const brought = order.get();
  SharedConnections* state = nullptr;
  ASSERT_EQ(ncclSuccess, SharedConnections::adopt(&group, &order, &state));
  EXPECT_EQ(nullptr, order);
  EXPECT_EQ(brought, &state->order());

  auto second = std::make_unique<LaunchOrder>();
  SharedConnections* again = nullptr;
  EXPECT_EQ(ncclInternalError, SharedConnections::adopt(&group, &second, &again));
  EXPECT_NE(nullptr, second);
  EXPECT_EQ(nullptr, again);
  EXPECT_EQ(brought, &state->order());
}

}  // namespace
}  // namespace braid
