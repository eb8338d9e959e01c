// The set of live communicators of this process, so that a stale or foreign ncclComm_t is
// recognized without dereferencing it.
#pragma once

#include <functional>

struct ncclComm;

namespace braid {

void commRegistryAdd(const ncclComm* comm);
void commRegistryRemove(const ncclComm* comm);
bool commRegistryContains(const ncclComm* comm);
// Calls fn on every live communicator with the registry locked, so that none is freed meanwhile
// (freeComm removes it first). fn must be quick and must not call the registry.
void commRegistryForEach(const std::function<void(ncclComm*)>& fn);

}  // namespace braid
