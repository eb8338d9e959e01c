// SHM blocks: pinned host memory mapped into the GPU (see memory.h). Host memory is zeroed when it
// is made (memset for cudaHostAlloc, fresh pages for a new shared memory segment), before the
// ExportInfo that names it leaves this rank.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "cuda/cuda_check.h"
#include "transport/layout.h"
#include "transport/memory.h"
#include "util/check.h"
#include "util/log.h"
#include "util/shm_segment.h"
#include "util/text.h"

namespace braid::transport {
namespace {

void noteCleanup(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();
  INFO(kLogInit | kLogShm, "transport cleanup: %s failed: %s", call, cudaGetErrorString(err));
}

// The address of pinned, mapped host memory in the current device's address space.
ncclResult_t devicePointerOf(void* host, const std::string& what, char** out) {
  void* dev = nullptr;
  CUDACHECK_AT(what, cudaHostGetDevicePointer(&dev, host, 0));
  *out = static_cast<char*>(dev);
  return ncclSuccess;
}

class HostAllocBlock final : public Block {
 public:
  static ncclResult_t create(size_t bytes, const std::string& what, std::unique_ptr<HostAllocBlock>* out) {
    std::unique_ptr<HostAllocBlock> block(new HostAllocBlock());
    CUDACHECK_AT(what, cudaHostAlloc(&block->host_, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    std::memset(block->host_, 0, bytes);
    block->bytes_ = bytes;
    NCCLCHECK(devicePointerOf(block->host_, what, &block->devPtr_));
    *out = std::move(block);
    return ncclSuccess;
  }
  ~HostAllocBlock() override {
    if (host_ != nullptr) noteCleanup(cudaFreeHost(host_), "cudaFreeHost");
  }
  void* host() const { return host_; }

 private:
  HostAllocBlock() = default;
  void* host_ = nullptr;
};

// A shared memory segment (ours or the peer's) registered with CUDA. Unregistered before the
// segment is unmapped (members are destroyed after the destructor's body).
class ShmBlock final : public Block {
 public:
  static ncclResult_t registerSegment(ShmSegment segment, const std::string& what, std::unique_ptr<Block>* out) {
    std::unique_ptr<ShmBlock> block(new ShmBlock());
    block->segment_ = std::move(segment);
    void* host = block->segment_.ptr();
    CUDACHECK_AT(what,
                 cudaHostRegister(host, block->segment_.bytes(), cudaHostRegisterPortable | cudaHostRegisterMapped));
    block->registered_ = true;
    block->bytes_ = block->segment_.bytes();
    NCCLCHECK(devicePointerOf(host, what, &block->devPtr_));
    *out = std::move(block);
    return ncclSuccess;
  }
  ~ShmBlock() override {
    if (registered_) noteCleanup(cudaHostUnregister(segment_.ptr()), "cudaHostUnregister");
  }

 private:
  ShmBlock() = default;
  ShmSegment segment_;
  bool registered_ = false;
};

// The peer's cudaHostAlloc memory in this process: Portable makes it valid in every context; the
// owner frees it.
class BorrowedHostBlock final : public Block {
 public:
  static ncclResult_t create(void* host, size_t bytes, const std::string& what, std::unique_ptr<Block>* out) {
    std::unique_ptr<BorrowedHostBlock> block(new BorrowedHostBlock());
    block->bytes_ = bytes;
    NCCLCHECK(devicePointerOf(host, what, &block->devPtr_));
    *out = std::move(block);
    return ncclSuccess;
  }

 private:
  BorrowedHostBlock() = default;
};

size_t pageAligned(size_t bytes) {
  long page = ::sysconf(_SC_PAGESIZE);
  return alignUp(bytes, page > 0 ? static_cast<size_t>(page) : kBufferAlign);
}

}  // namespace

ncclResult_t shmAlloc(const AllocArgs& args, std::unique_ptr<Block>* out, ExportInfo* info) {
  std::memset(info, 0, sizeof(*info));
  size_t bytes = pageAligned(args.bytes);
  if (!args.crossProcess) {
    std::unique_ptr<HostAllocBlock> block;
    NCCLCHECK(HostAllocBlock::create(bytes, args.what, &block));
    info->mechanism = static_cast<int32_t>(Mechanism::kRawHost);
    info->ptr = reinterpret_cast<uintptr_t>(block->host());
    info->bytes = bytes;
    *out = std::move(block);
    return ncclSuccess;
  }
  if (args.shmName.size() >= sizeof(info->shmName)) {
    WARN("%s: shared memory name %s is too long", args.what.c_str(), args.shmName.c_str());
    return ncclInternalError;
  }
  ShmSegment segment;
  NCCLCHECK(ShmSegment::create(args.shmName, bytes, args.what, &segment));
  NCCLCHECK(ShmBlock::registerSegment(std::move(segment), args.what, out));
  info->mechanism = static_cast<int32_t>(Mechanism::kShmFile);
  info->bytes = bytes;
  std::memcpy(info->shmName, args.shmName.c_str(), args.shmName.size() + 1);
  return ncclSuccess;
}

ncclResult_t shmImport(const ImportArgs& args, const ExportInfo& info, std::unique_ptr<Block>* out) {
  switch (static_cast<Mechanism>(info.mechanism)) {
    case Mechanism::kRawHost:
      return BorrowedHostBlock::create(reinterpret_cast<void*>(static_cast<uintptr_t>(info.ptr)), info.bytes, args.what,
                                       out);
    case Mechanism::kShmFile: {
      char name[sizeof(info.shmName) + 1] = {};
      std::memcpy(name, info.shmName, sizeof(info.shmName));
      // The peer names the segment this rank opens and unlinks: only one of Braid's own names.
      if (std::strncmp(name, kShmNamePrefix, sizeof(kShmNamePrefix) - 1) != 0 || peerText(name) != name) {
        WARN("%s: the peer named its SHM block %s, which is not a Braid shared memory segment", args.what.c_str(),
             peerText(name).c_str());
        return ncclInternalError;
      }
      ShmSegment segment;
      NCCLCHECK(ShmSegment::openAndUnlink(name, info.bytes, args.what, &segment));
      return ShmBlock::registerSegment(std::move(segment), args.what, out);
    }
    default:
      WARN("%s: the peer described its SHM block with mechanism %d, which is not an SHM mechanism", args.what.c_str(),
           info.mechanism);
      return ncclInternalError;
  }
}

}  // namespace braid::transport
