/*
 * nccl_device/ll_a2a.h -- the LL all-to-all (LLA2A): small exchanges among an LSA team in which a
 * value and its arrival flag travel in one store, so a receiver needs no separate barrier.
 *
 *   ncclLLA2ASession<Coop> ll(coop, devComm, team, handle, block, maxElts);
 *   ll.send(peer, slot, value);    // into peer's slot `slot`    ll.bcast(slot, value): every peer
 *   T v = ll.recv<T>(slot);        // waits for the value sent to the caller's slot
 *   ll.endEpoch(coop);             // before reusing slots
 *
 * A handle (ncclLLA2ACreateRequirement) holds nBlocks independent blocks of nSlots slots; a session
 * uses block `block`, for values of up to maxElts elements per slot pitch: a value of T takes
 * ceil(sizeof(T) / 8) slots, `maxElts` apart (ncclLLA2ACalcSlots(maxElts, sizeof(T)) slots in all).
 * Within an epoch each slot of each rank is written at most once. endEpoch() closes the epoch; by
 * then the caller must have sent at least once to every team member and received at least once from
 * every team member, which keeps any rank from getting two epochs ahead of another.
 *
 * Memory, per rank, per block (16-byte lines): line 0 keeps the epoch between sessions (its first
 * word holds epoch - 2, so zeroed memory starts at epoch 2); then two banks of nSlots lines, bank
 * (epoch & 1) serving the current epoch. A line carries 8 bytes of a value as {lo, epoch, hi,
 * epoch}: each 8-byte half holds its own copy of the flag, so a reader that sees both flags equal
 * to its epoch has seen the whole value, whatever order the halves land in. Flags 0 and 1 never
 * occur, and before the epoch counter wraps the banks are cleared, so a stale line never matches.
 * This is NCCL's layout (one device communicator serves kernels built against either header).
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_LL_A2A_H_
#define NCCL_DEVICE_LL_A2A_H_

#include <string.h>

#include "core.h"
#include "lsa_barrier.h"

#ifdef __CUDACC__
namespace nccl {
namespace detail {

/* One 16-byte line {lo, flag, hi, flag}, stored or loaded whole and uncached (system scope). */
NCCL_DEVICE_INLINE void llStoreLine(uint4* line, uint32_t lo, uint32_t hi, uint32_t flag) {
  asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line), "r"(lo), "r"(flag), "r"(hi),
               "r"(flag)
               : "memory");
}
NCCL_DEVICE_INLINE uint4 llLoadLine(uint4 const* line) {
  uint4 v;
  asm volatile("ld.relaxed.sys.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(line)
               : "memory");
  return v;
}

/* A value of T as 8-byte words (zero-padded), and back. */
template <typename T>
struct LlWords {
  static constexpr int kCount = int((sizeof(T) + 7) / 8);
  uint32_t lo[kCount], hi[kCount];
  NCCL_DEVICE_INLINE explicit LlWords(T const& value) {
    uint32_t raw[2 * kCount] = {};
    memcpy(raw, &value, sizeof(T));
    for (int i = 0; i < kCount; i++) {
      lo[i] = raw[2 * i];
      hi[i] = raw[2 * i + 1];
    }
  }
};
template <typename T>
NCCL_DEVICE_INLINE void llValueFromLines(T* out, uint4 const* lines) {
  constexpr int kCount = int((sizeof(T) + 7) / 8);
  uint32_t raw[2 * kCount];
  for (int i = 0; i < kCount; i++) {
    raw[2 * i] = lines[i].x;
    raw[2 * i + 1] = lines[i].z;
  }
  memcpy(static_cast<void*>(out), raw, sizeof(T));
}

}  // namespace detail
}  // namespace nccl

template <typename Coop>
struct ncclLLA2ASession_internal {
  Coop coop;
  ncclDevComm const& comm;
  ncclTeam team;
  ncclLLA2AHandle handle;
  int block;
  int pitch; /* lines between the 8-byte parts of one value: maxElts */
  bool multimem;
  ncclMultimemHandle mmHandle;
  uint32_t epoch;
  uint32_t slotsOffset; /* the current bank of this block, in lines from the buffer's start */

