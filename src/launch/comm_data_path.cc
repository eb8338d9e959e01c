#include "launch/comm_data_path.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "device/launch_kernel.h"
#include "device/reduce/work_scalar.h"
#include "launch/replay_wake.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/log.h"
#include "util/params.h"

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

// Makes every kernel resident on `cudaDev` (the current GPU) when the first data path of this process
// is created there (see loadKernels in device/launch_kernel.h): no kernel of ours runs on that GPU
// yet, and other data paths' creations wait on the mutex until the loading is done, so none of our
// kernels can be waiting there for a thread stuck behind it. (After a cudaDeviceReset the kernels
// load lazily again.)
ncclResult_t loadKernelsOnce(int cudaDev) {
  static std::mutex mutex;
  static std::set<int> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(cudaDev) != 0 || paramInt(ParamId::kLoadKernels) == 0) return ncclSuccess;
  const auto start = std::chrono::steady_clock::now();
  CUDACHECK(loadKernels());
  loaded.insert(cudaDev);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  INFO(kLogInit, "GPU %d: kernels loaded in %.1f ms", cudaDev, took.count() * 1e3);
  return ncclSuccess;
}

}  // namespace

ncclResult_t CommDataPath::create(ncclComm* comm, std::unique_ptr<CommDataPath>* out) {
  std::unique_ptr<CommDataPath> path(new CommDataPath(comm));
  const std::string& algo = paramString(ParamId::kAlgo);
  const std::string& proto = paramString(ParamId::kProto);
  NCCLCHECK(plan::parseFilter(algo.c_str(), proto.c_str(), &path->filter_));
  ScopedDevice device(comm->cudaDev_);
  RelaxedCaptureMode relaxed;  // the first operation may be captured
  NCCLCHECK(loadKernelsOnce(comm->cudaDev_));
  const bool mixing = comm->config_.graphUsageMode == 2;  // NCCL_GRAPH_MIXING_SUPPORT is folded in (core/config.cc)
  if (comm->shareGroup_ != nullptr && comm->nranks_ > 1) {
    path->group_ = comm->shareGroup_;
    std::lock_guard<std::mutex> lock(path->group_->mutex);
    NCCLCHECK(SharedConnections::of(path->group_.get(), mixing, &path->shared_));
  } else {
    path->order_ = std::make_unique<LaunchOrder>();
    NCCLCHECK(path->order_->init(mixing));
  }
  comm->lastLaunch_.store(path->order().latestEvent());  // for the peer watch (core/peer_watch.h)
  if (comm->nranks_ > 1) {
    path->progress_.init(comm->commHash_, comm->rank_, comm->nranks_);
    comm->progressBoard_.store(path->progress_.board());  // for hang reports (core/hang_watch.h)
  }
  CUDACHECK(cudaEventCreateWithFlags(&path->joinEvent_, cudaEventDisableTiming));
  int major = 0;
  CUDACHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, comm->cudaDev_));
  const bool hopper = major >= 9;
  path->collLaunch_.pdl = hopper && paramInt(ParamId::kLaunchPdl) != 0;
  path->clusters_ = hopper;
  path->plainLaunch_.pdl = path->collLaunch_.pdl;
  int driver = 0;
  CUDACHECK(cudaDriverGetVersion(&driver));
  path->launchEventAttr_ = driver >= 12030;
  *out = std::move(path);
  return ncclSuccess;
}

CommDataPath::~CommDataPath() {
  // Destroy after the work finished: the peers' proxies learn that our connections end in order.
  net_.farewell();
  if (joinEvent_ != nullptr) (void)cudaEventDestroy(joinEvent_);
}

bool CommDataPath::needsRingConnect() const {
  if (connected_ || comm_->nranks_ == 1) return false;
  for (const CollTask& task : queue_) {
    if (task.count > 0) return true;
  }
  return false;
}

bool CommDataPath::needsConnect(ConnectScope scope) const {
  if (needsRingConnect()) return true;
  return scope == ConnectScope::kAll &&
         (needsP2pConnect() || needsP2pCountCheck() || needsRegExchange() || needsP2pRegExchange());
}

// Collectives first, in issue order, then the group's sends and receives in one kernel: every
// rank launches a group's collectives in the same order, and its point-to-point kernel cannot
// block them.
ncclResult_t CommDataPath::launchPending() {
  std::vector<CollTask> tasks;
  tasks.swap(queue_);
  std::vector<RegisteredLaunch> registered;
  registered.swap(registeredQueue_);
  registered.resize(tasks.size());  // no exchange ran: every operation takes the copy path
  std::vector<P2pTask> p2p;
  p2p.swap(p2pQueue_);
  if (tasks.empty() && p2p.empty()) return ncclSuccess;
  if (net_.isOpen()) {
    std::vector<cudaStream_t> streams;
    streams.reserve(tasks.size() + p2p.size());
    for (const CollTask& t : tasks) streams.push_back(t.stream);
    for (const P2pTask& t : p2p) streams.push_back(t.stream);
    NCCLCHECK(net_.beforeLaunch(streams));
  }
  ncclResult_t result = ncclSuccess;
  for (size_t i = 0; i < tasks.size() && result == ncclSuccess; i++) result = launchOne(tasks[i], registered[i]);
  if (result == ncclSuccess && !p2p.empty()) result = launchP2p(p2p);
  // After the launches recorded the latest event (util/launch_counts.h); a failed one counts too:
  // what it launched before failing is covered by that event as well.
  net_.afterLaunch();
  return result;
}

