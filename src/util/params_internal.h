// Registry entry points for util itself (the logger) and for tests. Not for other layers.
//
// Why the logger needs a separate door: the registry reports problems (a malformed integer, a bad
// config-file line) and, with NCCL_DEBUG_SUBSYS=ENV, the values it reads, through logMessage. The
// logger reads NCCL_DEBUG* through the registry while it initializes. If those reports were
// logged on the spot, the first log message would re-enter the logger's initialization (deadlock
// or endless recursion). So the registry never logs while it holds its lock; it queues its
// reports, and the public accessors flush the queue after unlocking. The logger reads its three
// variables with paramStringQuiet, which leaves the queue alone, and calls paramsFlushReports
// once its own settings are published, when logging can no longer recurse into initialization.
#pragma once

#include <string>

#include "util/params.h"

namespace braid {

// paramString without emitting anything: reports stay queued until paramsFlushReports.
const std::string& paramStringQuiet(ParamId id);

// Emits the queued reports through logMessage. Must not be called with registry or logger
// initialization locks held.
void paramsFlushReports();

// Replaces "/etc/nccl.conf" (tests point it at a scratch file so that the machine's own file
// cannot change their results). Survives paramsReset; takes effect at the next load.
void paramsSetSystemConfigPath(const std::string& path);

}  // namespace braid
