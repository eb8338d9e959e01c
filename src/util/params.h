// Typed registry of the NCCL_* variables Braid honours (the list is params.def).
//
// A value comes from, in order: the environment; the file named by NCCL_CONF_FILE (if set),
// else ~/.nccl.conf, then /etc/nccl.conf (lines `NAME=value`, '#' starts a comment); the default.
// The environment always wins. Values are read once, on first use, and cached; a malformed value
// (e.g. "12abc" for an integer) gets one WARN naming the variable and the default is used.
#pragma once

#include <cstdint>
#include <string>

namespace braid {

enum class ParamType { kInt, kString };

enum class ParamId : int {
#define BRAID_PARAM(id, type, name, def, desc) k##id,
#include "util/params.def"
#undef BRAID_PARAM
  kCount
};

struct ParamInfo {
  ParamId id;
  ParamType type;
  const char* name;         // "NCCL_DEBUG"
  const char* defaultText;  // default rendered as text
  const char* description;
};

// The static description of a parameter (for documentation and tests).
const ParamInfo& paramInfo(ParamId id);

// Typed accessors. Thread safe; cached after the first call for each id.
int64_t paramInt(ParamId id);
const std::string& paramString(ParamId id);

// True when the variable was given (environment or config file) and well formed.
bool paramIsSet(ParamId id);

// Where the value came from: "environment", a config file path, or "default".
std::string paramSource(ParamId id);

// Forget cached values and config files so that the next access reads everything again. For
// tests and ncclResetDebugInit; not safe against concurrent accessors.
void paramsReset();

// Markdown table of every parameter (name, default, description) for the README.
std::string paramsMarkdownTable();

}  // namespace braid
