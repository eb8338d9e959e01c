// Runs the ranks of a benchmark as processes x threads x GPUs per thread (Layout) and streams their
// results back step by step.
//
// A worker is one thread that drives `gpus` consecutive ranks. Each worker emits one record (a
// vector of doubles) per step; once every worker has emitted step k, onStep(k, records) runs in
// the launching process, in step order, with the records in worker order. So a crash at step k
// still leaves steps 0..k-1 reported.
//
// Unique ids: IdSource(cycle) gives every worker the same id for the same cycle. The first worker
// of process 0 to ask makes it with makeId; other processes read it from a pipe; threads of one
// process share it.
//
// Failures: a worker that returns false fails the run. Processes: the parent watches every child;
// when one fails (or none reports for timeoutSec seconds) the others get a few seconds to finish
// and are then killed, so a peer stuck in a collective does not hang the benchmark. Threads: the
// process waits the same grace time for the others and then exits with status 1.
#pragma once

#include <nccl.h>

#include <functional>
#include <vector>

#include "options.h"

namespace braidperf {

struct WorkerInfo {
  int worker;       // 0 .. layout.workers()-1
  int firstRank;    // ranks firstRank .. firstRank+gpus-1
  int firstDevice;  // their CUDA devices: firstDevice .. firstDevice+gpus-1 (Layout::deviceOf)
  int gpus;
  int nranks;
};

using IdSource = std::function<bool(int cycle, ncclUniqueId* id)>;
using IdMaker = std::function<bool(ncclUniqueId* id)>;
using Emit = std::function<bool(const std::vector<double>& record)>;
using WorkerBody = std::function<bool(const WorkerInfo& info, const IdSource& ids, const Emit& emit)>;
using OnStep = std::function<void(int step, const std::vector<std::vector<double>>& perWorker)>;

struct LaunchConfig {
  Layout layout;
  int timeoutSec = 0;  // 0: wait forever for the next record
  int graceSec = 10;   // after a failure, how long the other workers may take before they are killed
};

// Runs `body` on every worker. Returns true when every worker succeeded.
bool runWorkers(const LaunchConfig& config, const WorkerBody& body, const OnStep& onStep, const IdMaker& makeId);

}  // namespace braidperf
