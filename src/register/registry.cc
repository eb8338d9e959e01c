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
// driver's (cudaMalloc memory, or another allocator's cuMem mapping). `caller` leads the WARNs.
ncclResult_t findAllocation(const CudaDriver* drv, void* buff, size_t size, const char* caller, char** base,
                            size_t* bytes) {
  AllocInfo info;
  if (findAlloc(buff, &info)) {
    *base = static_cast<char*>(info.base);
    *bytes = info.bytes;
  } else {
    CUdeviceptr start = 0;
    size_t length = 0;
    if (drv->cuMemGetAddressRange(&start, &length, reinterpret_cast<CUdeviceptr>(buff)) != CUDA_SUCCESS) {
      WARN("%s: buff %p is not GPU memory this process can address", caller, buff);
      return ncclInvalidArgument;
    }
    *base = reinterpret_cast<char*>(start);
    *bytes = length;
  }
  if (static_cast<char*>(buff) + size > *base + *bytes) {
    WARN("%s: buff %p + size %zu runs past the end of its allocation (%p, %zu bytes)", caller, buff, size,
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

std::string sharingSummary(const Registration& reg) {
  if (!reg.whyNotShared.empty()) return "peer processes cannot map it: " + reg.whyNotShared;
  return std::string("peer processes map it by ") +
         transport::mechanismName(static_cast<Mechanism>(reg.crossProcess.mechanism));
}

Registry::~Registry() {
  releases_->close();  // graphs that outlive the communicator release nothing here
  for (auto& reg : regs_) {
    if (reg->lastUse != nullptr) (void)cudaEventDestroy(reg->lastUse);
  }
}

ncclResult_t Registry::make(void* buff, size_t size, const char* caller, std::unique_ptr<Registration>* out) {
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  auto reg = std::make_unique<Registration>();
  reg->buff = static_cast<char*>(buff);
  reg->size = size;
  reg->serial = gSerial.fetch_add(1, std::memory_order_relaxed);
  NCCLCHECK(findAllocation(drv, buff, size, caller, &reg->allocBase, &reg->allocBytes));
  prepareSharing(drv, reg.get());
  CUDACHECK(cudaEventCreateWithFlags(&reg->lastUse, cudaEventDisableTiming));
  *out = std::move(reg);
  return ncclSuccess;
}

ncclResult_t Registry::add(void* buff, size_t size, Registration** out) {
  std::unique_ptr<Registration> reg;
  NCCLCHECK(make(buff, size, "ncclCommRegister", &reg));
  std::lock_guard<std::mutex> lock(mutex_);
  *out = reg.get();
  regs_.push_back(std::move(reg));
  return ncclSuccess;
}

void Registry::retire(std::vector<std::unique_ptr<Registration>>::iterator it) {
  if ((*it)->lastUse != nullptr) (void)cudaEventDestroy((*it)->lastUse);
  retired_.push_back((*it)->serial);
  regs_.erase(it);
}

ncclResult_t Registry::acquireForGraph(void* buff, size_t bytes, cudaStream_t stream, Registration** out) {
  *out = nullptr;
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  char* base = nullptr;
  size_t length = 0;
  if (findAllocation(drv, buff, bytes, "graph registration", &base, &length) != ncclSuccess) {
    INFO(kLogReg, "graph registration: buff %p (%zu bytes) is not in one GPU allocation; copy path", buff, bytes);
    return ncclSuccess;
  }
  Registration* reg = findGraph(base, length);
  if (reg == nullptr) {
    std::unique_ptr<Registration> made;
    NCCLCHECK(make(base, length, "graph registration", &made));
    made->graph = true;
    reg = made.get();
    INFO(kLogReg, "graph registration %llu: allocation %p (%zu bytes) of buff %p, %s",
         static_cast<unsigned long long>(reg->serial), static_cast<void*>(base), length, buff,
         sharingSummary(*reg).c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    regs_.push_back(std::move(made));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  reg->graphRefs++;
  ncclResult_t held = holdForCapturedGraph(stream, releases_, reg->serial);
  if (held != ncclSuccess) {
    auto it = std::find_if(regs_.begin(), regs_.end(), [reg](const auto& r) { return r.get() == reg; });
    if (--reg->graphRefs == 0) retire(it);
    return held;
  }
  *out = reg;
  return ncclSuccess;
}

// The graph registration of the allocation [base, base + length). A graph still alive may hold a
// registration of memory since freed and allocated again at another size: base and length must
// both match.
Registration* Registry::findGraph(const char* base, size_t length) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& r : regs_) {
    if (r->graph && r->allocBase == base && r->allocBytes == length) return r.get();
  }
  return nullptr;
}

void Registry::collectGraphReleases() {
  std::vector<uint64_t> released = releases_->take();
  if (released.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (uint64_t serial : released) {
    auto it = std::find_if(regs_.begin(), regs_.end(), [serial](const auto& r) { return r->serial == serial; });
    if (it == regs_.end() || --(*it)->graphRefs > 0) continue;
    INFO(kLogReg, "graph registration %llu of allocation %p released: its last graph was destroyed",
         static_cast<unsigned long long>(serial), static_cast<void*>((*it)->allocBase));
    retire(it);
  }
}

std::vector<uint64_t> Registry::takeRetired() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint64_t> out;
  out.swap(retired_);
  return out;
}

ncclResult_t Registry::remove(const void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it =
      std::find_if(regs_.begin(), regs_.end(), [handle](const auto& r) { return r.get() == handle && !r->graph; });
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
  retire(it);
  return ncclSuccess;
}

bool Registry::hasLocal() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(regs_.begin(), regs_.end(), [](const auto& r) { return !r->graph; });
}

Registration* Registry::find(const void* p, size_t bytes) const {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& reg : regs_) {
    if (!reg->graph && c >= reg->buff && c + bytes <= reg->buff + reg->size) return reg.get();
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
