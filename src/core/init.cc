// Communicator creation: argument checks, the rendezvous through the bootstrap, and the exchange
// of per-rank peer information.
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/comm.h"
#include "core/comm_registry.h"
#include "core/group.h"
#include "core/init_internal.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_driver.h"
#include "util/check.h"
#include "util/log.h"
#include "util/thread_guard.h"
#include "watch/board_server.h"

namespace braid {
namespace {

int currentDeviceForLog() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) return -1;
  return dev;
}

}  // namespace

void initLoggingOnce() {
  static std::once_flag once;
  std::call_once(once, [] { logSetDeviceQuery(currentDeviceForLog); });
  logVersionBannerOnce();
}

namespace {

ncclResult_t checkInitArgs(ncclComm_t* newcomm, int nranks, const ncclUniqueId* ids, int nIds, int rank,
                           const char* caller) {
  if (newcomm == nullptr) {
    WARN("%s: newcomm is NULL", caller);
    return ncclInvalidArgument;
  }
  if (nranks < 1) {
    WARN("%s: nranks is %d, must be at least 1", caller, nranks);
    return ncclInvalidArgument;
  }
  if (rank < 0 || rank >= nranks) {
    WARN("%s: rank is %d, must be in [0, %d) for nranks %d", caller, rank, nranks, nranks);
    return ncclInvalidArgument;
  }
  if (ids == nullptr) {
    WARN("%s: commIds is NULL", caller);
    return ncclInvalidArgument;
  }
  if (nIds < 1 || nIds > nranks) {
    WARN("%s: nId is %d, must be in [1, nranks=%d]", caller, nIds, nranks);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

void logInitComplete(const ncclComm* comm, double seconds) {
  const CudaDriver* drv = nullptr;
  int vmm = 0;
  if (cudaDriver(&drv) == ncclSuccess) {
    CUdevice cuDev;
    if (drv->cuDeviceGet(&cuDev, comm->cudaDev_) == CUDA_SUCCESS) {
      drv->cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cuDev);
    }
  }
  char bus[32];
  busIdToString(comm->busId_, bus, sizeof(bus));
  INFO(kLogInit, "comm %p rank %d nRanks %d cudaDev %d busId %s commId 0x%" PRIx64 "%s%s cuMem %s - Init COMPLETE",
       static_cast<const void*>(comm), comm->rank_, comm->nranks_, comm->cudaDev_, bus, comm->commHash_,
       comm->config_.commName.empty() ? "" : " name ", comm->config_.commName.c_str(), vmm ? "yes" : "no");
  INFO(kLogInit, "Init timings: rank %d nranks %d total %.2f ms", comm->rank_, comm->nranks_, seconds * 1e3);
}

// A child shares its parent's connections only if every one of its ranks asked to (splitShare or
// shrinkShare in each rank's config): one rank sharing alone would reuse connections its peers do
// not (launch/shared_connections.h agrees per connection anyway, so this only saves the attempt).
void agreeOnSharing(ncclComm* comm) {
  if (comm->shareGroup_ == nullptr) return;
  for (const PeerInfo& peer : comm->peers_) {
    if (peer.sharesConnections == 0) {
      INFO(kLogInit, "comm %p rank %d: rank %d did not ask to share its parent's connections, so none does",
           static_cast<void*>(comm), comm->rank_, peer.rank);
      comm->shareGroup_.reset();
      return;
    }
  }
}

// The collective part of init: rendezvous, peer exchange, checks. Runs on the caller's thread, or
// on a group thread (then the device must be set first).
ncclResult_t rendezvous(ncclComm* comm, const std::vector<ncclUniqueId>& ids, int computeCap) {
  auto start = std::chrono::steady_clock::now();
  CUDACHECK(cudaSetDevice(comm->cudaDev_));
  NCCLCHECK(Bootstrap::create(ids.data(), static_cast<int>(ids.size()), comm->rank_, comm->nranks_,
                              comm->watch_.abortFlag().hostWord(), &comm->bootstrap_));

  PeerInfo self{};
  self.rank = comm->rank_;
  self.cudaDev = comm->cudaDev_;
  self.computeCap = computeCap;
  self.smCount = comm->smCount_;
  self.busId = comm->busId_;
  self.hostHash = localHostHash();
  self.pidHash = localPidHash();
  self.pidSpace = localPidSpace();
  self.pid = static_cast<int32_t>(::getpid());
  self.boardServer = watch::boardServerContact();
  self.version = kPeerInfoVersion;
  self.sharesConnections = comm->shareGroup_ != nullptr ? 1 : 0;
  comm->peers_.assign(comm->nranks_, PeerInfo{});
  comm->peers_[comm->rank_] = self;
  NCCLCHECK(comm->bootstrap_->allGather(comm->peers_.data(), sizeof(PeerInfo)));
  for (int r = 0; r < comm->nranks_; r++) NCCLCHECK(checkPeerInfo(comm->peers_[r], r, comm->nranks_));
  NCCLCHECK(checkDistinctGpus(comm->peers_));
  agreeOnSharing(comm);

  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  logInitComplete(comm, elapsed.count());
  return ncclSuccess;
}

}  // namespace

ncclResult_t queryLocalGpu(ncclComm* comm, int* computeCap) {
  int dev = -1;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) {
    WARN("no usable CUDA device for this rank: cudaGetDevice failed: %s (%s)", cudaGetErrorString(err),
         cudaGetErrorName(err));
    return ncclUnhandledCudaError;
  }
  char busId[32] = {};
  CUDACHECK(cudaDeviceGetPCIBusId(busId, sizeof(busId), dev));
  int major = 0, minor = 0;
  CUDACHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CUDACHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  CUDACHECK(cudaDeviceGetAttribute(&comm->smCount_, cudaDevAttrMultiProcessorCount, dev));
  comm->cudaDev_ = dev;
  comm->busId_ = busIdToInt(busId);
  *computeCap = major * 10 + minor;
  return ncclSuccess;
}

