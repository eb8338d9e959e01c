// Point-to-point entry points: ncclSend, ncclRecv, and AlltoAll, Gather and Scatter, which are
// groups of sends and receives (a rank's own block is a self send/receive pair, a device copy; in
// place it is skipped). Their arguments are checked as a whole before anything is queued. A call
// refused inside the user's group fails that group at its ncclGroupEnd, as in NCCL.
#include <cstddef>

#include "api/api_guard.h"
#include "api/coll_calls.h"
#include "api/export.h"
#include "core/comm.h"
#include "core/group.h"
#include "launch/coll_args.h"
#include "launch/enqueue.h"
#include "util/check.h"
#include "util/log.h"

namespace {

// What AlltoAll, Gather and Scatter share: the communicator, the type, a count of nranks blocks
// that fits, and the per-rank block's byte size.
ncclResult_t checkBlockArgs(ncclComm_t comm, size_t count, ncclDataType_t datatype, const char* caller,
                            size_t* blockBytes) {
  NCCLCHECK(braid::commCheckUsable(comm, caller));
  size_t elemSize = 0;
  NCCLCHECK(braid::checkDatatype(comm, datatype, caller, &elemSize));
  NCCLCHECK(braid::checkCount(comm, count, elemSize, static_cast<size_t>(comm->nranks_), caller));
  *blockBytes = count * elemSize;
  return ncclSuccess;
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
  group.noteRefusedCall(result);  // some of its operations may be queued already: none may launch
  ncclResult_t end = group.end();
  return result != ncclSuccess ? result : end;
}

}  // namespace

BRAID_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return braid::queueingApiGuard(
      "ncclSend", [&] { return braid::enqueueP2p(comm, true, sendbuff, count, datatype, peer, stream, "ncclSend"); });
}

BRAID_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return braid::queueingApiGuard(
      "ncclRecv", [&] { return braid::enqueueP2p(comm, false, recvbuff, count, datatype, peer, stream, "ncclRecv"); });
}

// Block p of sendbuff goes to rank p, block p of recvbuff comes from rank p. In place (sendbuff ==
// recvbuff), block p is overwritten by its peer's data while it may still be unsent: those sends are
// staged, read from a copy made just before they move (launch/p2p_stage.cc).
ncclResult_t braid::api::alltoAll(const char* caller, const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                  const ncclCollConfig_t* config) {
  return braid::queueingApiGuard(caller, [&]() -> ncclResult_t {
    size_t block = 0;
    NCCLCHECK(checkBlockArgs(comm, count, datatype, caller, &block));
    cudaEvent_t event = nullptr;
    NCCLCHECK(braid::p2pConfigEvent(comm, config, "AlltoAll", caller, &event));
    NCCLCHECK(braid::checkBuffer(comm, sendbuff, "sendbuff", count, caller));
    NCCLCHECK(braid::checkBuffer(comm, recvbuff, "recvbuff", count, caller));
    const bool inPlace = sendbuff == recvbuff;
    return asGroup([&]() -> ncclResult_t {
      for (int p = 0; p < comm->nranks_; p++) {
        NCCLCHECK(
            braid::enqueueP2p(comm, true, at(sendbuff, block, p), count, datatype, p, stream, caller, inPlace, event));
        NCCLCHECK(
            braid::enqueueP2p(comm, false, at(recvbuff, block, p), count, datatype, p, stream, caller, false, event));
      }
      return ncclSuccess;
    });
  });
}

BRAID_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream) {
  return braid::api::alltoAll("ncclAlltoAll", sendbuff, recvbuff, count, datatype, comm, stream, nullptr);
}

// Every rank's sendbuff goes to block r of the root's recvbuff. In place: the root's sendbuff is
// its own block, recvbuff + root * count.
ncclResult_t braid::api::gather(const char* caller, const void* sendbuff, void* recvbuff, size_t count,
                                ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                                const ncclCollConfig_t* config) {
  return braid::queueingApiGuard(caller, [&]() -> ncclResult_t {
    size_t block = 0;
    NCCLCHECK(checkBlockArgs(comm, count, datatype, caller, &block));
    cudaEvent_t event = nullptr;
    NCCLCHECK(braid::p2pConfigEvent(comm, config, "Gather", caller, &event));
    NCCLCHECK(braid::checkRank(comm, root, "root", caller));
    NCCLCHECK(braid::checkBuffer(comm, sendbuff, "sendbuff", count, caller));
    if (comm->rank_ == root) NCCLCHECK(braid::checkBuffer(comm, recvbuff, "recvbuff", count, caller));
    return asGroup([&]() -> ncclResult_t {
      NCCLCHECK(braid::enqueueP2p(comm, true, sendbuff, count, datatype, root, stream, caller, false, event));
      if (comm->rank_ != root) return ncclSuccess;
      for (int p = 0; p < comm->nranks_; p++) {
        NCCLCHECK(
            braid::enqueueP2p(comm, false, at(recvbuff, block, p), count, datatype, p, stream, caller, false, event));
      }
      return ncclSuccess;
    });
  });
}

BRAID_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return braid::api::gather("ncclGather", sendbuff, recvbuff, count, datatype, root, comm, stream, nullptr);
}

// Block r of the root's sendbuff goes to rank r's recvbuff. In place: the root's recvbuff is its
// own block, sendbuff + root * count.
ncclResult_t braid::api::scatter(const char* caller, const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                                 const ncclCollConfig_t* config) {
  return braid::queueingApiGuard(caller, [&]() -> ncclResult_t {
    size_t block = 0;
    NCCLCHECK(checkBlockArgs(comm, count, datatype, caller, &block));
    cudaEvent_t event = nullptr;
    NCCLCHECK(braid::p2pConfigEvent(comm, config, "Scatter", caller, &event));
    NCCLCHECK(braid::checkRank(comm, root, "root", caller));
    NCCLCHECK(braid::checkBuffer(comm, recvbuff, "recvbuff", count, caller));
    if (comm->rank_ == root) NCCLCHECK(braid::checkBuffer(comm, sendbuff, "sendbuff", count, caller));
    return asGroup([&]() -> ncclResult_t {
      if (comm->rank_ == root) {
        for (int p = 0; p < comm->nranks_; p++) {
          NCCLCHECK(
              braid::enqueueP2p(comm, true, at(sendbuff, block, p), count, datatype, p, stream, caller, false, event));
        }
      }
      return braid::enqueueP2p(comm, false, recvbuff, count, datatype, root, stream, caller, false, event);
    });
  });
}

BRAID_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  return braid::api::scatter("ncclScatter", sendbuff, recvbuff, count, datatype, root, comm, stream, nullptr);
}
