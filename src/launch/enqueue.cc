#include "launch/enqueue.h"

#include "core/comm.h"
#include "core/group.h"
#include "launch/coll_args.h"
#include "launch/coll_config.h"
#include "launch/comm_data_path.h"
#include "launch/p2p_task.h"
#include "launch/red_ops.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {

namespace {

// Where the communicator's operations go: its data path, created at its first operation.
ncclResult_t operationsOf(ncclComm* comm, OperationSink** out) {
  if (!comm->dataPath_) {
    std::unique_ptr<CommDataPath> path;
    NCCLCHECK(CommDataPath::create(comm, &path));
    comm->dataPath_ = std::move(path);
  }
  *out = &comm->dataPath_->operations();
  return ncclSuccess;
}

// The communicator's PreMulSum ops. Before its data path exists it has created none: an empty
// table refuses every op, and no data path is made just for that.
UserRedOps* userRedOps(ncclComm* comm) {
  static UserRedOps none;
  if (comm->dataPath_) return &comm->dataPath_->operations().redOps();
  return &none;
}

// An operation outside a group is a group of one; inside one, End only counts down.
ncclResult_t launchAsGroup(ncclComm* comm) {
  GroupContext& group = GroupContext::current();
  group.start();
  group.addPendingLaunch(comm);
  return group.end();
}

}  // namespace

ncclResult_t kernelAbortWordOf(ncclComm* comm, uint32_t** out) {
  OperationSink* operations = nullptr;
  NCCLCHECK(operationsOf(comm, &operations));  // makes the data path, which owns the word
  return comm->dataPath_->kernelAbortWord(out);
}

ncclResult_t networkOf(ncclComm* comm, net::Network** out) {
  OperationSink* operations = nullptr;
  NCCLCHECK(operationsOf(comm, &operations));  // makes the data path, which owns the network
  return comm->dataPath_->openNetwork(out);
}

ncclResult_t enqueueColl(ncclComm* comm, const CollTask& task, const char* caller, const ncclCollConfig_t* config) {
  NCCLCHECK(commCheckUsable(comm, caller));
  CollTask queued = task;
  if (config != nullptr) {
    const CollConfigTarget target{plan::collName(task.coll), false, task.coll};
    NCCLCHECK(readCollConfig(config, collConfigCommOf(*comm), target, caller, &queued.options));
  }
  NCCLCHECK(checkCollArgs(comm, task, caller));
  if (hasUserOp(task)) {
    // Resolved now: the op may be destroyed before the group launches.
    PreMulSumOp op;
    NCCLCHECK(userRedOps(comm)->find(task.op, task.dtype, caller, &op));
    queued.scalarBits = op.valueBits;
    queued.scalarPtr = op.devScalar;
  }
  if (task.count == 0) return ncclSuccess;  // nothing to move, nothing launched
  NCCLCHECK(GroupContext::current().checkBlockingMatches(comm, caller));
  OperationSink* ops = nullptr;
  NCCLCHECK(operationsOf(comm, &ops));
  ops->enqueue(queued);
  return launchAsGroup(comm);
}

ncclResult_t p2pConfigEvent(const ncclComm* comm, const ncclCollConfig_t* config, const char* name, const char* caller,
                            cudaEvent_t* launchEvent) {
  *launchEvent = nullptr;
  if (config == nullptr) return ncclSuccess;
  NCCLCHECK(commCheckUsable(comm, caller));
  CollOptions options;
  NCCLCHECK(readCollConfig(config, collConfigCommOf(*comm), CollConfigTarget{name, true, CollId::kAllReduce}, caller,
                           &options));
  *launchEvent = options.launchEvent;
  return ncclSuccess;
}

ncclResult_t enqueueP2p(ncclComm* comm, bool send, const void* buff, size_t count, ncclDataType_t dtype, int peer,
                        cudaStream_t stream, const char* caller, bool staged, cudaEvent_t launchEvent) {
  NCCLCHECK(commCheckUsable(comm, caller));
  size_t bytes = 0;
  NCCLCHECK(checkP2pArgs(comm, buff, send ? "sendbuff" : "recvbuff", count, dtype, peer, caller, &bytes));
  // An empty operation moves nothing, but the count check still compares it with its partner.
  if (bytes == 0 && paramInt(ParamId::kP2pCheckCounts) == 0) return ncclSuccess;
  NCCLCHECK(GroupContext::current().checkBlockingMatches(comm, caller));
  OperationSink* ops = nullptr;
  NCCLCHECK(operationsOf(comm, &ops));
  const cudaEvent_t queuedEvent = ops->queuedP2pLaunchEvent();
  if (launchEvent != nullptr && queuedEvent != nullptr && queuedEvent != launchEvent) {
    WARN(
        "%s: config->launchCompletionEvent %p: this group's sends and receives on communicator %p (rank %d) already "
        "carry event %p; they launch together, so at most one launch-completion event per communicator and group "
        "applies to them (as in NCCL)",
        caller, static_cast<void*>(launchEvent), static_cast<void*>(comm), comm->rank_,
        static_cast<void*>(queuedEvent));
    return ncclInvalidUsage;
  }
  P2pTask task{send, peer, const_cast<char*>(static_cast<const char*>(buff)), bytes, count, dtype, stream};
  task.staged = staged && send && peer != comm->rank_;  // a self pair in place is no copy at all
  task.launchEvent = launchEvent;
  ops->enqueueP2p(task);
  return launchAsGroup(comm);
}

ncclResult_t redOpCreatePreMulSum(ncclComm* comm, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                  ncclScalarResidence_t residence) {
  NCCLCHECK(commCheckUsable(comm, "ncclRedOpCreatePreMulSum"));
  OperationSink* ops = nullptr;
  NCCLCHECK(operationsOf(comm, &ops));
  return ops->redOps().create(scalar, datatype, residence, op);
}

// Only the handle is checked: an op may be destroyed after the communicator was finalized.
ncclResult_t redOpDestroy(ncclComm* comm, ncclRedOp_t op) {
  NCCLCHECK(commCheckHandle(comm, "ncclRedOpDestroy"));
  return userRedOps(comm)->destroy(op);
}

ncclResult_t commRegister(ncclComm* comm, void* buff, size_t size, void** handle) {
  NCCLCHECK(commCheckUsable(comm, "ncclCommRegister"));
  if (handle == nullptr) {
    WARN("ncclCommRegister: handle is NULL");
    return ncclInvalidArgument;
  }
  if (buff == nullptr) {
    WARN("ncclCommRegister: buff is NULL");
    return ncclInvalidArgument;
  }
  if (size == 0) {
    WARN("ncclCommRegister: size is 0");
    return ncclInvalidArgument;
  }
  OperationSink* ops = nullptr;
  NCCLCHECK(operationsOf(comm, &ops));
  return ops->registerBuffer(buff, size, handle);
}

ncclResult_t commDeregister(ncclComm* comm, void* handle) {
  NCCLCHECK(commCheckHandle(comm, "ncclCommDeregister"));
  if (handle == nullptr) {
    WARN("ncclCommDeregister: handle is NULL");
    return ncclInvalidArgument;
  }
  if (!comm->dataPath_) {
    WARN("ncclCommDeregister: handle %p is not a registration of this communicator (it has none)", handle);
    return ncclInvalidArgument;
  }
  return comm->dataPath_->operations().deregisterBuffer(handle);
}

}  // namespace braid
