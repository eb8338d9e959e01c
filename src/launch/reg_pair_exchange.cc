// PeerRegistrations::exchangePairs (reg_exchange.h): the receiver offers its receive buffers, the
// sender maps the registered ones and writes into them. Phases, each run for every pair before the
// next one waits:
//   1. each rank sends every partner a header (its socket, retired serials, offer count) and one
//      offer per receive from that partner;
//   2. it receives the partners' headers and offers, and sends the descriptors of its new offers;
//   3. it maps the partners' registered offers (a new one with the descriptor that follows it);
//   4. where an offer in either direction was new, the sender tells the receiver which ones it
//      could map (the verdict); otherwise both know it from before (told_, unusable_).
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/tags.h"
#include "launch/reg_exchange.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
struct PeerRegistrations::PairHeader {
  int32_t pid;
  int32_t nOffers;
  int32_t holdsLocal;
  int32_t pad;
  uint64_t socketSerial;
  RetiredList retired;
};

ncclResult_t PeerRegistrations::exchangePairs(const transport::Context& ctx, bool holdsLocal,
                                              std::vector<Pair>* pairs) {
  NCCLCHECK(bindSocket(ctx));  // before anything is sent: once a partner has our header, it may send to it
  struct Sides {
    std::vector<Offer> mine;    // offered to the partner (our receives)
    std::vector<Offer> theirs;  // offered by the partner (our sends)
    bool anyNew = false;
  };
  std::vector<Sides> sides(pairs->size());
  for (size_t p = 0; p < pairs->size(); p++) {
    const Pair& pair = (*pairs)[p];
    PairHeader header{};
    header.pid = static_cast<int32_t>(::getpid());
    header.nOffers = static_cast<int32_t>(pair.recvs.size());
    header.holdsLocal = holdsLocal ? 1 : 0;
    header.socketSerial = socketSerial_;
    header.retired = takeRetiredFor(ctx, pair.peer);
    for (const RecvOffer& recv : pair.recvs) {
      Offer offer = describe(recv.reg, recv.buff);
      if (recv.reg != nullptr && firstTell(pair.peer, recv.reg->serial)) offer.isNew = 1;
      sides[p].mine.push_back(offer);
    }
    NCCLCHECK(ctx.bootstrap->send(pair.peer, tags::kPairHeader, &header, sizeof(header)));
    if (!pair.recvs.empty()) {
      NCCLCHECK(
          ctx.bootstrap->send(pair.peer, tags::kPairOffers, sides[p].mine.data(), sizeof(Offer) * pair.recvs.size()));
    }
  }

  for (size_t p = 0; p < pairs->size(); p++) {
    const Pair& pair = (*pairs)[p];
    PairHeader header{};
    const ncclResult_t met = ctx.bootstrap->recv(pair.peer, tags::kPairHeader, &header, sizeof(header));
    if (met == ncclRemoteError) {  // timed out or gone (aborted: nothing to explain)
      WARN(
          "rank %d: rank %d never joined the registration exchange for their sends and receives of the zero-copy "
          "size; if it is alive, it passed unregistered buffers where this rank passed registered ones (a send and "
          "its receive must both be registered or neither, as NCCL requires)",
          ctx.rank, pair.peer);
    }
    NCCLCHECK(met);
    if (holdsLocal && header.holdsLocal != 0) {
      pairHolds_.insert(pair.peer);
    } else {
      pairHolds_.erase(pair.peer);
    }
    if (static_cast<size_t>(header.nOffers) != pair.nSends) {
      WARN(
          "rank %d: rank %d posted %d receives of the zero-copy size from it in this group, but rank %d posted %zu "
          "such sends to it; sends and receives must match (BRAID_P2P_CHECK_COUNTS=1 names the counts)",
          ctx.rank, pair.peer, header.nOffers, ctx.rank, pair.nSends);
      return ncclInvalidUsage;
    }
    sides[p].theirs.resize(pair.nSends);
    if (pair.nSends > 0) {
      NCCLCHECK(ctx.bootstrap->recv(pair.peer, tags::kPairOffers, sides[p].theirs.data(), sizeof(Offer) * pair.nSends));
    }
    retirePeer(ctx.rank, pair.peer, header.retired);
    for (size_t i = 0; i < pair.recvs.size(); i++) {
      if (sides[p].mine[i].isNew == 0) continue;
      sides[p].anyNew = true;
      NCCLCHECK(sendFd(ctx, *pair.recvs[i].reg, pair.peer, header.pid, header.socketSerial));
    }
  }

  for (size_t p = 0; p < pairs->size(); p++) {
    Pair& pair = (*pairs)[p];
    pair.sendDest.assign(pair.nSends, nullptr);
    for (size_t i = 0; i < pair.nSends; i++) {
      const Offer& offer = sides[p].theirs[i];
      sides[p].anyNew = sides[p].anyNew || offer.isNew != 0;
      if (offer.registered != 0) pair.sendDest[i] = peerBuffer(ctx, pair.peer, offer);
    }
    if (!sides[p].anyNew || pair.nSends == 0) continue;
    std::vector<uint8_t> verdicts(pair.nSends);
    for (size_t i = 0; i < pair.nSends; i++) verdicts[i] = pair.sendDest[i] != nullptr ? 1 : 0;
    NCCLCHECK(ctx.bootstrap->send(pair.peer, tags::kPairVerdict, verdicts.data(), verdicts.size()));
  }

  for (size_t p = 0; p < pairs->size(); p++) {
    Pair& pair = (*pairs)[p];
    const size_t nRecvs = pair.recvs.size();
    std::vector<uint8_t> verdicts(nRecvs, 0);
    if (sides[p].anyNew && nRecvs > 0) {
      NCCLCHECK(ctx.bootstrap->recv(pair.peer, tags::kPairVerdict, verdicts.data(), verdicts.size()));
    }
    pair.recvDirect.assign(nRecvs, 0);
    for (size_t i = 0; i < nRecvs; i++) {
      const Offer& offer = sides[p].mine[i];
      if (offer.registered == 0) continue;
      Key key{pair.peer, offer.serial};
      if (offer.isNew != 0) told_[key] = verdicts[i] != 0;
      pair.recvDirect[i] = sides[p].anyNew ? verdicts[i] : static_cast<char>(told_[key]);
    }
  }
  return ncclSuccess;
}

}  // namespace braid