namespace {

// The communicator's watch (watch/comm_watch.h), started before the communicator says it is ready.
void startWatch(ncclComm* comm) {
  watch::CommWatch::Subject subject;
  subject.handle = comm;
  subject.commHash = comm->commHash_;
  subject.rank = comm->rank_;
  subject.cudaDev = comm->cudaDev_;
  subject.peers.reserve(comm->peers_.size());
  for (const PeerInfo& peer : comm->peers_) subject.peers.push_back(peerProcessOf(peer));
  subject.ready = [comm] { return comm->state_.load() == CommState::kReady; };
  subject.asyncError = &comm->asyncError_;
  comm->watch_.start(std::move(subject));
}

}  // namespace

ncclResult_t finishInit(ncclComm* comm, const std::vector<ncclUniqueId>& ids, int computeCap) {
  ncclResult_t result = rendezvous(comm, ids, computeCap);
  if (result == ncclSuccess) {
    startWatch(comm);
    comm->state_ = CommState::kReady;
  } else {
    comm->bootstrap_.reset();
    comm->state_ = CommState::kFailed;
  }
  comm->asyncError_ = result;
  return result;
}

ncclResult_t startInBackground(ncclComm* comm, std::function<ncclResult_t()> job) {
  auto body = [comm, job = std::move(job)] {
    const ncclResult_t result = guardThread("nonblocking init", job);
    if (result != ncclSuccess && comm->state_.load() == CommState::kInitializing) {
      comm->state_ = CommState::kFailed;
      comm->asyncError_ = result;
    }
  };
  // Without a thread to spare the call blocks, but the communicator ends in a state
  // ncclCommGetAsyncError reports instead of initializing forever.
  comm->background_.startCreation("nonblocking communicator creation", body);
  return ncclInProgress;
}

ncclResult_t commGetUniqueId(ncclUniqueId* id) {
  initLoggingOnce();
  if (id == nullptr) {
    WARN("ncclGetUniqueId: uniqueId is NULL");
    return ncclInvalidArgument;
  }
  return bootstrapGetUniqueId(id);
}

ncclResult_t commInitRank(ncclComm_t* newcomm, int nranks, const ncclUniqueId* ids, int nIds, int rank,
                          const ncclConfig_t* config, const char* caller) {
  initLoggingOnce();
  NCCLCHECK(checkInitArgs(newcomm, nranks, ids, nIds, rank, caller));
  *newcomm = nullptr;
  CommConfig parsed;
  NCCLCHECK(parseConfig(config, caller, &parsed));
  return commInitRankParsed(newcomm, nranks, ids, nIds, rank, parsed, caller);
}