ncclResult_t CommDataPath::launchOne(const CollTask& task, const RegisteredLaunch& registered) {
  if (task.count == 0) return ncclSuccess;
  int nranks = comm_->nranks_;
  INFO(kLogColl, "%s: sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p",
       plan::collName(task.coll), task.sendbuff, task.recvbuff, task.count, static_cast<int>(task.dtype),
       static_cast<int>(task.op), task.root, static_cast<void*>(comm_), nranks, static_cast<void*>(task.stream));
  // Planned before the launch order is touched: a refused plan (a forced algSelection, NCCL_ALGO
  // leaving nothing) leaves no half-made launch behind.
  plan::Decision decision = registered.decision;
  if (nranks > 1 && !registered.direct) NCCLCHECK(planOf(task, modelFor(task), &decision));
  ScopedDevice device(comm_->cudaDev_);
  const std::unique_lock<std::mutex> lock = launchLock();
  LaunchOrder& order = this->order();
  NCCLCHECK(order.before(task.stream));
  const cudaEvent_t launchEvent = task.options.launchEvent;
  if (nranks == 1 && hasUserOp(task)) {
    // One rank with a PreMulSum op: the premultiplication still applies.
    LaunchOptions launch;
    NCCLCHECK(withLaunchEvent(plainLaunch_, launchEvent, task.stream, &launch));
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
    args.comm = device_->devComm();
    args.work = workOf(task, nranks);
    DevWork& work = args.work;
    work.proto = static_cast<uint8_t>(decision.proto);
    work.algo = static_cast<uint8_t>(decision.algo == plan::kAlgoDirect ? DevAlgo::kDirect
                                     : decision.algo == plan::kAlgoTree ? DevAlgo::kTree
                                                                        : DevAlgo::kRing);
    work.nChannels = decision.nChannels;
    work.chunkBytes = decision.chunkBytes;
    work.sharedSteps = stepsInGroupWords() ? 1 : 0;  // see connectOrReuse
    if (order.launchCaptured()) {
      progress_.noteCapture(task, work.nChannels, &work);
    } else {
      progress_.noteLaunch(task, work.nChannels, &work);
    }
    TRACE(kLogTuning, "%s %zu bytes: %s/%s channels %d threads %d chunk %u (model %.1f us), CTA policy %d",
          plan::collName(task.coll), collBytes(task, nranks), plan::algoName(decision.algo),
          plan::protoName(decision.proto), decision.nChannels, decision.nThreads, decision.chunkBytes,
          decision.estimatedUs, task.options.ctaPolicy);
    LaunchOptions launch;
    NCCLCHECK(withLaunchEvent(collLaunch_, launchEvent, task.stream, &launch));
    launch.clusterSize = clusters_ ? decision.clusterSize : 0;
    CUDACHECK(launchCollectiveKernel(args, decision.nThreads, launch, task.stream,
                                     registered.direct ? &registered.peers : nullptr));
    if (registered.direct) NCCLCHECK(noteRegisteredUse(registered, task.stream));
  }
  NCCLCHECK(order.after(task.stream));
  if (!order.launchCaptured()) progress_.noteRecorded();
  return ncclSuccess;
}

ncclResult_t CommDataPath::withLaunchEvent(LaunchOptions base, cudaEvent_t event, cudaStream_t stream,
                                           LaunchOptions* out) const {
  if (event != nullptr && launchEventAttr_) {
    base.completionEvent = event;
  } else if (event != nullptr) {
    CUDACHECK(cudaEventRecord(event, stream));
  }
  *out = base;
  return ncclSuccess;
}

ncclResult_t CommDataPath::waitIdle(const IdleWaitCheck& check) {
  // In a share group: the whole group's launched work. Not under the group's mutex: a member on
  // another thread may have to launch before that work can end (its peers wait for it). Waiting on
  // the communicator's own event is permitted while the caller's thread captures another stream.
  RelaxedCaptureMode relaxed;
  const cudaEvent_t latest = shared_ != nullptr ? shared_->order().latestEvent() : order_->latestEvent();
  if (!check) {
    CUDACHECK(cudaEventSynchronize(latest));
    return ncclSuccess;
  }
  for (;;) {
    const cudaError_t status = cudaEventQuery(latest);
    if (status == cudaSuccess) return ncclSuccess;
    if (status != cudaErrorNotReady) CUDACHECK(status);
    NCCLCHECK(check());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void CommDataPath::signalAbort() {
  net_.noteAbort();
  device_->signalAbort();
  if (shared_ != nullptr) {
    // Its kernels may leave shared connections in the middle of an operation: nobody reuses them.
    std::lock_guard<std::mutex> lock(group_->mutex);
    shared_->forgetAll();
  }
}

}  // namespace braid