  NCCL_DEVICE_INLINE uint32_t blockLine() const { return uint32_t(block) * (1u + 2u * handle.nSlots); }
  NCCL_DEVICE_INLINE uint32_t calcSlotOffset() const { return blockLine() + 1u + (epoch & 1u) * handle.nSlots; }
  /* Team rank `peer`'s line for `slot` in the current bank. */
  NCCL_DEVICE_INLINE uint4* peerLine(int peer, int slot) const {
    uint4* buf = static_cast<uint4*>(ncclGetResourceBufferPeerPointer(comm, handle.bufHandle, team, peer));
    return buf + slotsOffset + slot;
  }
  NCCL_DEVICE_INLINE uint4* localLine(int slot) const {
    return static_cast<uint4*>(ncclGetResourceBufferLocalPointer(comm, handle.bufHandle)) + slotsOffset + slot;
  }
  template <typename T>
  NCCL_DEVICE_INLINE void storeValue(uint4* line, T const& data) const {
    nccl::detail::LlWords<T> words(data);
    NVCC_PRAGMA_UNROLL_AUTO
    for (int u = 0; u < words.kCount; u++) nccl::detail::llStoreLine(line + u * pitch, words.lo[u], words.hi[u], epoch);
  }
};

template <typename Coop>
struct ncclLLA2ASession : ncclLLA2ASession_internal<Coop> {
  NCCL_DEVICE_INLINE ncclLLA2ASession(Coop coop, ncclDevComm const& comm, ncclTeam team, ncclLLA2AHandle handle,
                                      uint32_t block, int maxElts, bool multimem = false,
                                      ncclMultimemHandle mmHandle = {})
      : ncclLLA2ASession_internal<Coop>{coop, comm, team, handle, int(block), maxElts, multimem, mmHandle, 0, 0} {
    if (multimem && mmHandle.mcBasePtr == nullptr) nccl::detail::unavailable("a multimem LL all-to-all (no multicast)");
    uint4 const* control = static_cast<uint4 const*>(ncclGetResourceBufferLocalPointer(comm, handle.bufHandle));
    this->epoch = control[this->blockLine()].x + 2u;
    this->slotsOffset = this->calcSlotOffset();
  }
  NCCL_DEVICE_INLINE ~ncclLLA2ASession() {
    uint4* control = static_cast<uint4*>(ncclGetResourceBufferLocalPointer(this->comm, this->handle.bufHandle));
    if (this->coop.thread_rank() == 0) control[this->blockLine()].x = this->epoch - 2u;
    this->coop.sync();
  }
  ncclLLA2ASession(ncclLLA2ASession const&) = delete;

  /* Stores `data` into team rank peer's slot `slot`. */
  template <typename T>
  NCCL_DEVICE_INLINE void send(int peer, int slot, T data) {
    this->storeValue(this->peerLine(peer, slot), data);
  }

  /* Stores `data` into slot `slot` of every team member, the caller included: through the
   * multicast address when the session is multimem, else peer by peer starting with the caller
   * (so that the threads of a group, which all start at their own rank, spread their stores). */
  template <typename T>
  NCCL_DEVICE_INLINE void bcast(int slot, T data) {
    if (this->multimem) {
      uint4* buf =
          static_cast<uint4*>(ncclGetResourceBufferMultimemPointer(this->comm, this->handle.bufHandle, this->mmHandle));
      this->storeValue(buf + this->slotsOffset + slot, data);
      return;
    }
    int peer = this->team.rank;
    NVCC_PRAGMA_UNROLL(8)
    for (int n = 0; n < this->team.nRanks; n++) {
      this->storeValue(this->peerLine(peer, slot), data);
      peer = (peer + 1 == this->team.nRanks) ? 0 : peer + 1;
    }
  }

  /* Waits for, and returns, the value in the caller's slot `slot`. */
  template <typename T>
  NCCL_DEVICE_INLINE T recv(int slot) {
    T got[1];
    this->template recvUnrolled<1, 1>(slot, 1, 0, got);
    return got[0];
  }

