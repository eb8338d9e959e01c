// A rank's process as the watch sees it: what core learned of it at init (core/peer_info.h) that
// the peer watch and the hang reports need.
#pragma once

#include <cstdint>

#include "watch/board_server.h"

namespace braid::watch {

struct PeerProcess {
  int32_t pid = 0;                   // in pidSpace
  int32_t cudaDev = -1;              // its GPU, in its process (named in the dead-peer WARN)
  uint64_t hostHash = 0;             // same on ranks of one host (NCCL_HOSTID overrides)
  uint64_t pidSpace = 0;             // same where pids mean the same process; 0: unknown
  BoardServerContact boardServer{};  // where its process serves its progress boards, and the secret that opens it
};

}  // namespace braid::watch
