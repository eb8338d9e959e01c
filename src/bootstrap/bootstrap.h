// Out-of-band rendezvous and messaging between the ranks of a communicator, over TCP.
//
// ncclGetUniqueId -> bootstrapGetUniqueId: picks the bootstrap interface (NCCL_SOCKET_IFNAME,
// NCCL_SOCKET_FAMILY), opens a listening socket and starts a root thread in this process; the id
// carries a random 64-bit magic and the root's socket address (see unique_id.h for the layout).
// With NCCL_COMM_ID=host:port the id only encodes that address and rank 0 runs the root inside
// Bootstrap::create.
//
// Bootstrap::create connects every rank to its root (ranks are split among several roots when
// several ids are given: ncclCommInitRankScalable), the roots tell each rank the address of the
// next rank, and the ranks form a TCP ring used for allGather; other messages use direct
// connections between the two ranks.
//
// Every wait is bounded by NCCL_BOOTSTRAP_TIMEOUT seconds and polls the abort flag, so a rank that
// never comes, a dead root, a stale or garbage id, mismatched nranks or two ranks claiming one
// rank number all end in an error whose WARN names the ranks involved, never in a hang.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <memory>

namespace braid {

// Creates a unique id (and, unless NCCL_COMM_ID is set, the root thread that serves it).
[[nodiscard]] ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id);
// Always a root thread of this process, whatever NCCL_COMM_ID says: for a communicator made from
// another one (ncclCommSplit), whose ranks must not all meet at the one NCCL_COMM_ID address.
[[nodiscard]] ncclResult_t bootstrapGetRootUniqueId(ncclUniqueId* id);

class Bootstrap {
 public:
  // Joins the communicator of `nranks` ranks described by `ids` (nIds >= 1, the same ids in the
  // same order on every rank) as `rank`. `abortFlag` may be null; once its kAbortHostWaits bit
  // is set (util/socket.h) every wait returns ncclInternalError (or the caller's abort result) promptly.
  [[nodiscard]] static ncclResult_t create(const ncclUniqueId* ids, int nIds, int rank, int nranks,
                                           const std::atomic<int>* abortFlag, std::unique_ptr<Bootstrap>* out);
  virtual ~Bootstrap() = default;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // data holds nranks slots of bytesPerRank; slot rank() is ours, the others are filled in.
  [[nodiscard]] virtual ncclResult_t allGather(void* data, size_t bytesPerRank) = 0;
  // Returns once every rank has entered.
  [[nodiscard]] virtual ncclResult_t barrier() = 0;
  // root's `bytes` at data are copied to every other rank's data.
  [[nodiscard]] virtual ncclResult_t broadcast(void* data, size_t bytes, int root) = 0;
  // Tagged point-to-point messages; a recv matches the peer's send with the same tag, in order.
  // The receiver must expect exactly the size sent (a mismatch is an error naming both sizes).
  [[nodiscard]] virtual ncclResult_t send(int peer, int tag, const void* data, size_t bytes) = 0;
  [[nodiscard]] virtual ncclResult_t recv(int peer, int tag, void* data, size_t bytes) = 0;

 protected:
  Bootstrap(int rank, int nranks) : rank_(rank), nranks_(nranks) {}

 private:
  int rank_;
  int nranks_;
};

}  // namespace braid
