#include "launch/comm_data_path.h"

#include <chrono>
#include <map>
#include <mutex>

#include "core/comm.h"
#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "device/launch_kernel.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// Makes every kernel resident on `cudaDev` (the current GPU) when the first data path of this process
// is created there (see loadKernels in device/launch_kernel.h): no kernel of ours runs on that GPU
// yet, and other data paths' creations wait on the mutex until the loading is done, so none of our
// kernels can be waiting there for a thread stuck behind it. (After a cudaDeviceReset the kernels
// load lazily again.) *arch: what the kernels were compiled for there (with BRAID_LOAD_KERNELS=0,
// asked of one kernel, which that loads).
ncclResult_t loadKernelsOnce(int cudaDev, KernelArch* arch) {
  static std::mutex mutex;
  static std::map<int, KernelArch> known;  // per GPU
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(cudaDev);
  if (it != known.end()) {
    *arch = it->second;
    return ncclSuccess;
  }
  KernelArch found;
  if (paramInt(ParamId::kLoadKernels) == 0) {
    CUDACHECK(queryKernelArch(&found));
  } else {
    const auto start = std::chrono::steady_clock::now();
    CUDACHECK(loadKernels(&found));
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    INFO(kLogInit, "GPU %d: kernels loaded in %.1f ms (compiled for compute_%d, machine code sm_%d)", cudaDev,
         took.count() * 1e3, found.ptx, found.binary);
  }
  known[cudaDev] = found;
  *arch = found;
  return ncclSuccess;
}

// Whether the kernels on `cudaDev` may use the Hopper launch features: the GPU has them and the
// kernels were compiled for them (an Ampere build on a Hopper GPU has no grid dependency control).
ncclResult_t hopperLaunches(int cudaDev, const KernelArch& arch, bool* hopper) {
  int major = 0;
  CUDACHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, cudaDev));
  *hopper = major >= 9 && arch.hopper();
  if (major >= 9 && !arch.hopper()) {
    INFO(kLogInit,
         "GPU %d has compute capability %d.x, but the kernels were compiled for compute_%d (machine code sm_%d): "
         "no thread-block clusters, no programmatic dependent launch",
         cudaDev, major, arch.ptx, arch.binary);
  }
  return ncclSuccess;
}

}  // namespace

CommDataPath::CommDataPath(ncclComm* comm)
    : comm_(comm),
      share_(comm),
      ctx_{comm, device_.get(), &net_, &share_, &watch_, KernelLaunch{}},
      collectives_(ctx_),
      p2p_(ctx_),
      registration_(ctx_, collectives_, p2p_) {}

ncclResult_t CommDataPath::create(ncclComm* comm, std::unique_ptr<CommDataPath>* out) {
  std::unique_ptr<CommDataPath> path(new CommDataPath(comm));
  NCCLCHECK(path->collectives_.init());
  ScopedDevice device(comm->cudaDev_);
  RelaxedCaptureMode relaxed;  // the first operation may be captured
  KernelArch arch;
  NCCLCHECK(loadKernelsOnce(comm->cudaDev_, &arch));
  const bool mixing = comm->config_.graphUsageMode == 2;  // NCCL_GRAPH_MIXING_SUPPORT is folded in (core/config.cc)
  NCCLCHECK(path->share_.init(mixing, path->device_));
  path->watch_.attach(&comm->watch_, path->share_.order().latestEvent(), comm->nranks_ > 1);  // watch/comm_watch.h
  NCCLCHECK(path->p2p_.init());
  bool hopper = false;
  NCCLCHECK(hopperLaunches(comm->cudaDev_, arch, &hopper));
  NCCLCHECK(path->ctx_.launch.init(hopper));
  *out = std::move(path);
  return ncclSuccess;
}

CommDataPath::~CommDataPath() {
  // Destroy after the work finished: the peers' proxies learn that our connections end in order.
  net_.farewell();
}

cudaEvent_t CommDataPath::queuedP2pLaunchEvent() const {
  for (const P2pTask& t : p2pQueue_) {
    if (t.launchEvent != nullptr) return t.launchEvent;
  }
  return nullptr;
}

