// P2P blocks: GPU memory, shared within a process by pointer and across processes through cuMem
// file descriptors or cudaIpc handles (see memory.h).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "cuda/cuda_check.h"
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

// A driver call whose failure is logged at `level`: WARN when it fails the operation, INFO when
// the caller falls back to another mechanism.
ncclResult_t cuCall(const CudaDriver* drv, CUresult res, const char* fn, const std::string& what, LogLevel level) {
  if (res == CUDA_SUCCESS) return ncclSuccess;
  const char* text = "unknown error";
  drv->cuGetErrorString(res, &text);
  uint64_t subsys = level == LogLevel::kWarn ? kLogAll : (kLogInit | kLogP2p);
  logMessage(level, subsys, __FILE__, __LINE__, "%s: CUDA driver call %s failed: %s (%d)", what.c_str(), fn, text,
             static_cast<int>(res));
  return ncclUnhandledCudaError;
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

 private:
  DeviceMallocBlock() = default;
};

// A cuMem allocation mapped into this process: our own (created here) or a peer's (imported).
// Teardown order: unmap, free the address range, release the handle; the physical memory goes away
// when the last process releases it, so a peer that died or left does not matter.
class CuMemBlock final : public Block {
 public:
  explicit CuMemBlock(const CudaDriver* drv) : drv_(drv) {}
  ~CuMemBlock() override {
    CUdeviceptr va = reinterpret_cast<CUdeviceptr>(devPtr_);
    if (mapped_) noteCu(drv_->cuMemUnmap(va, bytes_), "cuMemUnmap");
    if (reserved_) noteCu(drv_->cuMemAddressFree(va, bytes_), "cuMemAddressFree");
    if (hasHandle_) noteCu(drv_->cuMemRelease(handle_), "cuMemRelease");
  }

  CUmemGenericAllocationHandle handle_ = 0;
  bool hasHandle_ = false;

  // Reserves an address range of `bytes`, maps the handle there and gives `cuDevice` read/write
  // access to it.
  ncclResult_t map(size_t bytes, size_t alignment, CUdevice cuDevice, const std::string& what, LogLevel level) {
    CUdeviceptr va = 0;
    NCCLCHECK(cuCall(drv_, drv_->cuMemAddressReserve(&va, bytes, alignment, 0, 0), "cuMemAddressReserve", what, level));
    devPtr_ = reinterpret_cast<char*>(va);
    bytes_ = bytes;
    reserved_ = true;
    NCCLCHECK(cuCall(drv_, drv_->cuMemMap(va, bytes, 0, handle_, 0), "cuMemMap", what, level));
    mapped_ = true;
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = cuDevice;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return cuCall(drv_, drv_->cuMemSetAccess(va, bytes, &access, 1), "cuMemSetAccess", what, level);
  }

 private:
  void noteCu(CUresult res, const char* call) const {
    if (res == CUDA_SUCCESS) return;
    const char* text = "unknown error";
    drv_->cuGetErrorString(res, &text);
    INFO(kLogInit | kLogP2p, "transport cleanup: %s failed: %s", call, text);
  }

  const CudaDriver* drv_;
  bool reserved_ = false;
  bool mapped_ = false;
};

ncclResult_t cuDeviceOf(const CudaDriver* drv, int cudaDev, const std::string& what, LogLevel level, CUdevice* out) {
  return cuCall(drv, drv->cuDeviceGet(out, cudaDev), "cuDeviceGet", what, level);
}

