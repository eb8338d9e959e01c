// braid-perf collectives: the nccl-tests style sweep. Before the rows of each (type, op), `warmup`
// calls at its largest size; then for each row (type x op x size), every rank
// times `iters` out-of-place calls after `warmup` untimed ones (wall clock from the first launch
// to the synchronization of its stream, divided by iters), then, with -c 1, loads the pattern
// inputs, poisons the receive buffer, runs once and counts wrong elements (coll_check.h); then the
// same in place. A thread that drives several GPUs wraps each round of calls in
// ncclGroupStart/End, and creates its communicators inside one group.
#pragma once

#include "options.h"

namespace braidperf {

// Runs opt's sweep on opt.layout and prints the rows as they complete (nccl-tests columns, or csv
// rows with --csv). Returns the exit status: 0 when every rank succeeded and nothing was wrong.
int runCollBench(const Options& opt);

}  // namespace braidperf
