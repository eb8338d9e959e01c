// Small text helpers shared by the logging and parameter code: trimming, case-insensitive
// comparison, strict integer parsing, lists of rank numbers for messages. No allocation beyond the std::string results,
// no logging (so that the logger itself may use them).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// How rankList writes a list: what goes between entries, and whether a run of three or more
// consecutive numbers is shortened to "first-last" (a run of two stays "a<separator>b").
struct RankListFormat {
  std::string_view separator = ",";
  bool collapseRuns = false;
};

// Rank numbers (or channels, devices: any small integers) for a message, in the order given:
// {0, 1, 2, 3, 5, 7, 8} is "0,1,2,3,5,7,8", or "0-3, 5, 7, 8" with {", ", true}. Runs are found
// between neighbours only, so sort first for the shortest text.
std::string rankList(const std::vector<int>& ranks, RankListFormat format = {});

// What a peer sent (a host name, a diagnosis, any bytes off the wire), made safe to print in a log
// line: control characters, DEL and bytes >= 0x80 become "\xNN", so a peer cannot start a forged log
// line or send terminal escape codes; at most `maxBytes` input bytes are kept (then "..."), and the
// input stops at its first NUL. Every log site that prints a peer-supplied string goes through it.
constexpr size_t kPeerTextMaxBytes = 128;
std::string peerText(std::string_view text, size_t maxBytes = kPeerTextMaxBytes);
// The same for a fixed-size char field that may lack its terminating NUL.
std::string peerText(const char* field, size_t fieldBytes, size_t maxBytes = kPeerTextMaxBytes);

}  // namespace braid
