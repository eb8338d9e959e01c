// P2P blocks: GPU memory, shared within a process by pointer and across processes through cuMem
// file descriptors or cudaIpc handles (see memory.h).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/vmm_memory.h"
#include "transport/layout.h"
#include "transport/memory.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::transport {
namespace {

// Destructors cannot fail; what they could not free is worth a line, not an error.
void noteCleanup(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();
  INFO(kLogInit | kLogP2p, "transport cleanup: %s failed: %s", call, cudaGetErrorString(err));
}

class DeviceMallocBlock final : public Block {
 public:
  static ncclResult_t create(size_t bytes, const std::string& what, std::unique_ptr<DeviceMallocBlock>* out) {
    std::unique_ptr<DeviceMallocBlock> block(new DeviceMallocBlock());
    void* ptr = nullptr;
    CUDACHECK_AT(what, cudaMalloc(&ptr, bytes));
    block->devPtr_ = static_cast<char*>(ptr);
    block->bytes_ = bytes;
    *out = std::move(block);
    return ncclSuccess;
  }
  ~DeviceMallocBlock() override {
    if (devPtr_ != nullptr) noteCleanup(cudaFree(devPtr_), "cudaFree");
  }
  Suspension suspension() const override { return Suspension::kCannot; }

 private:
  DeviceMallocBlock() = default;
};

// Runs `copy` on a private non-blocking stream and waits for it: never the legacy default stream,
// which another thread's capture would forbid.
template <typename Copy>
ncclResult_t onPrivateStream(const std::string& what, Copy copy) {
  cudaStream_t stream = nullptr;
  CUDACHECK_AT(what, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaError_t err = copy(stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  (void)cudaStreamDestroy(stream);
  CUDACHECK_AT(what, err);
  return ncclSuccess;
}

// A cuMem allocation mapped into this process: our own (created here) or a peer process's
// (imported). Suspended, it keeps its addresses (cuda/vmm_memory.h); our own keeps its counters in
// host memory meanwhile.
class VmmBlock final : public Block {
 public:
  explicit VmmBlock(std::unique_ptr<VmmMemory> mem) : mem_(std::move(mem)) {
    devPtr_ = mem_->ptr();
    bytes_ = mem_->bytes();
  }
  Suspension suspension() const override { return mem_->owned() ? Suspension::kOwn : Suspension::kImported; }
  bool exported() const override { return mem_->owned() && mem_->exportable(); }
  ncclResult_t exportFd(UniqueFd* out) const override { return mem_->exportFd(out); }

  ncclResult_t suspend(size_t keepBytes) override {
    if (mem_->owned()) {
      kept_.resize(std::min(keepBytes, bytes_));
      NCCLCHECK(onPrivateStream(what(), [&](cudaStream_t stream) {
        return cudaMemcpyAsync(kept_.data(), devPtr_, kept_.size(), cudaMemcpyDeviceToHost, stream);
      }));
    }
    return mem_->unmap();
  }

  ncclResult_t resume(UniqueFd fd) override {
    if (!mem_->owned()) return mem_->remapImported(std::move(fd));
    NCCLCHECK(mem_->remap());
    NCCLCHECK(onPrivateStream(what(), [&](cudaStream_t stream) {
      cudaError_t err = cudaMemsetAsync(devPtr_, 0, bytes_, stream);
      if (err == cudaSuccess && !kept_.empty()) {
        err = cudaMemcpyAsync(devPtr_, kept_.data(), kept_.size(), cudaMemcpyHostToDevice, stream);
      }
      return err;
    }));
    std::vector<char>().swap(kept_);
    return ncclSuccess;
  }

 private:
  std::string what() const { return "P2P block at " + std::to_string(reinterpret_cast<uintptr_t>(devPtr_)); }

  std::unique_ptr<VmmMemory> mem_;
  std::vector<char> kept_;  // while suspended: the first bytes of our own block
};

ncclResult_t vmmAllocBlock(const AllocArgs& args, LogLevel level, std::unique_ptr<Block>* out, UniqueFd* fd) {
  std::unique_ptr<VmmMemory> mem;
  NCCLCHECK(VmmMemory::allocate(args.driver, args.cudaDev, args.bytes, args.crossProcess, args.what, level, &mem));
  if (args.crossProcess) NCCLCHECK(mem->exportFd(fd));
  *out = std::make_unique<VmmBlock>(std::move(mem));
  return ncclSuccess;
}

// A peer's cudaMalloc pointer in this process: nothing to free (the owner frees it).
class BorrowedBlock final : public Block {
 public:
  BorrowedBlock(char* ptr, size_t bytes) {
    devPtr_ = ptr;
    bytes_ = bytes;
  }
  Suspension suspension() const override { return Suspension::kCannot; }
};

// A peer thread's cuMem memory in this process: the owner frees it; this device's access to it is
// given here, and again each time the owner maps the range anew (VmmMemory::remap).
class GrantedBlock final : public Block {
 public:
  static ncclResult_t grant(const CudaDriver* drv, const ImportArgs& args, const ExportInfo& info,
                            std::unique_ptr<Block>* out) {
    std::unique_ptr<GrantedBlock> block(new GrantedBlock(drv, args.cudaDev, args.what));
    block->devPtr_ = reinterpret_cast<char*>(static_cast<uintptr_t>(info.ptr));
    block->bytes_ = info.bytes;
    NCCLCHECK(block->resume(UniqueFd()));
    *out = std::move(block);
    return ncclSuccess;
  }
  Suspension suspension() const override { return Suspension::kGranted; }
  ncclResult_t resume(UniqueFd /*fd*/) override { return grantVmmAccess(drv_, devPtr_, bytes_, cudaDev_, what_); }

 private:
  GrantedBlock(const CudaDriver* drv, int cudaDev, std::string what)
      : drv_(drv), cudaDev_(cudaDev), what_(std::move(what)) {}
  const CudaDriver* drv_;
  int cudaDev_;
  std::string what_;
};

class IpcBlock final : public Block {
 public:
  static ncclResult_t open(const ExportInfo& info, const std::string& what, std::unique_ptr<Block>* out) {
    std::unique_ptr<IpcBlock> block(new IpcBlock());
    cudaIpcMemHandle_t handle;
    std::memcpy(&handle, info.ipcHandle, sizeof(handle));
    void* ptr = nullptr;
    CUDACHECK_AT(what, cudaIpcOpenMemHandle(&ptr, handle, cudaIpcMemLazyEnablePeerAccess));
    block->devPtr_ = static_cast<char*>(ptr);
    block->bytes_ = info.bytes;
    *out = std::move(block);
    return ncclSuccess;
  }
  ~IpcBlock() override {
    if (devPtr_ != nullptr) noteCleanup(cudaIpcCloseMemHandle(devPtr_), "cudaIpcCloseMemHandle");
  }
  Suspension suspension() const override { return Suspension::kCannot; }

 private:
  IpcBlock() = default;
};

// Lets the current device (cudaDev) address peerDev's memory. Peer access belongs to the device's
// context, shared by every thread of the process: another rank or communicator may have enabled it
// already, and nobody disables it.
ncclResult_t enablePeerAccess(int cudaDev, int peerDev, const std::string& what) {
  if (peerDev == cudaDev) return ncclSuccess;
  int canAccess = 0;
  CUDACHECK_AT(what, cudaDeviceCanAccessPeer(&canAccess, cudaDev, peerDev));
  if (canAccess == 0) {
    WARN("%s: GPU %d cannot access GPU %d's memory (no P2P path); use SHM for this pair (NCCL_P2P_DISABLE=1)",
         what.c_str(), cudaDev, peerDev);
    return ncclInvalidUsage;
  }
  cudaError_t err = cudaDeviceEnablePeerAccess(peerDev, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    return ncclSuccess;
  }
  CUDACHECK_AT(what, err);
  return ncclSuccess;
}

ncclResult_t cuMemImport(const ImportArgs& args, const ExportInfo& info, UniqueFd fd, std::unique_ptr<Block>* out) {
  if (args.driver == nullptr || !fd.valid()) {
    WARN("%s: the peer shared a cuMem block but no driver table or file descriptor is here", args.what.c_str());
    return ncclInternalError;
  }
  std::unique_ptr<VmmMemory> mem;
  NCCLCHECK(VmmMemory::import(args.driver, args.cudaDev, info.bytes, std::move(fd), args.what, &mem));
  *out = std::make_unique<VmmBlock>(std::move(mem));
  return ncclSuccess;
}

}  // namespace

const char* mechanismName(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::kRawDevice:
      return "device pointer (same process)";
    case Mechanism::kCuMemFd:
      return "cuMem POSIX file descriptor";
    case Mechanism::kCuMemLocal:
      return "cuMem device pointer (same process)";
    case Mechanism::kCudaIpc:
      return "cudaIpc handle";
    case Mechanism::kRawHost:
      return "pinned host pointer (same process)";
    case Mechanism::kShmFile:
      return "POSIX shared memory";
    case Mechanism::kNone:
      break;
  }
  return "none";
}

ncclResult_t cuMemWanted(const CudaDriver* driver, int cudaDev, bool* wanted) {
  int64_t setting = paramInt(ParamId::kCumemEnable);
  *wanted = false;
  if (setting == 0) return ncclSuccess;
  if (setting > 0) {
    *wanted = true;
    return ncclSuccess;
  }
  std::string what = "cuMem support check on GPU " + std::to_string(cudaDev);
  CUdevice cuDevice = 0;
  CUCHECK_AT(what, driver, cuDeviceGet, &cuDevice, cudaDev);
  int vmm = 0;
  int fdHandles = 0;
  CUCHECK_AT(what, driver, cuDeviceGetAttribute, &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
             cuDevice);
  CUCHECK_AT(what, driver, cuDeviceGetAttribute, &fdHandles,
             CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cuDevice);
  *wanted = vmm != 0 && fdHandles != 0;
  if (!*wanted) {
    INFO(kLogInit | kLogP2p,
         "GPU %d: cuMem not used (VMM %d, POSIX fd handles %d): cudaMalloc, and cudaIpc across processes", cudaDev, vmm,
         fdHandles);
  }
  return ncclSuccess;
}

ncclResult_t p2pAlloc(const AllocArgs& args, cudaStream_t zeroStream, std::unique_ptr<Block>* out, ExportInfo* info,
                      UniqueFd* exportFd) {
  std::memset(info, 0, sizeof(*info));
  std::unique_ptr<Block> block;
  Mechanism mechanism = Mechanism::kRawDevice;
  if (args.useCuMem) {
    if (vmmAllocBlock(args, LogLevel::kInfo, &block, exportFd) == ncclSuccess) {
      mechanism = args.crossProcess ? Mechanism::kCuMemFd : Mechanism::kCuMemLocal;
    } else {
      INFO(kLogInit | kLogP2p, "%s: cuMem allocation failed (above); falling back to cudaMalloc%s", args.what.c_str(),
           args.crossProcess ? " + cudaIpc" : "");
      block.reset();
      exportFd->reset();
    }
  }
  if (block == nullptr) {
    std::unique_ptr<DeviceMallocBlock> plain;
    NCCLCHECK(DeviceMallocBlock::create(alignUp(args.bytes, kBufferAlign), args.what, &plain));
    if (args.crossProcess) {
      mechanism = Mechanism::kCudaIpc;
      cudaIpcMemHandle_t handle;
      CUDACHECK_AT(args.what, cudaIpcGetMemHandle(&handle, plain->devPtr()));
      std::memcpy(info->ipcHandle, &handle, sizeof(handle));
    }
    block = std::move(plain);
  }
  CUDACHECK_AT(args.what, cudaMemsetAsync(block->devPtr(), 0, block->bytes(), zeroStream));
  info->mechanism = static_cast<int32_t>(mechanism);
  info->bytes = block->bytes();
  info->ptr = reinterpret_cast<uintptr_t>(block->devPtr());
  *out = std::move(block);
  return ncclSuccess;
}

ncclResult_t p2pImport(const ImportArgs& args, const ExportInfo& info, UniqueFd fd, std::unique_ptr<Block>* out) {
  switch (static_cast<Mechanism>(info.mechanism)) {
    case Mechanism::kRawDevice:
      NCCLCHECK(enablePeerAccess(args.cudaDev, args.peerCudaDev, args.what));
      *out = std::make_unique<BorrowedBlock>(reinterpret_cast<char*>(static_cast<uintptr_t>(info.ptr)), info.bytes);
      return ncclSuccess;
    case Mechanism::kCuMemLocal:
      return GrantedBlock::grant(args.driver, args, info, out);
    case Mechanism::kCuMemFd:
      return cuMemImport(args, info, std::move(fd), out);
    case Mechanism::kCudaIpc:
      return IpcBlock::open(info, args.what, out);
    default:
      WARN("%s: the peer described its P2P block with mechanism %d, which is not a P2P mechanism", args.what.c_str(),
           info.mechanism);
      return ncclInternalError;
  }
}

}  // namespace braid::transport