// A new cuMem block on args.cudaDev, exportable as a POSIX fd. Failures are logged at `level`.
ncclResult_t cuMemAllocBlock(const AllocArgs& args, LogLevel level, std::unique_ptr<Block>* out, UniqueFd* fd) {
  const CudaDriver* drv = args.driver;
  CUdevice cuDevice = 0;
  NCCLCHECK(cuDeviceOf(drv, args.cudaDev, args.what, level, &cuDevice));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = cuDevice;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  NCCLCHECK(cuCall(drv, drv->cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                   "cuMemGetAllocationGranularity", args.what, level));
  size_t bytes = alignUp(args.bytes, granularity);
  auto block = std::make_unique<CuMemBlock>(drv);
  NCCLCHECK(cuCall(drv, drv->cuMemCreate(&block->handle_, bytes, &prop, 0), "cuMemCreate", args.what, level));
  block->hasHandle_ = true;
  NCCLCHECK(block->map(bytes, granularity, cuDevice, args.what, level));
  int shareable = -1;
  NCCLCHECK(cuCall(
      drv, drv->cuMemExportToShareableHandle(&shareable, block->handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
      "cuMemExportToShareableHandle", args.what, level));
  fd->reset(shareable);
  *out = std::move(block);
  return ncclSuccess;
}

// A peer's pointer in this process: nothing to free (the owner frees it).
class BorrowedBlock final : public Block {
 public:
  BorrowedBlock(char* ptr, size_t bytes) {
    devPtr_ = ptr;
    bytes_ = bytes;
  }
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
  const CudaDriver* drv = args.driver;
  if (drv == nullptr || !fd.valid()) {
    WARN("%s: the peer shared a cuMem block but no driver table or file descriptor is here", args.what.c_str());
    return ncclInternalError;
  }
  CUdevice cuDevice = 0;
  NCCLCHECK(cuDeviceOf(drv, args.cudaDev, args.what, LogLevel::kWarn, &cuDevice));
  auto block = std::make_unique<CuMemBlock>(drv);
  void* shareable = reinterpret_cast<void*>(static_cast<uintptr_t>(fd.get()));
  NCCLCHECK(cuCall(
      drv, drv->cuMemImportFromShareableHandle(&block->handle_, shareable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
      "cuMemImportFromShareableHandle", args.what, LogLevel::kWarn));
  block->hasHandle_ = true;
  fd.reset();  // the handle holds the memory now
  // The exporter rounded the size to its granularity; alignment 0 asks for the default one.
  NCCLCHECK(block->map(info.bytes, 0, cuDevice, args.what, LogLevel::kWarn));
  *out = std::move(block);
  return ncclSuccess;
}

}  // namespace

const char* mechanismName(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::kRawDevice:
      return "device pointer (same process)";
    case Mechanism::kCuMemFd:
      return "cuMem POSIX file descriptor";
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
  NCCLCHECK(cuDeviceOf(driver, cudaDev, what, LogLevel::kWarn, &cuDevice));
  int vmm = 0;
  int fdHandles = 0;
  CUCHECK_AT(what, driver, cuDeviceGetAttribute, &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
             cuDevice);
  CUCHECK_AT(what, driver, cuDeviceGetAttribute, &fdHandles,
             CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cuDevice);
  *wanted = vmm != 0 && fdHandles != 0;
  if (!*wanted) {
    INFO(kLogInit | kLogP2p, "GPU %d: cuMem not used across processes (VMM %d, POSIX fd handles %d); cudaIpc instead",
         cudaDev, vmm, fdHandles);
  }
  return ncclSuccess;
}

ncclResult_t p2pAlloc(const AllocArgs& args, cudaStream_t zeroStream, std::unique_ptr<Block>* out, ExportInfo* info,
                      UniqueFd* exportFd) {
  std::memset(info, 0, sizeof(*info));
  std::unique_ptr<Block> block;
  Mechanism mechanism = Mechanism::kRawDevice;
  if (args.crossProcess && args.useCuMem) {
    if (cuMemAllocBlock(args, LogLevel::kInfo, &block, exportFd) == ncclSuccess) {
      mechanism = Mechanism::kCuMemFd;
    } else {
      INFO(kLogInit | kLogP2p, "%s: cuMem allocation failed (above); falling back to cudaMalloc + cudaIpc",
           args.what.c_str());
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
