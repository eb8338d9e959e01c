// What bootstrap peers send each other (shared by the root and the ranks). The protocol itself is
// described at the top of bootstrap.cc.
//
// All structs are sent as raw bytes in host byte order: every process of a job runs this library
// on the same architecture. kBootstrapProtocol changes whenever a layout or a rule changes, so
// that mixing builds fails with a clear message instead of misreading bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "util/socket.h"

namespace braid {

constexpr uint32_t kBootstrapProtocol = 0x42520001;  // "BR" v1

// Bounds on what a peer may claim, checked before anything is allocated or indexed from it: a
// check-in or hello naming more ranks is refused (NCCL's own rank count is an int, but no job
// comes near this), and the root never waits longer than kBootstrapMaxRootTimeoutMs for a job
// whatever the first rank's NCCL_BOOTSTRAP_TIMEOUT says.
constexpr int32_t kBootstrapMaxRanks = 1 << 20;
// Connections a bootstrap listener lets wait in their handshake (SocketAcceptor's cap). Each waits
// one round trip for the peer's proof, and a root meets all of its ranks at once: the default cap of
// 128 would drop real ranks of a large job. Silent floods are still bounded: by this, and by the
// process's descriptors (the acceptor drops the oldest when accept() runs out of them).
constexpr size_t kBootstrapMaxPending = 8192;
constexpr int32_t kBootstrapMaxRootTimeoutMs = 3600 * 1000;

// Rank -> root, right after the socket handshake. Fixed size: the root's SocketAcceptor reads it
// as the connection's greeting.
enum class CheckInKind : uint32_t {
  kMember = 1,  // a rank of this root's block: wants its ring neighbour
  kStitch = 2,  // the first rank of the next block, telling this root where the block's ring continues
};

struct RootCheckIn {
  uint32_t protocol;
  uint32_t kind;  // CheckInKind
  int32_t rank;
  int32_t nranks;
  int32_t nroots;
  int32_t root;       // which of the nroots ids this check-in went to
  int32_t timeoutMs;  // the rank's NCCL_BOOTSTRAP_TIMEOUT: the root gives up after this much
  int32_t pid;
  SocketAddress listen;  // the rank's bootstrap listener
  char host[64];         // for messages about duplicate ranks
};

// Root -> rank, one framed message: once every expected check-in is in, or when the job fails.
struct RootReply {
  int32_t result;  // ncclSuccess, or what every rank of the job returns
  uint32_t reserved;
  SocketAddress next;  // members, on success: the listener of the next rank in the ring
  char message[512];   // on failure: the root's diagnosis, naming the ranks involved
};

// Rank -> rank, right after the handshake on a direct connection.
struct PeerHello {
  uint32_t protocol;
  int32_t rank;
  int32_t nranks;
  uint32_t reserved;
};

// Header of every message on a direct connection; `bytes` of payload follow.
enum class PeerMsgKind : uint32_t { kUser = 1, kAllGather = 2, kBarrier = 3, kBroadcast = 4 };

struct PeerMsgHeader {
  uint32_t kind;  // PeerMsgKind
  int32_t tag;
  uint64_t bytes;
};

static_assert(std::is_trivially_copyable_v<RootCheckIn> && std::is_trivially_copyable_v<RootReply> &&
                  std::is_trivially_copyable_v<PeerHello> && std::is_trivially_copyable_v<PeerMsgHeader>,
              "wire structs are sent as bytes");

// Ranks [begin, end) of root `root` when `nranks` ranks are split among `nroots` roots in
// contiguous blocks, the first nranks % nroots blocks one rank larger. Needs 1 <= nroots <= nranks.
struct RankBlock {
  int begin;
  int end;
};

inline RankBlock rootBlock(int nranks, int nroots, int root) {
  int base = nranks / nroots;
  int extra = nranks % nroots;
  int begin = root * base + std::min(root, extra);
  return {begin, begin + base + (root < extra ? 1 : 0)};
}

inline int rootOfRank(int nranks, int nroots, int rank) {
  int base = nranks / nroots;
  int extra = nranks % nroots;
  int bigRanks = extra * (base + 1);  // ranks owned by the larger blocks
  return rank < bigRanks ? rank / (base + 1) : extra + (rank - bigRanks) / base;
}

}  // namespace braid
