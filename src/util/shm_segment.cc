#include "util/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "util/check.h"
#include "util/log.h"
#include "util/text.h"
#include "util/unique_fd.h"

namespace braid {
namespace {

ncclResult_t shmFail(const std::string& what, const char* step, const std::string& name) {
  int err = errno;
  // The name may be a peer's (openAndUnlink): printed escaped.
  WARN("%s: %s of shared memory segment %s failed: %s (errno %d)%s", what.c_str(), step, peerText(name).c_str(),
       std::strerror(err), err, err == ENOSPC || err == ENOMEM ? "; is /dev/shm large enough?" : "");
  return ncclSystemError;
}

ncclResult_t mapFd(int fd, size_t bytes, const std::string& name, const std::string& what, void** out) {
  void* ptr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ptr == MAP_FAILED) return shmFail(what, "mmap", name);
  *out = ptr;
  return ncclSuccess;
}

}  // namespace

std::string shmSegmentName(uint64_t commHash, int rank, int peer, const char* role, int pid, uint64_t serial) {
  char name[128];
  std::snprintf(name, sizeof(name), "%s%016" PRIx64 "-%d-%d-%s-%d-%" PRIu64, kShmNamePrefix, commHash, rank, peer, role,
                pid, serial);
  return name;
}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this == &other) return *this;
  reset();
  ptr_ = other.ptr_;
  bytes_ = other.bytes_;
  name_ = std::move(other.name_);
  unlinkOnReset_ = other.unlinkOnReset_;
  other.ptr_ = nullptr;
  other.bytes_ = 0;
  other.unlinkOnReset_ = false;
  return *this;
}

void ShmSegment::reset() {
  if (ptr_ != nullptr) ::munmap(ptr_, bytes_);
  if (unlinkOnReset_) ::shm_unlink(name_.c_str());  // ENOENT: the peer unlinked it already
  ptr_ = nullptr;
  bytes_ = 0;
  unlinkOnReset_ = false;
}

ncclResult_t ShmSegment::create(const std::string& name, size_t bytes, const std::string& what, ShmSegment* out) {
  out->reset();
  UniqueFd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, S_IRUSR | S_IWUSR));
  if (!fd.valid()) return shmFail(what, "creation", name);
  ShmSegment seg;
  seg.name_ = name;
  seg.unlinkOnReset_ = true;  // from here on, an error path removes the name
  // posix_fallocate reserves the pages now, so that a full /dev/shm fails here and not with a
  // SIGBUS when a GPU or the peer first touches the memory.
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return shmFail(what, "ftruncate", name);
  int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes));
  if (err != 0) {
    errno = err;
    return shmFail(what, "posix_fallocate", name);
  }
  NCCLCHECK(mapFd(fd.get(), bytes, name, what, &seg.ptr_));
  seg.bytes_ = bytes;
  *out = std::move(seg);
  return ncclSuccess;
}

ncclResult_t ShmSegment::openAndUnlink(const std::string& name, size_t bytes, const std::string& what,
                                       ShmSegment* out) {
  out->reset();
  UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0));
  if (!fd.valid()) return shmFail(what, "open", name);
  // Unlinking right away: both sides hold it now (the creator has it mapped), so the name is no
  // longer needed, and nothing is left behind if either process dies later.
  if (::shm_unlink(name.c_str()) != 0 && errno != ENOENT) return shmFail(what, "unlink", name);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return shmFail(what, "fstat", name);
  if (static_cast<size_t>(st.st_size) != bytes) {
    WARN("%s: shared memory segment %s has %lld bytes, expected %zu (the peer computed another layout)", what.c_str(),
         peerText(name).c_str(), static_cast<long long>(st.st_size), bytes);
    return ncclInternalError;
  }
  ShmSegment seg;
  seg.name_ = name;
  NCCLCHECK(mapFd(fd.get(), bytes, name, what, &seg.ptr_));
  seg.bytes_ = bytes;
  *out = std::move(seg);
  return ncclSuccess;
}

ncclResult_t ShmSegment::openReadOnly(const std::string& name, size_t bytes, ShmSegment* out) {
  out->reset();
  UniqueFd fd(::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return ncclSystemError;
  if (static_cast<size_t>(st.st_size) != bytes) {
    errno = EINVAL;
    return ncclSystemError;
  }
  void* ptr = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (ptr == MAP_FAILED) return ncclSystemError;
  out->ptr_ = ptr;
  out->bytes_ = bytes;
  out->name_ = name;
  return ncclSuccess;
}

}  // namespace braid
