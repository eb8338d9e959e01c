// Layout of the 128-byte ncclUniqueId, the same as NCCL's so that tools that print or compare
// ids keep working:
//   bytes  0-7    magic: random per id; the fixed kCommIdMagic when the id comes from NCCL_COMM_ID
//   bytes  8-35   the root's SocketAddress (sockaddr_in / sockaddr_in6, port in network order)
//   bytes 36-127  zero
// The magic keys the handshake of every connection to that root (util/socket_auth.h; it is never
// sent), so a connection made with a stale id (a port since reused by another job's root) fails
// the handshake.
#pragma once

#include <nccl.h>

#include <cstdint>

#include "util/socket.h"

namespace braid {

// NCCL_MAGIC, "Nickel is element 28".
constexpr uint64_t kCommIdMagic = 0x0280028002800280ull;
constexpr size_t kUniqueIdAddressOffset = 8;
constexpr size_t kUniqueIdUsedBytes = kUniqueIdAddressOffset + sizeof(SocketAddress);

struct UniqueIdContents {
  uint64_t magic = 0;
  SocketAddress root{};
};

void uniqueIdEncode(const UniqueIdContents& contents, ncclUniqueId* id);

// Checks that `id` (number `index` of `count`, for messages) has a usable address and a zero tail;
// otherwise one WARN ("garbage or uninitialized unique id") and ncclInvalidUsage.
[[nodiscard]] ncclResult_t uniqueIdDecode(const ncclUniqueId& id, int index, int count, UniqueIdContents* out);

// A random 64-bit magic for a new id (never kCommIdMagic, never 0).
uint64_t uniqueIdRandomMagic();

}  // namespace braid
