// What the proxy GIN transport sends between hosts (net_backend.h): a put's data in chunks, each a
// 64-byte header and its payload in one network message, the last one carrying the put's signal;
// a VA signal alone; a get's request (no payload) and the chunks of its reply. The header names
// the device communicator by its resource window's serial and windows by their serials (the same
// on every rank). The receiver trusts nothing in it: parseGin checks what the message says of
// itself, the receiver the ranges against its own windows and a reply against its own gets.
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
// A get: `value` bytes of the receiver's window `serial` at `offset`, wanted back under `tag`; no
// data, no signal.
constexpr uint32_t kGinGetRequest = 16;
// A chunk of the reply to get `tag`: its payload belongs at `offset` into what was asked; no signal.
constexpr uint32_t kGinGetReply = 32;
constexpr uint32_t kGinFlags = kGinLast | kGinSignalInc | kGinSignalAdd | kGinVaSignal | kGinGetRequest | kGinGetReply;

struct GinHeader {
  uint32_t magic;
  uint32_t flags;
  uint64_t devComm;  // the serial of the device communicator's resource window
  uint64_t serial;   // the destination window (or the VA signal's)
  uint64_t offset;   // in it
  uint64_t bytes;    // payload after the header
  uint64_t value;    // what a signal adds (Inc: 1); a get request's size
  uint32_t context;  // the GIN context
  uint32_t signal;   // an indexed signal's id
  uint64_t tag;      // a get's request and reply: the requester's name for it (zero otherwise)
};
static_assert(sizeof(GinHeader) == 64, "GinHeader crosses process boundaries: keep it fixed");

// Whether a message starts with the GIN magic (else it is a one-sided put's chunk, rma_wire.h).
bool isGinMessage(const void* message, size_t size);

// The header of a `size`-byte message, if it is one a rank whose device communicators have at most
// `maxContexts` contexts can take: known flags, at most one signal kind, an increment by 1, a VA
// signal without data and with a signal, a get request without data, signal or VA and last, a
// reply without signal or VA, a tag on a get's messages only, the payload the rest of the message,
// the context in range. Otherwise false,
// with *why for the WARN.
bool parseGin(const void* message, size_t size, uint32_t maxContexts, GinHeader* out, std::string* why);

// Whether [offset, offset + bytes) lies inside `limit` bytes.
inline bool ginFits(uint64_t offset, uint64_t bytes, uint64_t limit) {
  return offset <= limit && bytes <= limit - offset;
}

}  // namespace braid::window
