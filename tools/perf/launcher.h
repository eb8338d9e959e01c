// Runs one function per rank, as processes (fork, one GPU each) or threads, and collects a vector
// of doubles from each rank. The unique id travels from rank 0 to the others through pipes
// (processes) or memory (threads); `idsNeeded` ids are made, one per cycle.
#pragma once

#include <nccl.h>

#include <functional>
#include <vector>

#include "options.h"

namespace braidperf {

// Gives the rank the id for cycle `cycle` (blocking until rank 0 made it).
using IdSource = std::function<bool(int cycle, ncclUniqueId* id)>;
// Body of one rank: returns false on failure; appends its samples to `samples`.
using RankBody = std::function<bool(int rank, int nranks, const IdSource& ids, std::vector<double>* samples)>;

// Runs `body` on every rank; fills perRank[rank] with its samples. False if any rank failed.
bool runRanks(RankMode mode, int nranks, int idsNeeded, const RankBody& body,
              std::vector<std::vector<double>>* perRank);

}  // namespace braidperf
