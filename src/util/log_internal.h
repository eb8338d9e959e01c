// Pieces of the logger shared between its source files and exposed to unit tests. Not for other
// layers: they use log.h.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "util/log.h"

namespace braid {

// NCCL_DEBUG text to a level, case-insensitive. Empty means kNone. Anything else that is not
// VERSION, WARN, INFO, ABORT or TRACE gives ncclInvalidArgument and leaves *level untouched.
[[nodiscard]] ncclResult_t parseLogLevel(std::string_view text, LogLevel* level);

// NCCL_DEBUG_SUBSYS text to a mask: comma-separated names (case-insensitive, blanks around names
// ignored), a leading '^' inverts the result. Unknown names are skipped, listed comma-separated
// in *unknown, and make the result ncclInvalidArgument; *mask is still the mask of the known
// names so that the caller can carry on with it.
[[nodiscard]] ncclResult_t parseLogSubsys(std::string_view text, uint64_t* mask, std::string* unknown);

// The accepted subsystem names, comma-separated, for messages.
const char* logSubsysNames();

// NCCL_DEBUG_FILE pattern with %h replaced by `host` and %p by `pid`; %% gives '%'. Any other
// '%' sequence is kept as written.
std::string expandLogFilePath(std::string_view pattern, std::string_view host, long pid);

// This host's name up to the first '.', as NCCL prints it ("unknown" if gethostname fails).
std::string shortHostName();

// Kernel thread id of the caller (what `ps -L` and gdb show), not pthread_self().
long currentThreadId();

// Lets logVersionBannerOnce print again (called by logReset, which starts a new configuration).
void logBannerRearm();

}  // namespace braid
