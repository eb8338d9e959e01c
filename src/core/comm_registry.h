// The set of live communicators of this process, so that a stale or foreign ncclComm_t is
// recognized without dereferencing it.
#pragma once

struct ncclComm;

namespace braid {

void commRegistryAdd(const ncclComm* comm);
void commRegistryRemove(const ncclComm* comm);
bool commRegistryContains(const ncclComm* comm);

}  // namespace braid
