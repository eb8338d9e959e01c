#include "register/registry.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "cuda/cuda_check.h"
#include "cuda/cuda_driver.h"
#include "register/mem_alloc.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::reg {
namespace {

std::atomic<uint64_t> gSerial{1};

using transport::Mechanism;

// The allocation [*base, *base + *bytes) that holds buff: ncclMemAlloc's own record, else the
// driver's (cudaMalloc memory, or another allocator's cuMem mapping).
ncclResult_t findAllocation(const CudaDriver* drv, void* buff, size_t size, char** base, size_t* bytes) {
  AllocInfo info;
  if (findAlloc(buff, &info)) {
    *base = static_cast<char*>(info.base);
    *bytes = info.bytes;
  } else {
    CUdeviceptr start = 0;
    size_t length = 0;
    if (drv->cuMemGetAddressRange(&start, &length, reinterpret_cast<CUdeviceptr>(buff)) != CUDA_SUCCESS) {
      WARN("ncclCommRegister: buff %p is not GPU memory this process can address", buff);
      return ncclInvalidArgument;
    }
    *base = reinterpret_cast<char*>(start);
    *bytes = length;
  }
  if (static_cast<char*>(buff) + size > *base + *bytes) {
    WARN("ncclCommRegister: buff %p + size %zu runs past the end of its allocation (%p, %zu bytes)", buff, size,
         static_cast<void*>(*base), *bytes);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// How a peer process may map reg's allocation: a cuMem allocation exports a POSIX file descriptor,
// cudaMalloc memory a cudaIpc handle. Failing both is not an error: peers in this process can
// still use the buffer, and the exchange tells the others.
void prepareSharing(const CudaDriver* drv, Registration* reg) {
  reg->crossProcess.mechanism = static_cast<int32_t>(Mechanism::kNone);
  reg->crossProcess.bytes = reg->allocBytes;
  reg->crossProcess.ptr = reinterpret_cast<uintptr_t>(reg->allocBase);
  CUmemGenericAllocationHandle handle = 0;
  if (drv->cuMemRetainAllocationHandle(&handle, reg->allocBase) == CUDA_SUCCESS) {
    reg->vmm = true;
    int fd = -1;
    CUresult res = drv->cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    (void)drv->cuMemRelease(handle);  // drops the retain only; the mapping keeps the memory
    if (res == CUDA_SUCCESS) {
      reg->fd.reset(fd);
      reg->crossProcess.mechanism = static_cast<int32_t>(Mechanism::kCuMemFd);
      return;
    }
    const char* text = "unknown error";
    drv->cuGetErrorString(res, &text);
    reg->whyNotShared = std::string("its cuMem allocation has no POSIX file descriptor handle (") + text + ")";
    return;
  }
  cudaIpcMemHandle_t ipc;
  cudaError_t err = cudaIpcGetMemHandle(&ipc, reg->allocBase);
  if (err == cudaSuccess) {
    std::memcpy(reg->crossProcess.ipcHandle, &ipc, sizeof(ipc));
    reg->crossProcess.mechanism = static_cast<int32_t>(Mechanism::kCudaIpc);
    return;
  }
  (void)cudaGetLastError();
  reg->whyNotShared = std::string("cudaIpcGetMemHandle refused its allocation (") + cudaGetErrorString(err) + ")";
}

}  // namespace

const char* sharingName(const Registration& reg) {
  return transport::mechanismName(static_cast<Mechanism>(reg.crossProcess.mechanism));
}

Registry::~Registry() {
  for (auto& reg : regs_) {
    if (reg->lastUse != nullptr) (void)cudaEventDestroy(reg->lastUse);
  }
}

ncclResult_t Registry::add(void* buff, size_t size, Registration** out) {
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  auto reg = std::make_unique<Registration>();
  reg->buff = static_cast<char*>(buff);
  reg->size = size;
  reg->serial = gSerial.fetch_add(1, std::memory_order_relaxed);
  NCCLCHECK(findAllocation(drv, buff, size, &reg->allocBase, &reg->allocBytes));
  prepareSharing(drv, reg.get());
  CUDACHECK(cudaEventCreateWithFlags(&reg->lastUse, cudaEventDisableTiming));
  std::lock_guard<std::mutex> lock(mutex_);
  *out = reg.get();
  regs_.push_back(std::move(reg));
  return ncclSuccess;
}

ncclResult_t Registry::remove(const void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(regs_.begin(), regs_.end(), [handle](const auto& r) { return r.get() == handle; });
  if (it == regs_.end()) {
    WARN("ncclCommDeregister: handle %p is not a registration of this communicator (already deregistered?)", handle);
    return ncclInvalidArgument;
  }
  Registration& reg = **it;
  cudaError_t pending = cudaEventQuery(reg.lastUse);
  if (pending == cudaErrorNotReady) {
    WARN(
        "ncclCommDeregister: buffer %p (%zu bytes) is still used by an operation pending on the GPU; synchronize "
        "its stream first (the registration is kept)",
        static_cast<void*>(reg.buff), reg.size);
    return ncclInvalidUsage;
  }
  if (pending != cudaSuccess) (void)cudaGetLastError();  // a sticky error shows up on the next call anyway
  (void)cudaEventDestroy(reg.lastUse);
  regs_.erase(it);
  return ncclSuccess;
}

bool Registry::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return regs_.empty();
}

Registration* Registry::find(const void* p, size_t bytes) const {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& reg : regs_) {
    if (c >= reg->buff && c + bytes <= reg->buff + reg->size) return reg.get();
  }
  return nullptr;
}

ncclResult_t Registry::noteUse(Registration* reg, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDACHECK(cudaStreamIsCapturing(stream, &status));
  if (status == cudaStreamCaptureStatusNone) CUDACHECK(cudaEventRecord(reg->lastUse, stream));
  return ncclSuccess;
}

}  // namespace braid::reg
