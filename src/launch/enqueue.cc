#include "launch/enqueue.h"

#include "core/comm.h"
#include "core/group.h"
#include "launch/coll_args.h"
#include "launch/comm_data_path.h"
#include "util/check.h"

namespace braid {

namespace {

CommDataPath* dataPath(ncclComm* comm, ncclResult_t* result) {
  *result = ncclSuccess;
  if (!comm->dataPath_) {
    std::unique_ptr<CommDataPath> path;
    *result = CommDataPath::create(comm, &path);
    if (*result != ncclSuccess) return nullptr;
    comm->dataPath_ = std::move(path);
  }
  return static_cast<CommDataPath*>(comm->dataPath_.get());
}

// An operation outside a group is a group of one; inside one, End only counts down.
ncclResult_t launchAsGroup(ncclComm* comm) {
  GroupContext& group = GroupContext::current();
  group.start();
  group.addPendingLaunch(comm);
  return group.end();
}

}  // namespace

ncclResult_t enqueueColl(ncclComm* comm, const CollTask& task, const char* caller) {
  NCCLCHECK(commCheckUsable(comm, caller));
  NCCLCHECK(checkCollArgs(comm, task, caller));
  if (task.count == 0) return ncclSuccess;  // nothing to move, nothing launched
  ncclResult_t result;
  CommDataPath* path = dataPath(comm, &result);
  if (path == nullptr) return result;
  path->enqueue(task);
  return launchAsGroup(comm);
}

ncclResult_t enqueueP2p(ncclComm* comm, bool send, const void* buff, size_t count, ncclDataType_t dtype, int peer,
                        cudaStream_t stream, const char* caller) {
  NCCLCHECK(commCheckUsable(comm, caller));
  size_t bytes = 0;
  NCCLCHECK(checkP2pArgs(comm, buff, send ? "sendbuff" : "recvbuff", count, dtype, peer, caller, &bytes));
  if (bytes == 0) return ncclSuccess;
  ncclResult_t result;
  CommDataPath* path = dataPath(comm, &result);
  if (path == nullptr) return result;
  path->enqueueP2p(P2pTask{send, peer, const_cast<char*>(static_cast<const char*>(buff)), bytes, stream});
  return launchAsGroup(comm);
}

}  // namespace braid
