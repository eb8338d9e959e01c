#include "util/params_doc.h"

#include <string_view>

#include "util/params.h"

namespace braid {

namespace {

// Offset of the first line of `document` (at or after `from`) that is exactly `marker` (a trailing
// '\r' is tolerated for files edited on Windows), or npos.
size_t findMarkerLine(std::string_view document, std::string_view marker, size_t from) {
  size_t pos = from;
  while (pos <= document.size()) {
    size_t end = document.find('\n', pos);
    std::string_view line = document.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line == marker) return pos;
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return std::string_view::npos;
}

// [begin, end) of the section between the marker lines.
bool locateSection(const std::string& document, size_t* begin, size_t* end) {
  size_t beginLine = findMarkerLine(document, kParamsBeginMarker, 0);
  if (beginLine == std::string::npos) return false;
  size_t afterBegin = document.find('\n', beginLine);
  if (afterBegin == std::string::npos) return false;
  ++afterBegin;
  size_t endLine = findMarkerLine(document, kParamsEndMarker, afterBegin);
  if (endLine == std::string::npos) return false;
  *begin = afterBegin;
  *end = endLine;
  return true;
}

// A table cell may not contain '|' or a line break.
std::string markdownCell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

bool extractParamsSection(const std::string& document, std::string* section) {
  size_t begin = 0;
  size_t end = 0;
  if (!locateSection(document, &begin, &end)) return false;
  *section = document.substr(begin, end - begin);
  return true;
}

bool replaceParamsSection(const std::string& document, const std::string& section, std::string* out) {
  size_t begin = 0;
  size_t end = 0;
  if (!locateSection(document, &begin, &end)) return false;
  *out = document.substr(0, begin) + section + document.substr(end);
  return true;
}

std::string paramsMarkdownTable() {
  std::string table = "| Variable | Default | Description |\n|---|---|---|\n";
  for (int i = 0; i < static_cast<int>(ParamId::kCount); ++i) {
    const ParamInfo& info = paramInfo(static_cast<ParamId>(i));
    std::string def = info.defaultText[0] == '\0' ? "(unset)" : "`" + markdownCell(info.defaultText) + "`";
    table += "| `" + markdownCell(info.name) + "` | " + def + " | " + markdownCell(info.description) + " |\n";
  }
  return table;
}

}  // namespace braid