  /* Receives eltCount values (MinEltCount <= eltCount <= MaxEltCount) from slots eltStart,
   * eltStart + eltStride, ...: the loads of all of them are in flight together. */
  template <int MinEltCount, int MaxEltCount, typename T>
  NCCL_DEVICE_INLINE void recvUnrolled(int eltStart, int eltCount, int eltStride, T (&vals)[MaxEltCount]) {
    constexpr int kLines = int((sizeof(T) + 7) / 8);
    uint4 const* first = this->localLine(eltStart);
    uint4 lines[MaxEltCount][kLines];
    uint32_t spins = 0;
    NVCC_PRAGMA_UNROLL_DISABLED
    while (true) {
      bool complete = true;
      NVCC_PRAGMA_UNROLL_AUTO
      for (int e = 0; e < MaxEltCount; e++) {
        if (e >= MinEltCount && e >= eltCount) continue;
        NVCC_PRAGMA_UNROLL_AUTO
        for (int u = 0; u < kLines; u++) {
          lines[e][u] = nccl::detail::llLoadLine(first + e * eltStride + u * this->pitch);
          complete &= lines[e][u].y == this->epoch && lines[e][u].w == this->epoch;
        }
      }
      if (__builtin_expect(complete, true)) break;
      if (nccl::utility::testAbort(this->comm.abortFlag, spins)) break;
    }
    NVCC_PRAGMA_UNROLL_AUTO
    for (int e = 0; e < MaxEltCount; e++) {
      if (e >= MinEltCount && e >= eltCount) break;
      nccl::detail::llValueFromLines(&vals[e], lines[e]);
    }
  }

  /* Receives eltCount values of type Elt as recvUnrolled does, Unroll at a time, and folds them in
   * slot order: eltToAcc(v0), then reduce(acc, eltToAcc(v1)), ... */
  template <int Unroll, typename Elt, typename EltToAcc, typename Reduce>
  NCCL_DEVICE_INLINE auto recvReduce(int eltStart, int eltCount, int eltStride, EltToAcc eltToAcc, Reduce red)
      -> decltype(eltToAcc(nccl::utility::declval<Elt>())) {
    using Acc = decltype(eltToAcc(nccl::utility::declval<Elt>()));
    Elt got[Unroll];
    int done = (eltCount < Unroll) ? eltCount : Unroll;
    this->template recvUnrolled<1, Unroll>(eltStart, done, eltStride, got);
    Acc acc = eltToAcc(got[0]);
    for (int j = 1; j < done; j++) acc = red(acc, eltToAcc(got[j]));
    NVCC_PRAGMA_UNROLL_DISABLED
    while (done < eltCount) {
      int n = (eltCount - done < Unroll) ? eltCount - done : Unroll;
      this->template recvUnrolled<1, Unroll>(eltStart + done * eltStride, n, eltStride, got);
      NVCC_PRAGMA_UNROLL_AUTO
      for (int j = 0; j < Unroll; j++) {
        if (j < n) acc = red(acc, eltToAcc(got[j]));
      }
      done += n;
    }
    return acc;
  }

  /* Closes the epoch (see the top of this file): the next one uses the other bank. Before the flag
   * counter wraps, the bank just used is cleared, so that no line still holds a flag value the new
   * cycle of epochs will reach. */
  NCCL_DEVICE_INLINE void endEpoch(Coop) {
    if (__builtin_expect(this->epoch >= 0xfffffffeu, false)) {
      this->coop.sync();
      uint4* bank = this->localLine(0);
      for (int i = this->coop.thread_rank(); i < int(this->handle.nSlots); i += this->coop.size()) {
        bank[i] = make_uint4(0, 0, 0, 0);
      }
    }
    this->coop.sync();
    /* ..., 0xfffffffe, 0xffffffff, 2, 3, ...: flags 0 and 1 stay unused, banks keep alternating. */
    this->epoch = (this->epoch == 0xffffffffu) ? 2u : this->epoch + 1u;
    this->slotsOffset = this->calcSlotOffset();
  }
};
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_LL_A2A_H_ */
