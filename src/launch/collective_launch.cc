// The launch of one planned collective (launch/planned_coll.h): its kernel (or, on one rank, a
// copy) on the user's stream between the launch order's before() and after(), numbered on the
// progress board. Nothing is planned here.
#include <mutex>

#include "core/comm.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "device/launch_kernel.h"
#include "launch/collective_engine.h"
#include "launch/device_state.h"
#include "launch/share_membership.h"
#include "launch/watch_link.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/log.h"

namespace braid {

void CollectiveEngine::logCall(const CollTask& task) const {
  if (task.count == 0) return;
  INFO(kLogColl, "%s: sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p",
       plan::collName(task.coll), task.sendbuff, task.recvbuff, task.count, static_cast<int>(task.dtype),
       static_cast<int>(task.op), task.root, static_cast<void*>(ctx_.comm), ctx_.comm->nranks_,
       static_cast<void*>(task.stream));
}

ncclResult_t CollectiveEngine::noteSymmetricUse(const PlannedColl& op, bool graph) const {
  CommWindowsBase* windows = ctx_.comm->windows_.get();
  const CollTask& task = *op.task;
  if (op.work.sym.send != nullptr) NCCLCHECK(windows->noteCollectiveUse(task.sendbuff, graph, task.stream));
  if (op.work.sym.recv != nullptr && task.recvbuff != task.sendbuff) {
    NCCLCHECK(windows->noteCollectiveUse(task.recvbuff, graph, task.stream));
  }
  return ncclSuccess;
}

ncclResult_t CollectiveEngine::launch(const PlannedColl& op, reg::Registry* registry) {
  if (op.path == PlannedColl::Path::kNothing) return ncclSuccess;
  const CollTask& task = *op.task;
  ScopedDevice device(ctx_.comm->cudaDev_);
  const std::unique_lock<std::mutex> lock = ctx_.share->launchLock();
  LaunchOrder& order = ctx_.share->order();
  NCCLCHECK(order.before(task.stream));
  const cudaEvent_t launchEvent = task.options.launchEvent;
  const KernelLaunch& kernels = ctx_.launch;
  if (op.path == PlannedColl::Path::kOneRankKernel) {
    LaunchOptions launch;
    NCCLCHECK(kernels.withLaunchEvent(kernels.plain, launchEvent, task.stream, order.launchCaptured(), &launch));
    CUDACHECK(launchOneRankKernel(op.work, launch, task.stream));
    NCCLCHECK(kernels.afterCapturedLaunch(launchEvent, task.stream, order.launchCaptured()));
  } else if (op.path == PlannedColl::Path::kCopy) {
    // No kernel: a launch event is recorded where the copy begins, as NCCL records one without
    // launch-completion events.
    if (launchEvent != nullptr) CUDACHECK(cudaEventRecord(launchEvent, task.stream));
    if (task.sendbuff != task.recvbuff) {
      CUDACHECK(cudaMemcpyAsync(task.recvbuff, task.sendbuff, task.count * dtypeSize(task.dtype),
                                cudaMemcpyDeviceToDevice, task.stream));
    }
    NCCLCHECK(kernels.afterCapturedLaunch(launchEvent, task.stream, order.launchCaptured()));
  } else {
    const plan::Decision& decision = op.decision;
    DevKernelArgs args{};
    args.comm = ctx_.device->devComm();
    args.work = op.work;
    if (order.launchCaptured()) {
      ctx_.watch->noteCapture(task, args.work.nChannels, &args.work);
    } else {
      ctx_.watch->noteLaunch(task, args.work.nChannels, &args.work);
    }
    TRACE(kLogTuning, "%s %zu bytes: %s/%s channels %d threads %d chunk %u (model %.1f us), CTA policy %d",
          plan::collName(task.coll), collBytes(task, ctx_.comm->nranks_), plan::algoName(decision.algo),
          plan::protoName(decision.proto), decision.nChannels, decision.nThreads, decision.chunkBytes,
          decision.estimatedUs, task.options.ctaPolicy);
    LaunchOptions launch;
    NCCLCHECK(kernels.withLaunchEvent(kernels.coll, launchEvent, task.stream, order.launchCaptured(), &launch));
    launch.clusterSize = kernels.clusters ? decision.clusterSize : 0;
    const RegisteredLaunch& registered = op.registered;
    CUDACHECK(launchCollectiveKernel(args, decision.nThreads, launch, task.stream,
                                     registered.direct ? &registered.peers : nullptr));
    NCCLCHECK(kernels.afterCapturedLaunch(launchEvent, task.stream, order.launchCaptured()));
    if (registered.direct) NCCLCHECK(registered.noteUse(registry, task.stream));
    if (args.work.symmetric != 0) NCCLCHECK(noteSymmetricUse(op, order.launchCaptured()));
  }
  NCCLCHECK(order.after(task.stream));
  if (!order.launchCaptured()) ctx_.watch->noteRecorded();
  return ncclSuccess;
}

}  // namespace braid
