// Point-to-point entry points: ncclSend, ncclRecv, and AlltoAll, Gather and Scatter, which are
// groups of sends and receives (a rank's own block is a self send/receive pair, a device copy; in
// place it is skipped). Their arguments are checked as a whole before anything is queued, so a
// refused call leaves the user's group as it was.
#include <cstdint>

#include "api/api_guard.h"
#include "api/export.h"
#include "core/comm.h"
#include "core/group.h"
#include "launch/coll_task.h"
#include "launch/enqueue.h"
#include "util/check.h"
#include "util/log.h"

namespace {

// What AlltoAll, Gather and Scatter share: the communicator, the type and the per-rank byte size.
ncclResult_t checkBlockArgs(ncclComm_t comm, size_t count, ncclDataType_t datatype, const char* caller,
                            size_t* blockBytes) {
  NCCLCHECK(braid::commCheckUsable(comm, caller));
  size_t elemSize = braid::dtypeSize(datatype);
  if (elemSize == 0) {
    WARN("%s: datatype %d is not a valid ncclDataType_t (rank %d)", caller, static_cast<int>(datatype), comm->rank_);
    return ncclInvalidArgument;
  }
  if (count > SIZE_MAX / elemSize / static_cast<size_t>(comm->nranks_)) {
    WARN("%s: count %zu of %zu-byte elements times %d ranks overflows the addressable size (rank %d)", caller, count,
         elemSize, comm->nranks_, comm->rank_);
    return ncclInvalidArgument;
  }
  *blockBytes = count * elemSize;
  return ncclSuccess;
}

ncclResult_t checkRoot(ncclComm_t comm, int root, const char* caller) {
  if (root >= 0 && root < comm->nranks_) return ncclSuccess;
  WARN("%s: root %d is not a rank of this communicator (nranks %d, rank %d)", caller, root, comm->nranks_, comm->rank_);
  return ncclInvalidArgument;
}

ncclResult_t checkBuffer(ncclComm_t comm, const void* buff, const char* name, size_t count, const char* caller) {
  if (count == 0 || buff != nullptr) return ncclSuccess;
  WARN("%s: %s is NULL with count %zu (rank %d)", caller, name, count, comm->rank_);
  return ncclInvalidArgument;
}

const char* at(const void* base, size_t bytes, int block) {
  return static_cast<const char*>(base) + bytes * static_cast<size_t>(block);
}

// Runs `queue` (which enqueues sends and receives) as one group; the group's result is returned.
template <typename Queue>
ncclResult_t asGroup(Queue queue) {
  braid::GroupContext& group = braid::GroupContext::current();
  group.start();
  ncclResult_t result = queue();
  ncclResult_t end = group.end();
  return result != ncclSuccess ? result : end;
}

}  // namespace

BRAID_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return braid::apiGuard(
      "ncclSend", [&] { return braid::enqueueP2p(comm, true, sendbuff, count, datatype, peer, stream, "ncclSend"); });
}

BRAID_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return braid::apiGuard(
      "ncclRecv", [&] { return braid::enqueueP2p(comm, false, recvbuff, count, datatype, peer, stream, "ncclRecv"); });
}

// Block p of sendbuff goes to rank p, block p of recvbuff comes from rank p. In place is refused:
// a block would be overwritten by its peer's data while it may still be unsent.
BRAID_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream) {
  const char* caller = "ncclAlltoAll";
  return braid::apiGuard(caller, [&]() -> ncclResult_t {
    size_t block = 0;
    NCCLCHECK(checkBlockArgs(comm, count, datatype, caller, &block));
    NCCLCHECK(checkBuffer(comm, sendbuff, "sendbuff", count, caller));
    NCCLCHECK(checkBuffer(comm, recvbuff, "recvbuff", count, caller));
    if (count > 0 && sendbuff == recvbuff) {
      WARN("%s: sendbuff == recvbuff (%p): in-place AlltoAll is not supported (rank %d)", caller, recvbuff,
           comm->rank_);
      return ncclInvalidArgument;
    }
    return asGroup([&]() -> ncclResult_t {
      for (int p = 0; p < comm->nranks_; p++) {
        NCCLCHECK(braid::enqueueP2p(comm, true, at(sendbuff, block, p), count, datatype, p, stream, caller));
        NCCLCHECK(braid::enqueueP2p(comm, false, at(recvbuff, block, p), count, datatype, p, stream, caller));
      }
      return ncclSuccess;
    });
  });
}

// Every rank's sendbuff goes to block r of the root's recvbuff. In place: the root's sendbuff is
// its own block, recvbuff + root * count.
BRAID_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  const char* caller = "ncclGather";
  return braid::apiGuard(caller, [&]() -> ncclResult_t {
    size_t block = 0;
    NCCLCHECK(checkBlockArgs(comm, count, datatype, caller, &block));
    NCCLCHECK(checkRoot(comm, root, caller));
    NCCLCHECK(checkBuffer(comm, sendbuff, "sendbuff", count, caller));
    if (comm->rank_ == root) NCCLCHECK(checkBuffer(comm, recvbuff, "recvbuff", count, caller));
    return asGroup([&]() -> ncclResult_t {
      NCCLCHECK(braid::enqueueP2p(comm, true, sendbuff, count, datatype, root, stream, caller));
      if (comm->rank_ != root) return ncclSuccess;
      for (int p = 0; p < comm->nranks_; p++) {
        NCCLCHECK(braid::enqueueP2p(comm, false, at(recvbuff, block, p), count, datatype, p, stream, caller));
      }
      return ncclSuccess;
    });
  });
}

// Block r of the root's sendbuff goes to rank r's recvbuff. In place: the root's recvbuff is its
// own block, sendbuff + root * count.
BRAID_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  const char* caller = "ncclScatter";
  return braid::apiGuard(caller, [&]() -> ncclResult_t {
    size_t block = 0;
    NCCLCHECK(checkBlockArgs(comm, count, datatype, caller, &block));
    NCCLCHECK(checkRoot(comm, root, caller));
    NCCLCHECK(checkBuffer(comm, recvbuff, "recvbuff", count, caller));
    if (comm->rank_ == root) NCCLCHECK(checkBuffer(comm, sendbuff, "sendbuff", count, caller));
    return asGroup([&]() -> ncclResult_t {
      if (comm->rank_ == root) {
        for (int p = 0; p < comm->nranks_; p++) {
          NCCLCHECK(braid::enqueueP2p(comm, true, at(sendbuff, block, p), count, datatype, p, stream, caller));
        }
      }
      return braid::enqueueP2p(comm, false, recvbuff, count, datatype, root, stream, caller);
    });
  });
}
