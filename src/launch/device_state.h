// Device-side state of a communicator's data path: the DevComm the kernels read (device memory),
// the ring orders its channels point to, the point-to-point connections of every peer, and the
// word in host-mapped memory that every kernel wait loop polls (the communicator's abort flag
// writes it: watch/abort_flag.h). Freed
// when the data path goes. Uploads go through a private non-blocking stream, never the legacy
// default stream: they may happen while the user's stream is being captured (see capture_mode.h).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/vmm_memory.h"
#include "device/dev_types.h"

namespace braid {

class DeviceState {
 public:
  DeviceState() = default;
  ~DeviceState();
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  // Allocates the host-mapped abort flag (the current device must be the communicator's), which the
  // communicator's abort flag writes (watch/abort_flag.h: lent to it, never written here).
  [[nodiscard]] ncclResult_t allocAbortFlag();
  // Allocates the DevComm before its connections are made: a share group may be offered the
  // addresses of their step fields (launch/shared_connections.h).
  [[nodiscard]] ncclResult_t allocComm();
  // Copies `comm` to the DevComm (allocComm first), with channels[c].ringRanks pointing at a device
  // copy of rings[c]. comm.abortFlag is set here.
  [[nodiscard]] ncclResult_t upload(DevComm comm, const std::vector<std::vector<int>>& rings);

  // Point-to-point connections: a zeroed device array of one DevP2pPeer per rank, allocated once;
  // a peer's entry is written when it connects (no kernel uses that entry before). With it, the
  // zeroed counters of balanced operations (DevP2pArgs::tickets): plan::kP2pBalancedOpsPerPeer per
  // peer; and the zeroed in-place guards (DevP2pArgs::guards), kMaxP2pChannels per peer.
  [[nodiscard]] ncclResult_t allocP2pPeers(int nranks);
  [[nodiscard]] ncclResult_t uploadP2pPeer(int peer, const DevP2pPeer& entry);
  DevP2pPeer* p2pPeers() const { return p2pPeers_; }  // indexed by peer rank
  uint64_t* p2pTickets() const { return p2pTickets_; }
  uint64_t* p2pGuards() const { return p2pGuards_; }

  // Memory for staged sends (plan/p2p_stage.h) of at least `bytes`, made at the first need and
  // replaced by a larger one when too small (rounded up by at most an eighth). A replaced buffer is
  // kept until the communicator goes: kernels and copies captured in CUDA graphs may still use it,
  // and freeing it now would wait for the whole GPU. cuMem memory where the device has it, so that
  // it can be suspended. The current device must be the communicator's.
  [[nodiscard]] ncclResult_t stageBuffer(uint64_t bytes, char** out);

  // Suspension (ncclCommSuspend): the staging memory goes and comes back at the same addresses
  // (its contents do not matter between operations); the rest, a few KiB, stays.
  bool suspendable(std::string* why) const;
  [[nodiscard]] ncclResult_t suspend();
  [[nodiscard]] ncclResult_t resume();
  uint64_t suspendableBytes() const;
  uint64_t persistentBytes() const { return persistentBytes_; }

  DevComm* devComm() const { return devComm_; }
  const volatile int* deviceAbortFlag() const { return deviceAbortFlag_; }
  int* hostAbortFlag() const { return hostAbortFlag_; }

 private:
  // Staging memory: cuMem (vmm) where the device has it, else cudaMalloc (plain).
  struct Stage {
    std::unique_ptr<VmmMemory> vmm;
    char* plain = nullptr;
    uint64_t bytes = 0;
    char* ptr() const { return vmm != nullptr ? vmm->ptr() : plain; }
  };

  [[nodiscard]] ncclResult_t copyToDevice(void* dst, const void* src, size_t bytes);
  [[nodiscard]] ncclResult_t uploadStream(cudaStream_t* out);
  [[nodiscard]] ncclResult_t deviceMalloc(size_t bytes, void** out);
  [[nodiscard]] ncclResult_t allocStage(uint64_t bytes, Stage* out);

  cudaStream_t stream_ = nullptr;
  int* hostAbortFlag_ = nullptr;  // cudaHostAlloc'd, mapped
  volatile int* deviceAbortFlag_ = nullptr;
  DevComm* devComm_ = nullptr;
  int* ringRanks_ = nullptr;
  DevP2pPeer* p2pPeers_ = nullptr;
  uint64_t* p2pTickets_ = nullptr;
  uint64_t* p2pGuards_ = nullptr;
  std::vector<Stage> stages_;     // the last one is in use; the others are kept for captured graphs
  uint64_t persistentBytes_ = 0;  // cudaMalloc memory: DevComm, ring orders, peers, counters
};

}  // namespace braid
