#include "util/text.h"

#include <algorithm>
#include <limits>

namespace braid {

namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

char toLowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Value of one digit in `base` (10 or 16), or -1.
int digitValue(char c, int base) {
  int v = -1;
  if (c >= '0' && c <= '9') {
    v = c - '0';
  } else if (base == 16 && c >= 'a' && c <= 'f') {
    v = c - 'a' + 10;
  } else if (base == 16 && c >= 'A' && c <= 'F') {
    v = c - 'A' + 10;
  }
  return v < base ? v : -1;
}

}  // namespace

std::string_view trimWhitespace(std::string_view text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && isSpace(text[begin])) ++begin;
  while (end > begin && isSpace(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (toLowerAscii(a[i]) != toLowerAscii(b[i])) return false;
  }
  return true;
}

ncclResult_t parseInt64(std::string_view text, int64_t* value) {
  std::string_view s = trimWhitespace(text);
  bool negative = false;
  if (!s.empty() && s[0] == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return ncclInvalidArgument;

  // Accumulate the magnitude as unsigned so that INT64_MIN ("-9223372036854775808") parses
  // without signed overflow; the limit depends on the sign.
  const uint64_t limit = negative ? uint64_t{1} << 63 : uint64_t{std::numeric_limits<int64_t>::max()};
  uint64_t magnitude = 0;
  for (char c : s) {
    int d = digitValue(c, base);
    if (d < 0) return ncclInvalidArgument;
    if (magnitude > (limit - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) return ncclInvalidArgument;
    magnitude = magnitude * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (negative) {
    // Two's complement negation of the magnitude is exactly the negative value, INT64_MIN included.
    *value = static_cast<int64_t>(~magnitude + 1);
  } else {
    *value = static_cast<int64_t>(magnitude);
  }
  return ncclSuccess;
}

const char* resultText(ncclResult_t result) {
  // The same strings as NCCL, because users' logs and scripts match on them.
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    case ncclTimeout:
      return "timeout";
    default:
      return "unknown result code";
  }
}

std::string rankList(const std::vector<int>& ranks, RankListFormat format) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    if (format.collapseRuns) {
      while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) j++;
    }
    if (i > 0) out += format.separator;
    out += std::to_string(ranks[i]);
    if (j > i) {
      out += j == i + 1 ? format.separator : "-";
      out += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return out;
}

std::string peerText(std::string_view text, size_t maxBytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  size_t end = std::min(text.find('\0'), text.size());
  const bool cut = end > maxBytes;
  end = std::min(end, maxBytes);
  out.reserve(end + 4);
  for (size_t i = 0; i < end; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (cut) out += "...";
  return out;
}

std::string peerText(const char* field, size_t fieldBytes, size_t maxBytes) {
  return peerText(std::string_view(field, fieldBytes), maxBytes);
}

}  // namespace braid
