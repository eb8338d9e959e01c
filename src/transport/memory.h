// The blocks of memory behind connections: allocated by their owner (and zeroed), described in an
// ExportInfo that travels to the peer through the bootstrap, and mapped there. Each Block frees or
// unmaps what it holds when destroyed, without talking to anyone.
//
// P2P (GPU memory):
//   same process        cuMem (NCCL_CUMEM_ENABLE, as across processes); the peer gets the raw pointer
//                       and gives its own device access to the mapping. Without cuMem: cudaMalloc,
//                       and the importer enables peer access, once per process and device pair,
//                       never disabled (process-wide state that other communicators may rely on).
//   other process       cuMem with a POSIX file descriptor handle (NCCL_CUMEM_ENABLE 1 or -2 when the
//                       device supports it); the fd goes to the peer over a Unix socket (uds.h). If
//                       cuMem is off or its allocation fails: cudaMalloc + cudaIpcGetMemHandle.
// SHM (pinned host memory, mapped into the GPU):
//   same process        cudaHostAlloc(Portable | Mapped); the peer gets the raw pointer
//   other process       POSIX shared memory (shm_segment.h) + cudaHostRegister(Portable | Mapped)
//
// Suspension (ncclCommSuspend, transport/suspend.h): P2P blocks made through cuMem let their device
// memory go and keep their addresses; everything else stays as it is (host memory is not the GPU
// memory suspension is for), or, for cudaMalloc and cudaIpc blocks, makes suspension impossible.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cuda/cuda_driver.h"
#include "transport/uds.h"

namespace braid::transport {

enum class Mechanism : int32_t {
  kNone = 0,
  kRawDevice = 1,   // same process, cudaMalloc
  kCuMemFd = 2,     // other process, cuMem
  kCudaIpc = 3,     // other process, cudaMalloc
  kRawHost = 4,     // same process, pinned host memory
  kShmFile = 5,     // other process, shared host memory
  kCuMemLocal = 6,  // same process, cuMem: the importer grants its device access
};
const char* mechanismName(Mechanism mechanism);

// What a peer needs to map a block. Plain bytes: it crosses process boundaries.
struct ExportInfo {
  int32_t mechanism;  // Mechanism
  int32_t pad;
  uint64_t bytes;      // the whole allocation
  uint64_t ptr;        // kRawDevice, kRawHost: the address in the owner's process
  char ipcHandle[64];  // kCudaIpc: cudaIpcMemHandle_t
  char shmName[96];    // kShmFile
};
static_assert(sizeof(cudaIpcMemHandle_t) == 64, "cudaIpcMemHandle_t must fit ExportInfo::ipcHandle");

// What suspending a block means (ncclCommSuspend).
enum class Suspension : int {
  kStays,     // host memory, or nothing of this rank's: nothing to do
  kOwn,       // this rank's cuMem device memory: released and made again at the same addresses
  kImported,  // a peer process's cuMem memory: unmapped, and mapped again from the peer's new descriptor
  kGranted,   // a peer thread's cuMem memory: access is given again once the peer has remade it
  kCannot,    // cudaMalloc or cudaIpc memory: its addresses cannot outlive it
};

// Memory this rank's GPU can address.
class Block {
 public:
  virtual ~Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  char* devPtr() const { return devPtr_; }
  size_t bytes() const { return bytes_; }

  virtual Suspension suspension() const { return Suspension::kStays; }
  // kOwn: copies the first `keepBytes` (the FIFO counters, which both ends count on) to host memory,
  // then releases the device memory. kImported: unmaps it. Others: nothing.
  [[nodiscard]] virtual ncclResult_t suspend(size_t /*keepBytes*/) { return ncclSuccess; }
  // kOwn: new device memory at the same addresses, zeroed, the kept bytes copied back (`fd` unused).
  // kImported: maps the peer's new memory named by `fd`. kGranted: gives this device access again.
  [[nodiscard]] virtual ncclResult_t resume(UniqueFd /*fd*/) { return ncclSuccess; }
  // kOwn: whether a peer process maps it (through exportFd: a descriptor of the memory now).
  virtual bool exported() const { return false; }
  [[nodiscard]] virtual ncclResult_t exportFd(UniqueFd* /*out*/) const { return ncclInternalError; }

 protected:
  Block() = default;
  char* devPtr_ = nullptr;
  size_t bytes_ = 0;
};

struct AllocArgs {
  const CudaDriver* driver;  // may be null when cuMem is not used
  int cudaDev;               // the current device, where P2P memory goes
  size_t bytes;              // at least this much; rounded up to the mechanism's granularity
  bool crossProcess;         // the peer is another process
  bool useCuMem;             // P2P: try cuMem first (exported as a file descriptor across processes)
  std::string shmName;       // SHM across processes: the segment to create
  std::string what;          // "rank 0 -> peer rank 1, channels 0,1 (P2P recv)": leads every WARN
};

// Allocates a zeroed block (device memory is cleared with cudaMemsetAsync on `zeroStream`: the
// caller synchronizes it before anyone else may see the memory) and describes it in *info. For
// kCuMemFd, *exportFd is the descriptor to pass to the peer.
[[nodiscard]] ncclResult_t p2pAlloc(const AllocArgs& args, cudaStream_t zeroStream, std::unique_ptr<Block>* out,
                                    ExportInfo* info, UniqueFd* exportFd);
[[nodiscard]] ncclResult_t shmAlloc(const AllocArgs& args, std::unique_ptr<Block>* out, ExportInfo* info);

struct ImportArgs {
  const CudaDriver* driver;
  int cudaDev;      // the current device, which must be able to address the block
  int peerCudaDev;  // the owner's device (same process: for peer access)
  std::string what;
};

// Maps the peer's block described by `info` (for kCuMemFd, `fd` is the descriptor the peer passed;
// it is closed here).
[[nodiscard]] ncclResult_t p2pImport(const ImportArgs& args, const ExportInfo& info, UniqueFd fd,
                                     std::unique_ptr<Block>* out);
[[nodiscard]] ncclResult_t shmImport(const ImportArgs& args, const ExportInfo& info, std::unique_ptr<Block>* out);

// NCCL_CUMEM_ENABLE (1 on, 0 off, -2 automatic: on when the device supports virtual memory
// management and POSIX file descriptor handles) for `cudaDev`. Logs the decision once at INFO.
[[nodiscard]] ncclResult_t cuMemWanted(const CudaDriver* driver, int cudaDev, bool* wanted);

}  // namespace braid::transport
