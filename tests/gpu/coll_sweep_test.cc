// Correctness sweeps of the five collectives on 2 and 4 GPUs of one host, through the public API only:
// every datatype x op x count x in/out of place x root, with ranks as one process per GPU, as one
// thread per GPU, and as one thread driving every GPU (ncclCommInitAll + grouped calls); again,
// reduced, with the SHM transport and with each protocol forced; real-valued floats; buffers
// aligned only to the element; a chain of dependent operations with no synchronization between
// them; a stream created with cudaStreamNonBlocking.
//
// Every output (and kGuardBytes after it) is poisoned before each operation; inputs are random
// and different per rank (seeded: BRAID_SWEEP_SEED=<n> replays a run, the seed is printed on
// failure); expectations and tolerances are stated in coll_test_util.h. A mismatch prints
// (collective, type, op, count, in place, root, rank, index, expected, got).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coll_sweep_fixture.h"

namespace {

using namespace collsweep;  // NOLINT(google-build-using-namespace): the sweeps' harness

TEST_P(CollSweep, AllReduceProcesses) { full(Coll::kAllReduce, Mode::kProcesses); }
TEST_P(CollSweep, AllReduceThreads) { full(Coll::kAllReduce, Mode::kThreads); }
TEST_P(CollSweep, AllReduceOneThread) { full(Coll::kAllReduce, Mode::kOneThread); }
TEST_P(CollSweep, BroadcastProcesses) { full(Coll::kBroadcast, Mode::kProcesses); }
TEST_P(CollSweep, BroadcastThreads) { full(Coll::kBroadcast, Mode::kThreads); }
TEST_P(CollSweep, BroadcastOneThread) { full(Coll::kBroadcast, Mode::kOneThread); }
TEST_P(CollSweep, ReduceProcesses) { full(Coll::kReduce, Mode::kProcesses); }
TEST_P(CollSweep, ReduceThreads) { full(Coll::kReduce, Mode::kThreads); }
TEST_P(CollSweep, ReduceOneThread) { full(Coll::kReduce, Mode::kOneThread); }
TEST_P(CollSweep, AllGatherProcesses) { full(Coll::kAllGather, Mode::kProcesses); }
TEST_P(CollSweep, AllGatherThreads) { full(Coll::kAllGather, Mode::kThreads); }
TEST_P(CollSweep, AllGatherOneThread) { full(Coll::kAllGather, Mode::kOneThread); }
TEST_P(CollSweep, ReduceScatterProcesses) { full(Coll::kReduceScatter, Mode::kProcesses); }
TEST_P(CollSweep, ReduceScatterThreads) { full(Coll::kReduceScatter, Mode::kThreads); }
TEST_P(CollSweep, ReduceScatterOneThread) { full(Coll::kReduceScatter, Mode::kOneThread); }

TEST_P(CollSweep, AllCollsShmTransport) { reducedWithEnv({{"NCCL_P2P_DISABLE", "1"}}); }
TEST_P(CollSweep, AllCollsProtoLL) { reducedWithEnv({{"NCCL_PROTO", "LL"}}); }
TEST_P(CollSweep, AllCollsProtoLL128) { reducedWithEnv({{"NCCL_PROTO", "LL128"}}); }
TEST_P(CollSweep, AllCollsProtoSimple) { reducedWithEnv({{"NCCL_PROTO", "Simple"}}); }
// Small LL operations go Direct by default where every pair is NVLink; these keep both algorithms
// covered at every size (Direct: 1 MiB + 3 takes several chunks per connection).
TEST_P(CollSweep, AllCollsRingLL) { reducedWithEnv({{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}}); }
TEST_P(CollSweep, AllCollsDirect) {
  if (colltest::againstReference()) GTEST_SKIP() << "Direct is Braid's algorithm; NCCL does not know the name";
  reducedWithEnv({{"NCCL_ALGO", "Direct"}});
}

// Tree AllReduce forced on one host (NCCL_ALGO=allreduce:tree), as NCCL allows: the host's GPUs
// form a chain (topo's singleHostTrees), over NVLink P2P, with LL and with Simple.
TEST_P(CollSweep, AllReduceTreeOnOneHost) {
  ScopedSetenv algo("NCCL_ALGO", "allreduce:tree");
  const std::vector<Case> cases = tierSweepOf({Coll::kAllReduce}, nranks());
  for (const char* proto : {"LL", "Simple"}) {
    SCOPED_TRACE(proto);
    ScopedSetenv forced("NCCL_PROTO", proto);
    sweep(Mode::kProcesses, cases, cudaStreamDefault);
  }
}

// Random reals on float and double, every op: relative tolerance 1e-5 (float) / 1e-12 (double)
// times nranks, Max/Min exact.
TEST_P(CollSweep, RealValuedFloats) {
  std::vector<Case> cases;
  for (Coll coll : {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter}) {
    Shape shape;
    for (ncclDataType_t t : {ncclFloat32, ncclFloat64}) {
      for (ncclRedOp_t op : allOps()) shape.typeOps.emplace_back(t, op);
    }
    shape.counts = {1023, kMiB + 3};
    shape.kind = InputKind::kReal;
    addCases(coll, nranks(), shape, &cases);
  }
  sweep(Mode::kProcesses, cases);
}

TEST_P(CollSweep, BuffersAlignedOnlyToTheElement) { sweep(Mode::kProcesses, casesAlignedOnlyToTheElement(nranks())); }

// Every collective on a stream created with cudaStreamNonBlocking, from processes and from one
// thread driving every GPU.
TEST_P(CollSweep, NonBlockingStream) {
  std::vector<Case> cases;
  for (Coll coll : allColls()) {
    Shape shape;
    shape.typeOps = {{ncclFloat32, ncclSum}, {ncclInt32, ncclMax}};
    shape.counts = {4097, kMiB + 3};
    addCases(coll, nranks(), shape, &cases);
  }
  {
    SCOPED_TRACE("one process per GPU");
    sweep(Mode::kProcesses, cases, cudaStreamNonBlocking);
  }
  {
    SCOPED_TRACE("one thread driving every GPU");
    sweep(Mode::kOneThread, cases, cudaStreamNonBlocking);
  }
}

// Six dependent collectives back to back on one stream without synchronizing in between.
TEST_P(CollSweep, ChainWithoutSyncProcesses) { chain(Mode::kProcesses); }
TEST_P(CollSweep, ChainWithoutSyncOneThread) { chain(Mode::kOneThread); }

INSTANTIATE_TEST_SUITE_P(Gpus, CollSweep, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

}  // namespace
