// Older net plugin tables (v10 down to v6) seen as the current one (v11), so that everything above
// drives one shape. What each shim adds or drops is in docs/net-plugin-abi.md §1.1: v10 and older
// initialize once per process (counted), v10 takes the traffic class at connect, v9 and older have
// no phandle, v8 and older move int sizes (messages up to 1 GiB) and know fewer properties, v7 and
// older register int sizes, v6 has no device offload at all.
//
// One plugin per version per process: the shims keep the wrapped table in a static, as NCCL's do
// (the loader refuses a second plugin of a version already wrapped).
#pragma once

#include <nccl_net.h>

namespace braid::net {

const ncclNet_v11_t* shimV10(const ncclNet_v10_t* plugin);
const ncclNet_v11_t* shimV9(const ncclNet_v9_t* plugin);
const ncclNet_v11_t* shimV8(const ncclNet_v8_t* plugin);
const ncclNet_v11_t* shimV7(const ncclNet_v7_t* plugin);
const ncclNet_v11_t* shimV6(const ncclNet_v6_t* plugin);

}  // namespace braid::net
