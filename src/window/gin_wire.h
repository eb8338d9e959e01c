// What the proxy GIN transport sends between hosts (net_backend.h): a put's data in chunks, each a
// 64-byte header and its payload in one network message, the last one carrying the put's signal;
// a VA signal alone. The header names the device communicator by its resource window's serial and
// windows by their serials (the same on every rank). The receiver trusts nothing in it: parseGin
// checks what the message says of itself, the receiver the ranges against its own windows.
// Pure (no CUDA), so a fuzzer runs it (tests/fuzz/gin_wire_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace braid::window {

constexpr uint32_t kGinMagic = 0x4247494e;  // "BGIN"
// Flags: the last chunk of a put (its signal, if any, follows its data); what the signal is.
constexpr uint32_t kGinLast = 1;
constexpr uint32_t kGinSignalInc = 2;
constexpr uint32_t kGinSignalAdd = 4;
constexpr uint32_t kGinVaSignal = 8;  // the signal is a word of window `serial` at `offset`; no data
constexpr uint32_t kGinFlags = kGinLast | kGinSignalInc | kGinSignalAdd | kGinVaSignal;

struct GinHeader {
  uint32_t magic;
  uint32_t flags;
  uint64_t devComm;  // the serial of the device communicator's resource window
  uint64_t serial;   // the destination window (or the VA signal's)
  uint64_t offset;   // in it
  uint64_t bytes;    // payload after the header
  uint64_t value;    // what a signal adds (Inc: 1)
  uint32_t context;  // the GIN context
  uint32_t signal;   // an indexed signal's id
  uint64_t reserved;
};
static_assert(sizeof(GinHeader) == 64, "GinHeader crosses process boundaries: keep it fixed");

// Whether a message starts with the GIN magic (else it is a one-sided put's chunk, rma_wire.h).
bool isGinMessage(const void* message, size_t size);

// The header of a `size`-byte message, if it is one a rank whose device communicators have at most
// `maxContexts` contexts can take: known flags, at most one signal kind, an increment by 1, a VA
// signal without data and with a signal, the payload the rest of the message, the context in range,
// the reserved word zero. Otherwise false,
// with *why for the WARN.
bool parseGin(const void* message, size_t size, uint32_t maxContexts, GinHeader* out, std::string* why);

// Whether [offset, offset + bytes) lies inside `limit` bytes.
inline bool ginFits(uint64_t offset, uint64_t bytes, uint64_t limit) {
  return offset <= limit && bytes <= limit - offset;
}

}  // namespace braid::window
