// Which process a pid names. A pid means one process only within one pid namespace of one boot:
// its "pid space", the hash of the boot id and the namespace (/proc/<pid>/ns/pid). Processes in
// containers with their own pid namespaces see each other's pids differently, or not at all, so a
// process is named by (pid space, pid in that space), as it sees itself. Read from /proc; no CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {

// FNV-1a: stable across processes and builds, which std::hash does not promise.
uint64_t hashBytes(const void* data, size_t size);

// This process's pid space; 0 when /proc does not tell.
uint64_t localPidSpace();

// The pid space of process `pid` (a pid as this process's namespace numbers it), the value that
// process's localPidSpace returns; 0 when unknown (gone, or its /proc entry is not readable here).
uint64_t pidSpaceOf(int pid);

// The pid that process `pid` (as this namespace numbers it) has in its own, innermost namespace
// (the last entry of NSpid in /proc/<pid>/status), what its getpid() returns; 0 when unknown.
int32_t innermostPidOf(int pid);

}  // namespace braid
