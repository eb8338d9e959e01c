// POSIX shared memory segments: the host side only (no CUDA), so it is tested on any machine. The
// SHM transport (transport/shm_memory.cc registers the mapping with CUDA) and the progress boards
// of hang diagnosis (core/progress_board.h) use them.
//
// The creator makes the segment (O_EXCL, so a stale or foreign segment of the same name is an error,
// never shared by accident), sizes it (new pages read as zero) and maps it. The peer opens and maps
// it and unlinks the name at once, so nothing is left in /dev/shm once both have it; the creator
// also unlinks it when it is destroyed (ENOENT ignored), which covers a peer that never came.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace braid {

// How every name shmSegmentName makes starts: a peer's name for its block must (transport/shm).
constexpr char kShmNamePrefix[] = "/braid-shm-";

// "/braid-shm-<commHash hex>-<rank>-<peer>-<role>-<pid>-<serial>": the segment `rank` creates for
// `peer` in `role` ("send" or "recv"; a rank may create one of each for the same peer).
std::string shmSegmentName(uint64_t commHash, int rank, int peer, const char* role, int pid, uint64_t serial);

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment() { reset(); }
  ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates, sizes and maps a new segment of `bytes` (zero-filled). `what` names the owner in
  // messages ("rank 0 for peer rank 1").
  [[nodiscard]] static ncclResult_t create(const std::string& name, size_t bytes, const std::string& what,
                                           ShmSegment* out);
  // Opens and maps an existing segment, checks that it has exactly `bytes`, and unlinks its name.
  [[nodiscard]] static ncclResult_t openAndUnlink(const std::string& name, size_t bytes, const std::string& what,
                                                  ShmSegment* out);

  // Maps an existing segment of `bytes` for reading and leaves its name (its creator unlinks it).
  // Logs nothing: callers ask for segments that may be gone (a peer that exited), and say so
  // themselves. errno tells why it failed.
  [[nodiscard]] static ncclResult_t openReadOnly(const std::string& name, size_t bytes, ShmSegment* out);

  void* ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }
  // Unmaps; the creator also unlinks the name if it is still there.
  void reset();

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool unlinkOnReset_ = false;
};

}  // namespace braid
