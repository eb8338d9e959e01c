// Parsers of the bootstrap's wire messages (see wire.h). Sizes are checked before any copy, and
// every field that later indexes, divides or sizes something is range-checked here.
#include "bootstrap/wire.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace braid {
namespace {

std::string formatText(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string formatText(const char* fmt, ...) {
  char buffer[256];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return buffer;
}

// Copies a fixed-size struct out of the received bytes, or says why it cannot.
template <typename T>
bool copyExact(const uint8_t* data, size_t size, T* out, const char* what, std::string* why) {
  if (data == nullptr || size != sizeof(T)) {
    *why = formatText("a %zu-byte %s, expected %zu bytes", data == nullptr ? size_t{0} : size, what, sizeof(T));
    return false;
  }
  std::memcpy(out, data, sizeof(T));
  return true;
}

std::string checkInFieldProblem(const RootCheckIn& in) {
  if (in.kind != static_cast<uint32_t>(CheckInKind::kMember) &&
      in.kind != static_cast<uint32_t>(CheckInKind::kStitch)) {
    return formatText("unknown check-in kind %u", in.kind);
  }
  if (in.nranks < 1 || in.nranks > kBootstrapMaxRanks) {
    return formatText("nranks=%d is outside 1-%d", in.nranks, kBootstrapMaxRanks);
  }
  if (in.nroots < 1 || in.nroots > in.nranks || in.root < 0 || in.root >= in.nroots) {
    return formatText("id %d of %d does not fit nranks=%d", in.root, in.nroots, in.nranks);
  }
  if (in.rank < 0 || in.rank >= in.nranks) return formatText("rank %d is outside [0, %d)", in.rank, in.nranks);
  if (!socketAddressIsValid(in.listen)) return "its listener address is not IPv4 or IPv6";
  return "";
}

}  // namespace

ncclResult_t parseRootCheckIn(const uint8_t* data, size_t size, RootCheckIn* out, std::string* why) {
  if (!copyExact(data, size, out, "check-in", why)) return ncclInvalidUsage;
  out->host[sizeof(out->host) - 1] = '\0';
  if (out->protocol != kBootstrapProtocol) {
    *why = formatText("bootstrap protocol 0x%x, this library speaks 0x%x", out->protocol, kBootstrapProtocol);
    return ncclInvalidUsage;
  }
  *why = checkInFieldProblem(*out);
  return why->empty() ? ncclSuccess : ncclInvalidUsage;
}

ncclResult_t parseRootReplyFrame(const uint8_t* data, size_t size, RootReply* out, ncclResult_t* result,
                                 std::string* why) {
  uint64_t length = 0;
  if (data == nullptr || size != sizeof(length) + sizeof(RootReply)) {
    *why = formatText("a %zu-byte reply frame, expected %zu bytes", data == nullptr ? size_t{0} : size,
                      sizeof(length) + sizeof(RootReply));
    return ncclInternalError;
  }
  std::memcpy(&length, data, sizeof(length));
  std::memcpy(out, data + sizeof(length), sizeof(RootReply));
  out->message[sizeof(out->message) - 1] = '\0';
  if (length != sizeof(RootReply)) {
    *why = formatText("a %llu-byte reply, expected %zu: mismatched Braid builds?",
                      static_cast<unsigned long long>(length), sizeof(RootReply));
    return ncclInternalError;
  }
  const bool known = out->result >= ncclSuccess && out->result < ncclNumResults;
  *result = known ? static_cast<ncclResult_t>(out->result) : ncclInternalError;
  return ncclSuccess;
}

ncclResult_t parsePeerHello(const uint8_t* data, size_t size, int rank, int nranks, PeerHello* out, std::string* why) {
  if (!copyExact(data, size, out, "hello", why)) return ncclInvalidUsage;
  if (out->protocol != kBootstrapProtocol || out->nranks != nranks || out->rank < 0 || out->rank >= nranks ||
      out->rank == rank) {
    *why = formatText("it says rank %d of %d, protocol 0x%x (this library speaks 0x%x)", out->rank, out->nranks,
                      out->protocol, kBootstrapProtocol);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

ncclResult_t parsePeerMsgHeader(const uint8_t* data, size_t size, PeerMsgHeader* out, std::string* why) {
  if (!copyExact(data, size, out, "message header", why)) return ncclInternalError;
  if (out->kind < static_cast<uint32_t>(PeerMsgKind::kUser) ||
      out->kind > static_cast<uint32_t>(PeerMsgKind::kBroadcast)) {
    *why = formatText("unknown message kind %u", out->kind);
    return ncclInternalError;
  }
  return ncclSuccess;
}

}  // namespace braid
