// The device communicator's structures as each NCCL release lays them out (core/dev_comm_layouts.h):
// which release a program's ncclDevCommRequirements come from, what they ask for, and the
// ncclDevComm written back in the layout the program's kernels were compiled to read.
//
// Releases are told apart by the requirements' header: none (NCCL 2.28, whose structure starts with
// the resource list), or NCCL_API_MAGIC with the `version` of the header the program was compiled
// with (2.29 and later; Braid's own header writes 2.32's layout with its nccl.h's version).
#pragma once

#include <nccl.h>
#include <nccl_device/host.h>

#include "window/dev_comm.h"

namespace braid {

enum class DevCommRelease { k22809, k22902, k22907, k23007, k23203 };
const char* releaseName(DevCommRelease release);

// The layout a program's kernels read: its release, and the requirements' `version` (2.29 and
// later; 0 for 2.28), which the layouts with a header keep.
struct DevCommLayout {
  DevCommRelease release = DevCommRelease::k23203;
  unsigned int version = 0;
};

// The first NCCL version whose GIN programs Braid serves (nccl_device/gin_proxy.h).
constexpr unsigned int kFirstGinVersion = NCCL_VERSION(2, 32, 0);

// Reads `reqs` into `ask` and the layout the program expects into *layout. A layout Braid does not
// know, or a request for what it does not have (multicast, GIN, CFT, hybrid barriers across LSA
// teams), is ncclInvalidUsage with a WARN that names it; a negative count or a cyclic list
// ncclInvalidArgument.
[[nodiscard]] ncclResult_t readDevCommRequirements(const void* reqs, int nranks, int lsaSize, DevCommLayout* layout,
                                                   window::DevCommAsk* ask);

// Writes the device communicator `made` into `out` in `layout` (every other byte zero).
void writeDevComm(const DevCommLayout& layout, const window::DevCommMade& made, void* out);

// The resource window of a device communicator of any release (2.30 and later start with
// NCCL_API_MAGIC; earlier ones with the rank).
ncclWindow_t resourceWindowOf(const void* devComm);

}  // namespace braid