bool CommDataPath::needsConnect(ConnectScope scope) const {
  if (collectives_.needsConnect(queue_)) return true;
  return scope == ConnectScope::kAll &&
         (p2p_.needsConnect(p2pQueue_) || p2p_.needsCountCheck(p2pQueue_) || registration_.needsExchange(queue_) ||
          registration_.needsP2pExchange(p2pQueue_));
}

ncclResult_t CommDataPath::kernelAbortWord(uint32_t** out) {
  ScopedDevice device(comm_->cudaDev_);
  NCCLCHECK(device_->allocAbortFlag());
  watch_.lendAbortWord(device_->hostAbortFlag());
  // The kernels' word holds 0 or 1: read as unsigned it says the same.
  *out = const_cast<uint32_t*>(reinterpret_cast<const volatile uint32_t*>(device_->deviceAbortFlag()));
  return ncclSuccess;
}

ncclResult_t CommDataPath::openNetwork(net::Network** out) {
  NCCLCHECK(net_.open(comm_));
  *out = net_.network();
  return ncclSuccess;
}

// The rings (collective: only when the group has a collective) and, in scope kAll, the
// point-to-point peers the group's sends and receives name for the first time (pairwise, see
// p2p_connect.cc), then the count check of the sends and receives when it is on (p2p_check.cc),
// then the exchanges of registered buffers (reg_launch.cc for collectives, p2p_reg.cc for sends and
// receives): everything that waits for peers, which ncclGroupEnd runs for all communicators at once.
ncclResult_t CommDataPath::connect(ConnectScope scope) {
  ScopedDevice device(comm_->cudaDev_);
  if (!device.ok()) {
    WARN("rank %d: cannot make GPU %d current to connect its peers", comm_->rank_, comm_->cudaDev_);
    return ncclUnhandledCudaError;
  }
  RelaxedCaptureMode relaxed;  // the operation that connects may be captured
  NCCLCHECK(device_->allocAbortFlag());
  watch_.lendAbortWord(device_->hostAbortFlag());
  if (collectives_.needsConnect(queue_)) NCCLCHECK(collectives_.connect());
  if (scope != ConnectScope::kAll) return ncclSuccess;
  if (p2p_.needsConnect(p2pQueue_)) NCCLCHECK(p2p_.connect(p2pQueue_, collectives_.topology().llOk));
  if (p2p_.needsCountCheck(p2pQueue_)) NCCLCHECK(p2p_.checkCounts(p2pQueue_));
  if (registration_.needsExchange(queue_)) NCCLCHECK(registration_.exchange(queue_));
  if (registration_.needsP2pExchange(p2pQueue_)) NCCLCHECK(registration_.exchangeP2p(&p2pQueue_));
  return ncclSuccess;
}

// Collectives first, in issue order, then the group's sends and receives in one kernel: every
// rank launches a group's collectives in the same order, and its point-to-point kernel cannot
// block them.
ncclResult_t CommDataPath::launchPending() {
  std::vector<CollTask> tasks;
  tasks.swap(queue_);
  const std::vector<RegisteredLaunch> registered = registration_.takePlans(tasks.size());
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
  reg::Registry* registry = &registration_.registry();
  ncclResult_t result = ncclSuccess;
  for (size_t i = 0; i < tasks.size() && result == ncclSuccess; i++) {
    // Planned before the launch order is touched: a refused plan (a forced algSelection, NCCL_ALGO
    // leaving nothing) leaves no half-made launch behind; the operations before it have launched,
    // as on every other rank.
    collectives_.logCall(tasks[i]);
    PlannedColl op;
    result = collectives_.plan(tasks[i], registered[i], &op);
    if (result == ncclSuccess) result = collectives_.launch(op, registry);
  }
  if (result == ncclSuccess && !p2p.empty()) result = p2p_.launch(p2p, registry);
  // After the launches recorded the latest event (util/launch_counts.h); a failed one counts too:
  // what it launched before failing is covered by that event as well.
  net_.afterLaunch();
  return result;
}

void CommDataPath::dropPending() {
  queue_.clear();
  registration_.dropPlans();
  p2pQueue_.clear();
}

void CommDataPath::kernelsAborted() {
  // Its kernels may leave shared connections in the middle of an operation: nobody reuses them.
  share_.forgetPoolOnAbort();
}

}  // namespace braid
