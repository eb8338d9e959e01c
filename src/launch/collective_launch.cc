// The launch of one collective: planned before the launch order is touched, then its kernel (or,
// on one rank, a copy) on the user's stream between the order's before() and after(), numbered on
// the progress board.
#include <mutex>

#include "core/comm.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "device/launch_kernel.h"
#include "device/reduce/work_scalar.h"
#include "launch/collective_engine.h"
#include "launch/device_state.h"
#include "launch/progress_recorder.h"
#include "launch/share_membership.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/log.h"

namespace braid {
namespace {

// ncclAvg becomes a pre-multiplication by 1/nranks for floating types and a division of the sum
// for integers (truncating), as NCCL defines it.
void setReduction(const CollTask& task, int nranks, DevWork* work) {
  switch (task.op) {
    case ncclProd:
      work->redOp = static_cast<uint8_t>(DevRedOp::kProd);
      break;
    case ncclMax:
      work->redOp = static_cast<uint8_t>(DevRedOp::kMax);
      break;
    case ncclMin:
      work->redOp = static_cast<uint8_t>(DevRedOp::kMin);
      break;
    case ncclAvg:
      if (dtypeIsFloating(task.dtype)) {
        work->redOp = static_cast<uint8_t>(DevRedOp::kPreMulSum);
        work->scalar = avgScalarBits(task.dtype, nranks);
      } else {
        work->redOp = static_cast<uint8_t>(DevRedOp::kSumPostDiv);
        work->scalar = static_cast<uint64_t>(nranks);
      }
      break;
    default:
      if (hasUserOp(task)) {
        work->redOp = static_cast<uint8_t>(DevRedOp::kPreMulSum);
        work->scalar = preMulScalarBits(task.dtype, task.scalarBits);
        work->scalarPtr = task.scalarPtr;
      } else {
        work->redOp = static_cast<uint8_t>(DevRedOp::kSum);
      }
      break;
  }
}

// The operation's buffers, type and reduction as the kernels take them.
DevWork workOf(const CollTask& task, int nranks) {
  DevWork work{};
  work.sendbuff = task.sendbuff;
  work.recvbuff = task.recvbuff;
  work.count = task.count;
  work.root = task.root;
  work.coll = static_cast<uint8_t>(task.coll);
  work.dtype = static_cast<uint8_t>(task.dtype);
  setReduction(task, nranks, &work);
  return work;
}

}  // namespace

ncclResult_t CollectiveEngine::launch(const CollTask& task, const RegisteredLaunch& registered,
                                      reg::Registry* registry) {
  if (task.count == 0) return ncclSuccess;
  ncclComm* comm = ctx_.comm;
  int nranks = comm->nranks_;
  INFO(kLogColl, "%s: sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p",
       plan::collName(task.coll), task.sendbuff, task.recvbuff, task.count, static_cast<int>(task.dtype),
       static_cast<int>(task.op), task.root, static_cast<void*>(comm), nranks, static_cast<void*>(task.stream));
  // Planned before the launch order is touched: a refused plan (a forced algSelection, NCCL_ALGO
  // leaving nothing) leaves no half-made launch behind.
  plan::Decision decision = registered.decision;
  if (nranks > 1 && !registered.direct) NCCLCHECK(planOf(task, modelFor(task), &decision));
  ScopedDevice device(comm->cudaDev_);
  const std::unique_lock<std::mutex> lock = ctx_.share->launchLock();
  LaunchOrder& order = ctx_.share->order();
  NCCLCHECK(order.before(task.stream));
  const cudaEvent_t launchEvent = task.options.launchEvent;
  const KernelLaunch& kernels = ctx_.launch;
  if (nranks == 1 && hasUserOp(task)) {
    // One rank with a PreMulSum op: the premultiplication still applies.
    LaunchOptions launch;
    NCCLCHECK(kernels.withLaunchEvent(kernels.plain, launchEvent, task.stream, &launch));
    CUDACHECK(launchOneRankKernel(workOf(task, nranks), launch, task.stream));
  } else if (nranks == 1) {
    // One rank: a copy (any other reduction of one value is that value). No kernel: a launch event
    // is recorded where the copy begins, as NCCL records one without launch-completion events.
    if (launchEvent != nullptr) CUDACHECK(cudaEventRecord(launchEvent, task.stream));
    if (task.sendbuff != task.recvbuff) {
      CUDACHECK(cudaMemcpyAsync(task.recvbuff, task.sendbuff, task.count * dtypeSize(task.dtype),
                                cudaMemcpyDeviceToDevice, task.stream));
    }
  } else {
    DevKernelArgs args{};
    args.comm = ctx_.device->devComm();
    args.work = workOf(task, nranks);
    DevWork& work = args.work;
    work.proto = static_cast<uint8_t>(decision.proto);
    work.algo = static_cast<uint8_t>(decision.algo == plan::kAlgoDirect ? DevAlgo::kDirect
                                     : decision.algo == plan::kAlgoTree ? DevAlgo::kTree
                                                                        : DevAlgo::kRing);
    work.nChannels = decision.nChannels;
    work.chunkBytes = decision.chunkBytes;
    work.sharedSteps = ctx_.share->stepsInGroupWords() ? 1 : 0;  // see ShareMembership::connectOrReuse
    if (order.launchCaptured()) {
      ctx_.progress->noteCapture(task, work.nChannels, &work);
    } else {
      ctx_.progress->noteLaunch(task, work.nChannels, &work);
    }
    TRACE(kLogTuning, "%s %zu bytes: %s/%s channels %d threads %d chunk %u (model %.1f us), CTA policy %d",
          plan::collName(task.coll), collBytes(task, nranks), plan::algoName(decision.algo),
          plan::protoName(decision.proto), decision.nChannels, decision.nThreads, decision.chunkBytes,
          decision.estimatedUs, task.options.ctaPolicy);
    LaunchOptions launch;
    NCCLCHECK(kernels.withLaunchEvent(kernels.coll, launchEvent, task.stream, &launch));
    launch.clusterSize = kernels.clusters ? decision.clusterSize : 0;
    CUDACHECK(launchCollectiveKernel(args, decision.nThreads, launch, task.stream,
                                     registered.direct ? &registered.peers : nullptr));
    if (registered.direct) NCCLCHECK(registered.noteUse(registry, task.stream));
  }
  NCCLCHECK(order.after(task.stream));
  if (!order.launchCaptured()) ctx_.progress->noteRecorded();
  return ncclSuccess;
}

}  // namespace braid
