#include "launch/enqueue.h"

#include "core/comm.h"
#include "core/group.h"
#include "launch/coll_args.h"
#include "launch/comm_data_path.h"
#include "util/check.h"

namespace braid {

ncclResult_t enqueueColl(ncclComm* comm, const CollTask& task, const char* caller) {
  NCCLCHECK(commCheckUsable(comm, caller));
  NCCLCHECK(checkCollArgs(comm, task, caller));
  if (task.count == 0) return ncclSuccess;  // nothing to move, nothing launched
  if (!comm->dataPath_) {
    std::unique_ptr<CommDataPath> path;
    NCCLCHECK(CommDataPath::create(comm, &path));
    comm->dataPath_ = std::move(path);
  }
  static_cast<CommDataPath*>(comm->dataPath_.get())->enqueue(task);
  // An operation outside a group is a group of one; inside one, End only counts down.
  GroupContext& group = GroupContext::current();
  group.start();
  group.addPendingLaunch(comm);
  return group.end();
}

}  // namespace braid