ncclResult_t commInitRankParsed(ncclComm_t* newcomm, int nranks, const ncclUniqueId* ids, int nIds, int rank,
                                const CommConfig& parsed, const char* caller) {
  NCCLCHECK(checkInitArgs(newcomm, nranks, ids, nIds, rank, caller));
  *newcomm = nullptr;
  auto comm = std::make_unique<ncclComm>();
  comm->rank_ = rank;
  comm->nranks_ = nranks;
  comm->config_ = parsed;
  comm->commHash_ = hashBytes(&ids[0], sizeof(ncclUniqueId));
  int computeCap = 0;
  NCCLCHECK(queryLocalGpu(comm.get(), &computeCap));

  std::vector<ncclUniqueId> idCopies(ids, ids + nIds);
  ncclComm* raw = comm.release();
  commRegistryAdd(raw);
  *newcomm = raw;

  GroupContext& group = GroupContext::current();
  if (group.active()) {
    // The caller gets the handle now; the rendezvous completes at the outermost ncclGroupEnd.
    group.deferInit(
        raw, [raw, idCopies, computeCap] { return finishInit(raw, idCopies, computeCap); },
        [raw] { raw->watch_.abortFlag().raise(watch::kAbortHostWaits); });
    return ncclSuccess;
  }
  if (parsed.blocking == 0) {
    return startInBackground(raw, [raw, idCopies, computeCap] { return finishInit(raw, idCopies, computeCap); });
  }
  ncclResult_t result = finishInit(raw, idCopies, computeCap);
  if (result != ncclSuccess) {
    // A failed blocking init leaves nothing behind.
    freeComm(raw);
    *newcomm = nullptr;
  }
  return result;
}

ncclResult_t commInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  initLoggingOnce();
  if (comms == nullptr) {
    WARN("ncclCommInitAll: comm is NULL");
    return ncclInvalidArgument;
  }
  if (ndev < 1) {
    WARN("ncclCommInitAll: ndev is %d, must be at least 1", ndev);
    return ncclInvalidArgument;
  }
  int deviceCount = 0;
  CUDACHECK(cudaGetDeviceCount(&deviceCount));
  std::vector<int> devices(ndev);
  for (int i = 0; i < ndev; i++) {
    devices[i] = devlist ? devlist[i] : i;
    if (devices[i] < 0 || devices[i] >= deviceCount) {
      WARN("ncclCommInitAll: devlist[%d] is %d, but this process sees %d CUDA devices", i, devices[i], deviceCount);
      return ncclInvalidArgument;
    }
  }
  int savedDevice = 0;
  CUDACHECK(cudaGetDevice(&savedDevice));
  ncclUniqueId id;
  NCCLCHECK(bootstrapGetUniqueId(&id));

  GroupContext& group = GroupContext::current();
  group.start();
  ncclResult_t result = ncclSuccess;
  for (int i = 0; i < ndev && result == ncclSuccess; i++) {
    comms[i] = nullptr;
    if (cudaSetDevice(devices[i]) != cudaSuccess) {
      WARN("ncclCommInitAll: cannot select device %d", devices[i]);
      result = ncclUnhandledCudaError;
      break;
    }
    result = commInitRank(&comms[i], ndev, &id, 1, i, nullptr, "ncclCommInitAll");
  }
  // The group must be closed even after a failure, or this thread stays inside it; ranks created
  // before the failure are aborted first so that they do not wait for the ones that never came.
  if (result != ncclSuccess) {
    for (int i = 0; i < ndev; i++) {
      if (comms[i] != nullptr) comms[i]->watch_.abortFlag().raise(watch::kAbortHostWaits);
    }
  }
  ncclResult_t groupResult = group.end();
  if (result == ncclSuccess) result = groupResult;
  cudaSetDevice(savedDevice);
  if (result != ncclSuccess) {
    for (int i = 0; i < ndev; i++) {
      if (comms[i] != nullptr) freeComm(comms[i]);
      comms[i] = nullptr;
    }
  }
  return result;
}

}  // namespace braid
