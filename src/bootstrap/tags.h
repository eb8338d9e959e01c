// Every tag the library passes to Bootstrap::send / Bootstrap::recv, in one place.
//
// A receive takes the oldest message from its peer with the same tag, so two exchanges that may be
// in flight between the same two ranks at once must never share a tag: each exchange gets its own
// tag or range here, and the static_assert below keeps the ranges apart. The bootstrap's own
// collectives (allGather, barrier, broadcast) are messages of other kinds and never meet these.
//
// The values are what ranks put on the wire; they are kept stable so that nothing changes for ranks
// that compare them (a tag names a message, it carries no meaning beyond that).
#pragma once

namespace braid::tags {

// A run of tags [first, first + count).
struct Range {
  int first;
  int count;
  constexpr int end() const { return first + count; }
  constexpr bool holds(int tag) const { return tag >= first && tag < end(); }
};

// The base of the library's tags ("BR").
constexpr int kBase = 0x42520000;

// transport::connectChannels: one tag per (transport kind, sender role), kind * 2 + role from the
// start of the range the connect's transport::Context names (kinds 1..3, roles 0..1: offsets 2..7).
// The NET handles of a connect take the tag of (NET, receiver).
constexpr Range kCollectiveConnect{kBase, 8};
constexpr Range kP2pConnect{kBase + 16, 8};

// Agreements on pooled connections of a share group (launch/share_connect.cc), per family.
constexpr int kRingShare = kBase + 8;
constexpr int kDirectShare = kBase + 9;
constexpr int kP2pShare = kBase + 35;

// ncclCommResume: a rank tells each peer it shares connection blocks with that they are back.
constexpr int kResume = kBase + 24;

// Point-to-point: the counts and datatypes a sender announces (BRAID_P2P_CHECK_COUNTS)...
constexpr int kP2pCount = kBase + 30;
// ...the link description two ranks exchange before they connect...
constexpr int kP2pLink = kBase + 31;
// ...and the three messages of a pair's buffer registration exchange (launch/reg_pair_exchange.cc).
constexpr int kPairHeader = kBase + 32;
constexpr int kPairOffers = kBase + 33;
constexpr int kPairVerdict = kBase + 34;

// A child communicator's unique id, from its first member to the others over the parent's bootstrap.
constexpr int kChildId = 0x42530001;

namespace detail {

constexpr Range kAll[] = {kCollectiveConnect, kP2pConnect,      {kRingShare, 1},   {kDirectShare, 1},
                          {kP2pShare, 1},     {kResume, 1},     {kP2pCount, 1},    {kP2pLink, 1},
                          {kPairHeader, 1},   {kPairOffers, 1}, {kPairVerdict, 1}, {kChildId, 1}};

constexpr bool disjoint() {
  constexpr int n = static_cast<int>(sizeof(kAll) / sizeof(kAll[0]));
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (kAll[i].first < kAll[j].end() && kAll[j].first < kAll[i].end()) return false;
    }
  }
  return true;
}

}  // namespace detail

static_assert(detail::disjoint(), "two bootstrap tag ranges overlap");

}  // namespace braid::tags
