#include "launch/device_state.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "plan/p2p_plan.h"
#include "transport/memory.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {

DeviceState::~DeviceState() {
  // cudaFree synchronizes with the device; by now finalize or abort made every kernel finish.
  if (devComm_ != nullptr) (void)cudaFree(devComm_);
  if (ringRanks_ != nullptr) (void)cudaFree(ringRanks_);
  if (p2pPeers_ != nullptr) (void)cudaFree(p2pPeers_);
  if (p2pTickets_ != nullptr) (void)cudaFree(p2pTickets_);
  if (p2pGuards_ != nullptr) (void)cudaFree(p2pGuards_);
  for (Stage& stage : stages_) {
    if (stage.plain != nullptr) (void)cudaFree(stage.plain);
  }
  stages_.clear();  // the cuMem ones free themselves
  if (hostAbortFlag_ != nullptr) (void)cudaFreeHost(hostAbortFlag_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

ncclResult_t DeviceState::uploadStream(cudaStream_t* out) {
  if (stream_ == nullptr) CUDACHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  *out = stream_;
  return ncclSuccess;
}

ncclResult_t DeviceState::deviceMalloc(size_t bytes, void** out) {
  CUDACHECK(cudaMalloc(out, bytes));
  persistentBytes_ += bytes;
  return ncclSuccess;
}

ncclResult_t DeviceState::copyToDevice(void* dst, const void* src, size_t bytes) {
  cudaStream_t stream = nullptr;
  NCCLCHECK(uploadStream(&stream));
  CUDACHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  return ncclSuccess;
}

ncclResult_t DeviceState::allocAbortFlag() {
  if (hostAbortFlag_ != nullptr) return ncclSuccess;
  void* host = nullptr;
  CUDACHECK(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  hostAbortFlag_ = static_cast<int*>(host);
  *hostAbortFlag_ = 0;
  void* dev = nullptr;
  CUDACHECK(cudaHostGetDevicePointer(&dev, host, 0));
  deviceAbortFlag_ = static_cast<volatile int*>(dev);
  return ncclSuccess;
}

ncclResult_t DeviceState::upload(DevComm comm, const std::vector<std::vector<int>>& rings) {
  size_t nranks = static_cast<size_t>(comm.nranks);
  size_t nChannels = rings.size();
  std::vector<int> flat;
  flat.reserve(nranks * nChannels);
  for (const std::vector<int>& ring : rings) flat.insert(flat.end(), ring.begin(), ring.end());
  void* ranks = nullptr;
  NCCLCHECK(deviceMalloc(flat.size() * sizeof(int), &ranks));
  ringRanks_ = static_cast<int*>(ranks);
  NCCLCHECK(copyToDevice(ringRanks_, flat.data(), flat.size() * sizeof(int)));
  for (size_t c = 0; c < nChannels; c++) comm.channels[c].ringRanks = ringRanks_ + c * nranks;
  comm.abortFlag = deviceAbortFlag_;
  NCCLCHECK(allocComm());
  NCCLCHECK(copyToDevice(devComm_, &comm, sizeof(DevComm)));
  return ncclSuccess;
}

ncclResult_t DeviceState::allocComm() {
  if (devComm_ != nullptr) return ncclSuccess;
  void* dev = nullptr;
  NCCLCHECK(deviceMalloc(sizeof(DevComm), &dev));
  devComm_ = static_cast<DevComm*>(dev);
  return ncclSuccess;
}

ncclResult_t DeviceState::allocP2pPeers(int nranks) {
  if (p2pPeers_ != nullptr) return ncclSuccess;
  const size_t peersBytes = sizeof(DevP2pPeer) * static_cast<size_t>(nranks);
  const size_t ticketsBytes = sizeof(uint64_t) * plan::kP2pBalancedOpsPerPeer * static_cast<size_t>(nranks);
  void* dev = nullptr;
  NCCLCHECK(deviceMalloc(peersBytes, &dev));
  p2pPeers_ = static_cast<DevP2pPeer*>(dev);
  NCCLCHECK(deviceMalloc(ticketsBytes, &dev));
  p2pTickets_ = static_cast<uint64_t*>(dev);
  const size_t guardsBytes = sizeof(uint64_t) * kMaxP2pChannels * static_cast<size_t>(nranks);
  NCCLCHECK(deviceMalloc(guardsBytes, &dev));
  p2pGuards_ = static_cast<uint64_t*>(dev);
  cudaStream_t stream = nullptr;
  NCCLCHECK(uploadStream(&stream));
  CUDACHECK(cudaMemsetAsync(p2pPeers_, 0, peersBytes, stream));
  CUDACHECK(cudaMemsetAsync(p2pTickets_, 0, ticketsBytes, stream));
  CUDACHECK(cudaMemsetAsync(p2pGuards_, 0, guardsBytes, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  return ncclSuccess;
}

ncclResult_t DeviceState::uploadP2pPeer(int peer, const DevP2pPeer& entry) {
  return copyToDevice(p2pPeers_ + peer, &entry, sizeof(entry));
}

ncclResult_t DeviceState::allocStage(uint64_t bytes, Stage* out) {
  int cudaDev = 0;
  CUDACHECK(cudaGetDevice(&cudaDev));
  const CudaDriver* drv = nullptr;
  bool cuMem = false;
  if (cudaDriver(&drv) == ncclSuccess) NCCLCHECK(transport::cuMemWanted(drv, cudaDev, &cuMem));
  const std::string what = "staging memory for in-place AlltoAll on GPU " + std::to_string(cudaDev);
  if (cuMem && VmmMemory::allocate(drv, cudaDev, bytes, false, what, LogLevel::kInfo, &out->vmm) == ncclSuccess) {
    out->bytes = out->vmm->bytes();
  } else {
    out->vmm.reset();
    void* dev = nullptr;
    CUDACHECK(cudaMalloc(&dev, bytes));
    out->plain = static_cast<char*>(dev);
    out->bytes = bytes;
    persistentBytes_ += bytes;
  }
  INFO(kLogAlloc, "%s: %llu bytes at %p (%s)", what.c_str(), static_cast<unsigned long long>(out->bytes),
       static_cast<void*>(out->ptr()), out->vmm != nullptr ? "cuMem" : "cudaMalloc");
  return ncclSuccess;
}

ncclResult_t DeviceState::stageBuffer(uint64_t bytes, char** out) {
  if (stages_.empty() || bytes > stages_.back().bytes) {
    // Whole eighths of the next power of two (at least 1 MiB): a sweep of growing sizes replaces it
    // a few times only, and at most an eighth of it goes unused.
    uint64_t power = uint64_t{1} << 20;
    while (power < bytes) power *= 2;
    const uint64_t granule = std::max<uint64_t>(uint64_t{1} << 20, power / 8);
    const uint64_t size = (bytes + granule - 1) / granule * granule;
    RelaxedCaptureMode relaxed;  // the operation that needs it may be captured
    Stage stage;
    NCCLCHECK(allocStage(size, &stage));
    stages_.push_back(std::move(stage));
  }
  *out = stages_.back().ptr();
  return ncclSuccess;
}

bool DeviceState::suspendable(std::string* why) const {
  for (const Stage& stage : stages_) {
    if (stage.vmm != nullptr) continue;
    *why = "its staging memory for in-place AlltoAll is cudaMalloc memory (cuMem is off)";
    return false;
  }
  return true;
}

ncclResult_t DeviceState::suspend() {
  for (Stage& stage : stages_) NCCLCHECK(stage.vmm->unmap());
  return ncclSuccess;
}

ncclResult_t DeviceState::resume() {
  for (Stage& stage : stages_) NCCLCHECK(stage.vmm->remap());
  return ncclSuccess;
}

uint64_t DeviceState::suspendableBytes() const {
  uint64_t bytes = 0;
  for (const Stage& stage : stages_) bytes += stage.vmm != nullptr ? stage.bytes : 0;
  return bytes;
}

}  // namespace braid
