// Small text helpers shared by the logging and parameter code: trimming, case-insensitive
// comparison, strict integer parsing. No allocation beyond the std::string results, no logging
// (so that the logger itself may use them).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace braid {

// `text` without leading and trailing spaces, tabs, CR and LF.
std::string_view trimWhitespace(std::string_view text);

// ASCII case-insensitive equality ("info" == "INFO").
bool equalsIgnoreCase(std::string_view a, std::string_view b);

// Parses a whole string as a signed 64-bit integer: optional '-', then decimal digits or 0x/0X and
// hex digits. Surrounding whitespace is allowed; anything else ("12abc", "", "0x", "--1") and
// values outside int64 give ncclInvalidArgument and leave *value untouched.
[[nodiscard]] ncclResult_t parseInt64(std::string_view text, int64_t* value);

// ncclGetErrorString's text for `result` (NCCL's wording, which users' logs and scripts match on),
// for the layers below the API that name a result in a WARN.
const char* resultText(ncclResult_t result);

// What a peer sent (a host name, a diagnosis, any bytes off the wire), made safe to print in a log
// line: control characters, DEL and bytes >= 0x80 become "\xNN", so a peer cannot start a forged log
// line or send terminal escape codes; at most `maxBytes` input bytes are kept (then "..."), and the
// input stops at its first NUL. Every log site that prints a peer-supplied string goes through it.
constexpr size_t kPeerTextMaxBytes = 128;
std::string peerText(std::string_view text, size_t maxBytes = kPeerTextMaxBytes);
// The same for a fixed-size char field that may lack its terminating NUL.
std::string peerText(const char* field, size_t fieldBytes, size_t maxBytes = kPeerTextMaxBytes);

}  // namespace braid
