// The built-in socket network as an ncclNet_v11_t table named "Socket" (include/nccl_net.h): the
// same interface as an external plugin, so the rest of Braid drives every network one way. Its
// devices are the usable interfaces under NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY, one per
// interface name; host memory only (NCCL_PTR_HOST); one receive per irecv (maxRecvs 1).
#pragma once

#include <nccl_net.h>

namespace braid::net {

const ncclNet_v11_t& socketNetPlugin();

}  // namespace braid::net
