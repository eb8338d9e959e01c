// What bootstrap peers send each other (shared by the root and the ranks). The protocol itself is
// described at the top of bootstrap.cc.
//
// All structs are sent as raw bytes in host byte order: every process of a job runs this library
// on the same architecture. kBootstrapProtocol changes whenever a layout or a rule changes, so
// that mixing builds fails with a clear message instead of misreading bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
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
// Messages that arrive before their receive is posted wait in memory: together they may hold at
// most this much (bootstrap messages are control data: the largest, an allGather slot of every
// rank's links, stays far below it at kBootstrapMaxRanks). A message whose receive is posted is
// bounded by that receive's size instead.
constexpr uint64_t kBootstrapMaxQueuedBytes = 1ull << 30;

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

// Parsers of what a peer sends: pure functions of the received bytes, called by the production
// paths (root.cc, bootstrap.cc, bootstrap_ops.cc) and by the fuzz harnesses of tests/fuzz/. None
// logs: the caller knows the connection, and rate-limits what a stranger can make it print. Each
// fills *out whenever `size` is the struct's (so that a caller can name the sender), and sets *why
// on failure.

// A root's view of a check-in: the protocol word, then every field that indexes or sizes
// anything. ncclInvalidUsage for a wrong size, another protocol, or fields no rank of any job sends.
[[nodiscard]] ncclResult_t parseRootCheckIn(const uint8_t* data, size_t size, RootCheckIn* out, std::string* why);

// A rank's view of its root's framed reply (a uint64_t length, then the RootReply). The message is
// always NUL-terminated in *out; *result is what the rendezvous returns: the root's result when it is
// an NCCL error code, ncclInternalError for a code no NCCL has.
[[nodiscard]] ncclResult_t parseRootReplyFrame(const uint8_t* data, size_t size, RootReply* out, ncclResult_t* result,
                                               std::string* why);

// A rank's view of a direct connection's hello, for a receiver that is `rank` of `nranks`.
[[nodiscard]] ncclResult_t parsePeerHello(const uint8_t* data, size_t size, int rank, int nranks, PeerHello* out,
                                          std::string* why);

// The header of a message on a direct connection: a known kind. ncclInternalError otherwise (a
// corrupted stream: nothing after it can be trusted).
[[nodiscard]] ncclResult_t parsePeerMsgHeader(const uint8_t* data, size_t size, PeerMsgHeader* out, std::string* why);

// Whether a message of `bytes` that no receive waits for may be queued with `queued` bytes held.
inline bool peerMsgFitsQueue(uint64_t bytes, uint64_t queued) {
  return bytes <= kBootstrapMaxQueuedBytes - std::min(queued, kBootstrapMaxQueuedBytes);
}

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
