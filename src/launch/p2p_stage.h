// Staged sends of a group (in-place AlltoAll; plan/p2p_stage.h explains the schedule): the batches
// a group's operations run in, with each batch's copies into the staging memory.
#pragma once

#include <vector>

#include "launch/p2p_task.h"

namespace braid {

struct P2pStageBatch {
  // The operations with this batch's peers, in issue order; its staged sends read the staging
  // memory. (The group's self operations run in the first batch, as pairs.)
  std::vector<P2pTask> tasks;
  // Its copies into the staging memory, as self pairs: copyFrom[i] (the user's buffer, a send) to
  // copyTo[i] (the memory, a receive), each of copyFrom[i].bytes.
  std::vector<P2pTask> copyFrom;
  std::vector<P2pTask> copyTo;
};

struct P2pStaging {
  std::vector<P2pStageBatch> batches;  // empty: the group stages nothing
};

}  // namespace braid
