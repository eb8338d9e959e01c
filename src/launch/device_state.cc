#include "launch/device_state.h"

#include <cuda_runtime.h>

#include "cuda/cuda_check.h"

namespace braid {

DeviceState::~DeviceState() {
  // cudaFree synchronizes with the device; by now finalize or abort made every kernel finish.
  if (devComm_ != nullptr) (void)cudaFree(devComm_);
  if (ringRanks_ != nullptr) (void)cudaFree(ringRanks_);
  if (p2pPeers_ != nullptr) (void)cudaFree(p2pPeers_);
  if (hostAbortFlag_ != nullptr) (void)cudaFreeHost(hostAbortFlag_);
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
  CUDACHECK(cudaMalloc(&ranks, flat.size() * sizeof(int)));
  ringRanks_ = static_cast<int*>(ranks);
  CUDACHECK(cudaMemcpy(ringRanks_, flat.data(), flat.size() * sizeof(int), cudaMemcpyHostToDevice));
  for (size_t c = 0; c < nChannels; c++) comm.channels[c].ringRanks = ringRanks_ + c * nranks;
  comm.abortFlag = deviceAbortFlag_;
  void* dev = nullptr;
  CUDACHECK(cudaMalloc(&dev, sizeof(DevComm)));
  devComm_ = static_cast<DevComm*>(dev);
  CUDACHECK(cudaMemcpy(devComm_, &comm, sizeof(DevComm), cudaMemcpyHostToDevice));
  return ncclSuccess;
}

ncclResult_t DeviceState::allocP2pPeers(int nranks) {
  if (p2pPeers_ != nullptr) return ncclSuccess;
  void* dev = nullptr;
  CUDACHECK(cudaMalloc(&dev, sizeof(DevP2pPeer) * static_cast<size_t>(nranks)));
  p2pPeers_ = static_cast<DevP2pPeer*>(dev);
  CUDACHECK(cudaMemset(p2pPeers_, 0, sizeof(DevP2pPeer) * static_cast<size_t>(nranks)));
  return ncclSuccess;
}

ncclResult_t DeviceState::uploadP2pPeer(int peer, const DevP2pPeer& entry) {
  CUDACHECK(cudaMemcpy(p2pPeers_ + peer, &entry, sizeof(entry), cudaMemcpyHostToDevice));
  return ncclSuccess;
}

void DeviceState::signalAbort() {
  if (hostAbortFlag_ == nullptr) return;
  // The kernels read it through the mapping with volatile loads; a release store is enough.
  __atomic_store_n(hostAbortFlag_, 1, __ATOMIC_RELEASE);
}

}  // namespace braid
