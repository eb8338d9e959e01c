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

}  // namespace braid
