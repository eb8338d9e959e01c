/*
 * nccl_device/ptr.h -- ncclSymPtr<T>: a typed position in a window, the same on every rank, from
 * which each peer's address is derived (localPtr, lsaPtr, peerPtr, multimemPtr). Arithmetic moves
 * the offset by whole elements of T, as on a T*. A symmetric pointer with a NULL window is a plain
 * local address held in `offset`: localPtr() gives it back.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_PTR_H_
#define NCCL_DEVICE_PTR_H_

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
template <typename T>
struct ncclSymPtr {
  using ElementType = T;
  ncclWindow_t window;
  size_t offset; /* in bytes */

  NCCL_HOST_DEVICE_INLINE constexpr ncclSymPtr(ncclWindow_t window_ = nullptr, size_t offset_ = 0)
      : window(window_), offset(offset_) {}

  /* The same position seen as another element type. */
  template <typename U>
  NCCL_HOST_DEVICE_INLINE operator ncclSymPtr<U>() const {
    return ncclSymPtr<U>(window, offset);
  }

  /* Moves by d elements; a negative d moves back (the unsigned offset wraps as a pointer would). */
  template <typename Int>
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& advance_(Int d) {
    offset += size_t(ptrdiff_t(d) * ptrdiff_t(sizeof(T)));
    return *this;
  }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator+=(int d) { return advance_(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator+=(unsigned int d) { return advance_(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator+=(long d) { return advance_(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator+=(unsigned long d) { return advance_(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator+=(long long d) { return advance_(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator+=(unsigned long long d) { return advance_(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator-=(int d) { return advance_(-ptrdiff_t(d)); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator-=(unsigned int d) { return advance_(-ptrdiff_t(d)); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator-=(long d) { return advance_(-ptrdiff_t(d)); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator-=(unsigned long d) { return advance_(-ptrdiff_t(d)); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator-=(long long d) { return advance_(-ptrdiff_t(d)); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr<T>& operator-=(unsigned long long d) { return advance_(-ptrdiff_t(d)); }

#ifdef __CUDACC__
  /* The caller's own copy. */
  NCCL_DEVICE_INLINE T* localPtr() const {
    if (window == nullptr) return reinterpret_cast<T*>(offset);
    return static_cast<T*>(ncclGetLocalPointer(window, offset));
  }
  /* LSA rank peer's copy. */
  NCCL_DEVICE_INLINE T* lsaPtr(int peer) const { return static_cast<T*>(ncclGetLsaPointer(window, offset, peer)); }
  /* World rank peer's copy (peer in the caller's LSA team). */
  NCCL_DEVICE_INLINE T* peerPtr(int peer) const { return static_cast<T*>(ncclGetPeerPointer(window, offset, peer)); }
  /* Rank peer of `team`'s copy (peer in the caller's LSA team). */
  NCCL_DEVICE_INLINE T* peerPtr(ncclTeam team, int peer) const {
    return static_cast<T*>(ncclGetPeerPointer(window, offset, team, peer));
  }
  /* The multicast address (NULL without multicast). */
  NCCL_DEVICE_INLINE T* multimemPtr(ncclMultimemHandle mmHandle) const {
    return static_cast<T*>(ncclGetMultimemPointer(window, offset, mmHandle));
  }
  NCCL_DEVICE_INLINE T* lsaMultimemPtr(ncclDevComm const& comm) const {
    return static_cast<T*>(ncclGetLsaMultimemPointer(window, offset, comm));
  }
#endif
};

template <typename T, typename Int>
NCCL_HOST_DEVICE_INLINE ncclSymPtr<T> operator+(ncclSymPtr<T> p, Int d) {
  return p += d;
}
template <typename T, typename Int>
NCCL_HOST_DEVICE_INLINE ncclSymPtr<T> operator-(ncclSymPtr<T> p, Int d) {
  return p -= d;
}
/* Elements between two positions of the same window. */
template <typename T>
NCCL_HOST_DEVICE_INLINE ptrdiff_t operator-(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return ptrdiff_t(a.offset - b.offset) / ptrdiff_t(sizeof(T));
}
template <typename T>
NCCL_HOST_DEVICE_INLINE bool operator==(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return a.window == b.window && a.offset == b.offset;
}
template <typename T>
NCCL_HOST_DEVICE_INLINE bool operator!=(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return !(a == b);
}

#ifdef __CUDACC__
NCCL_DEVICE_INLINE ncclSymPtr<char> ncclGetResourceBuffer(ncclDevComm const& comm, ncclDevResourceHandle h) {
  return ncclSymPtr<char>(comm.resourceWindow, ncclGetResourceBufferOffset(h));
}
#endif
#endif /* __cplusplus */

#endif /* NCCL_DEVICE_PTR_H_ */
