// The host functions NCCL added in 2.29-2.32 that do not need windows or the device API to answer:
// ncclCommQueryProperties (every layout by size), the teams, the 2.30 ncclConfig_t that PyTorch 2.15
// passes, and the functions whose feature Braid lacks, which must fail with a WARN naming it rather
// than succeed doing nothing.
#include <gtest/gtest.h>
#include <nccl_device/host.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "child_comm_test_util.h"
#include "gpu_test_util.h"

namespace {

using gputest::runInChild;

// What NCCL_COMM_PROPERTIES_INITIALIZER gives (the macro names only the first three fields, which
// -Wextra warns about), with the rest poisoned.
ncclCommProperties_t propertiesHeader(size_t size) {
  ncclCommProperties_t p;
  std::memset(&p, 0x5a, sizeof(p));
  p.size = size;
  p.magic = NCCL_API_MAGIC;
  p.version = NCCL_VERSION_CODE;
  return p;
}

// Exported by NCCL's library (and Braid's) without a declaration in its Linux header.
struct ncclGinOutboxHandle;
extern "C" ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int sizeLog2, ncclGinOutboxHandle* outHandle,
                                                       ncclDevResourceRequirements_t* outReq);

bool lastErrorNames(const char* text) { return std::string(ncclGetLastError(nullptr)).find(text) != std::string::npos; }

// Every rank of one process (ncclCommInitAll): properties and teams agree with the communicator.
int checkPropertiesAndTeams(ncclComm_t comm, int nranks, int rank) {
  ncclCommProperties_t props = propertiesHeader(sizeof(ncclCommProperties_t));
  CHILD_NCCL(ncclCommQueryProperties(comm, &props));
  CHILD_EXPECT(props.rank == rank && props.nRanks == nranks && props.cudaDev == rank);
  CHILD_EXPECT(props.nvmlDev >= 0);                                // NVML is there on the GPU machines
  CHILD_EXPECT(props.deviceApiSupport && !props.multimemSupport);  // cuMem on every GPU machine
  CHILD_EXPECT(props.hostRmaSupport);                              // one host, one RMA context by default
  // GIN: the proxy transport, for a caller built against 2.32 (this one).
  CHILD_EXPECT(props.ginType == NCCL_GIN_TYPE_PROXY && props.railedGinType == NCCL_GIN_TYPE_PROXY);
  CHILD_EXPECT(props.ginConnectionType == NCCL_GIN_CONNECTION_FULL);
  CHILD_EXPECT(props.nLsaTeams == 1);  // one host
  CHILD_EXPECT(props.commHash != 0);
  for (int type = 0; type < 64; ++type) CHILD_EXPECT(props.ginSupport[type] == (type == NCCL_GIN_TYPE_PROXY));
  CHILD_EXPECT(!props.cftSupport && !props.cftMulticastSupport && !props.cftCountedSupport);

  // A 2.30 caller's 56-byte struct: nothing written past it, and no GIN (its GIN programs are
  // refused).
  alignas(8) unsigned char small[sizeof(ncclCommProperties_t)];
  std::memset(small, 0xee, sizeof(small));
  ncclCommProperties_t head = propertiesHeader(56);
  head.version = NCCL_VERSION(2, 30, 7);
  std::memcpy(small, &head, offsetof(ncclCommProperties_t, rank));
  CHILD_NCCL(ncclCommQueryProperties(comm, reinterpret_cast<ncclCommProperties_t*>(small)));
  CHILD_EXPECT(reinterpret_cast<ncclCommProperties_t*>(small)->nRanks == nranks);
  CHILD_EXPECT(reinterpret_cast<ncclCommProperties_t*>(small)->ginType == NCCL_GIN_TYPE_NONE);
  for (size_t i = 56; i < sizeof(small); ++i) CHILD_EXPECT(small[i] == 0xee);

  ncclCommProperties_t bad = propertiesHeader(sizeof(ncclCommProperties_t));
  bad.magic = 0;
  CHILD_EXPECT(ncclCommQueryProperties(comm, &bad) == ncclInvalidArgument);
  CHILD_EXPECT(ncclCommQueryProperties(comm, nullptr) == ncclInvalidArgument);

  const ncclTeam_t world = ncclTeamWorld(comm);
  CHILD_EXPECT(world.nRanks == nranks && world.rank == rank && world.stride == 1);
  const ncclTeam_t lsa = ncclTeamLsa(comm);
  CHILD_EXPECT(lsa.nRanks == nranks && lsa.rank == rank && lsa.stride == 1);
  const ncclTeam_t rail = ncclTeamRail(comm);
  CHILD_EXPECT(rail.nRanks == 1 && rail.rank == 0 && rail.stride == nranks);
  for (int r = 0; r < nranks; ++r) {
    CHILD_EXPECT(ncclTeamRankToWorld(comm, world, r) == r);
    CHILD_EXPECT(ncclTeamRankToLsa(comm, world, r) == r);
  }
  return 0;
}

TEST(HostApi232, QueryPropertiesAndTeams) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, runInChild([n] {
              std::vector<ncclComm_t> comms(n, nullptr);
              CHILD_NCCL(ncclCommInitAll(comms.data(), n, nullptr));
              for (int r = 0; r < n; ++r) {
                if (checkPropertiesAndTeams(comms[r], n, r) != 0) return 1;
              }
              for (ncclComm_t c : comms) CHILD_NCCL(ncclCommDestroy(c));
              return 0;
            }));
}

// What needs GIN Braid lacks, CFT or TLS fails (never a silent success), naming what is
// missing; so do one-sided operations before any window, and lookups of what is no window; the
// multicast lookups answer NULL, as NCCL does without multicast.
TEST(HostApi232, MissingFeaturesFailNamingThem) {
  EXPECT_EQ(
      0, runInChild([] {
        CHILD_CUDA(cudaSetDevice(0));
        ncclComm_t comm = nullptr;
        CHILD_NCCL(ncclCommInitAll(&comm, 1, nullptr));
        cudaStream_t stream = nullptr;
        CHILD_CUDA(cudaStreamCreate(&stream));
        int* buf = nullptr;
        CHILD_CUDA(cudaMalloc(&buf, 64));
        ncclWindow_t fakeWin = reinterpret_cast<ncclWindow_t>(buf);

        // No window registered yet: one-sided operations have no signal memory, and a pointer that
        // is no window is refused by every lookup.
        CHILD_EXPECT(ncclPutSignal(buf, 4, ncclInt32, 0, fakeWin, 0, 0, 0, 0, comm, stream) == ncclInvalidUsage);
        CHILD_EXPECT(lastErrorNames("one-sided"));
        CHILD_EXPECT(ncclSignal(0, 0, 0, 0, comm, stream) == ncclInvalidUsage);
        ncclWaitSignalDesc_t desc = {1, 0, 0, 0};
        CHILD_EXPECT(ncclWaitSignal(1, &desc, comm, stream) == ncclInvalidUsage);
        void* ptr = buf;
        CHILD_EXPECT(ncclWinGetUserPtr(comm, fakeWin, &ptr) == ncclInvalidArgument && ptr == nullptr);

        ptr = buf;
        CHILD_NCCL(ncclGetLsaMultimemDevicePointer(fakeWin, 0, &ptr));
        CHILD_EXPECT(ptr == nullptr);
        ptr = buf;
        CHILD_EXPECT(ncclGetPeerDevicePointer(fakeWin, 0, 0, &ptr) == ncclInvalidArgument && ptr == nullptr);
        CHILD_EXPECT(lastErrorNames("not a registered window"));

        ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
        reqs.ginCounterCount = 1;
        reqs.ginType = NCCL_GIN_TYPE_GDAKI;  // only the proxy transport is there
        alignas(64) unsigned char devComm[4096];
        CHILD_EXPECT(ncclDevCommCreate(comm, &reqs, reinterpret_cast<ncclDevComm_t*>(devComm)) == ncclInvalidUsage);
        CHILD_EXPECT(lastErrorNames("GIN"));
        ncclDevResourceRequirements_t req;
        CHILD_EXPECT(ncclGinOutboxCreateRequirement(1, 10, nullptr, &req) == ncclInvalidUsage);
        CHILD_EXPECT(lastErrorNames("GIN"));
        CHILD_EXPECT(ncclLLA2ACalcSlots(10, 12) == 20);
        const ncclTeam_t cft = ncclTeamCft(comm, NCCL_CFT_TEAM_FLAT);
        CHILD_EXPECT(cft.nRanks == 0 && lastErrorNames("CFT"));

        ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
        CHILD_NCCL(ncclSetEncryption(&enc));  // plain text
        enc.mode = NCCL_ENCRYPTION_MODE_PSK;
        enc.psk = "secret";  // shorter than NCCL's 32-byte minimum
        CHILD_EXPECT(ncclSetEncryption(&enc) == ncclInvalidArgument && lastErrorNames("config->psk"));
        CHILD_EXPECT(std::string(ncclGetErrorString(ncclTimeout)) == "timeout");

        CHILD_CUDA(cudaFree(buf));
        CHILD_CUDA(cudaStreamDestroy(stream));
        CHILD_NCCL(ncclCommDestroy(comm));
        return 0;
      }));
}

// The Config collectives: NULL and a default-initialized config are the plain call (results exact);
// an option out of range is refused naming the field (coll_config_test.cc covers every option).
int runConfigCollectives(const std::vector<ncclComm_t>& comms) {
  const int n = static_cast<int>(comms.size());
  const size_t count = 4099;
  std::vector<int32_t*> send(n), recv(n);
  std::vector<cudaStream_t> streams(n);
  for (int r = 0; r < n; ++r) {
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(cudaMalloc(&send[r], count * n * sizeof(int32_t)));
    CHILD_CUDA(cudaMalloc(&recv[r], count * n * sizeof(int32_t)));
    CHILD_CUDA(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    std::vector<int32_t> in(count * n);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>((r + 1) * 100003 + i * 7);
    CHILD_CUDA(gputest::uploadSync(send[r], in.data(), in.size() * sizeof(int32_t)));
  }
  const ncclCollConfig_t defaults = NCCL_COLLCONFIG_INITIALIZER;
  auto expectRecv = [&](int r, size_t elems, auto expected) -> int {
    std::vector<int32_t> out(elems);
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(cudaStreamSynchronize(streams[r]));
    CHILD_CUDA(cudaMemcpy(out.data(), recv[r], elems * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < elems; ++i) CHILD_EXPECT(out[i] == expected(i));
    return 0;
  };
  auto in = [](int r, size_t i) { return static_cast<int32_t>((r + 1) * 100003 + i * 7); };
  for (const ncclCollConfig_t* config : {static_cast<const ncclCollConfig_t*>(nullptr), &defaults}) {
    CHILD_NCCL(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      CHILD_NCCL(ncclAllReduceConfig(send[r], recv[r], count, ncclInt32, ncclSum, comms[r], streams[r], config));
    }
    CHILD_NCCL(ncclGroupEnd());
    for (int r = 0; r < n; ++r) {
      if (expectRecv(r, count, [&](size_t i) {
            int32_t sum = 0;
            for (int q = 0; q < n; ++q) sum += in(q, i);
            return sum;
          }) != 0) {
        return 1;
      }
    }
    CHILD_NCCL(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      CHILD_NCCL(ncclAlltoAllConfig(send[r], recv[r], count, ncclInt32, comms[r], streams[r], config));
    }
    CHILD_NCCL(ncclGroupEnd());
    for (int r = 0; r < n; ++r) {
      if (expectRecv(r, count * n, [&](size_t i) { return in(static_cast<int>(i / count), r * count + i % count); }) !=
          0) {
        return 1;
      }
    }
    CHILD_NCCL(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      CHILD_NCCL(ncclBroadcastConfig(send[r], recv[r], count, ncclInt32, n - 1, comms[r], streams[r], config));
      CHILD_NCCL(ncclReduceConfig(send[r], recv[r], count, ncclInt32, ncclSum, 0, comms[r], streams[r], config));
      CHILD_NCCL(ncclAllGatherConfig(send[r], recv[r], count, ncclInt32, comms[r], streams[r], config));
      CHILD_NCCL(ncclReduceScatterConfig(send[r], recv[r], count, ncclInt32, ncclSum, comms[r], streams[r], config));
      CHILD_NCCL(ncclGatherConfig(send[r], recv[r], count, ncclInt32, 0, comms[r], streams[r], config));
    }
    CHILD_NCCL(ncclGroupEnd());  // these share recv: only that they run is checked here
    CHILD_NCCL(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      CHILD_NCCL(ncclScatterConfig(send[r], recv[r], count, ncclInt32, 0, comms[r], streams[r], config));
    }
    CHILD_NCCL(ncclGroupEnd());
    for (int r = 0; r < n; ++r) {
      if (expectRecv(r, count, [&](size_t i) { return in(0, r * count + i); }) != 0) return 1;
    }
  }
  ncclCollConfig_t bounded = NCCL_COLLCONFIG_INITIALIZER;
  bounded.maxCTAs = 100000;  // beyond any communicator's maxCTAs
  CHILD_EXPECT(ncclAllReduceConfig(send[0], recv[0], count, ncclInt32, ncclSum, comms[0], streams[0], &bounded) ==
               ncclInvalidArgument);
  CHILD_EXPECT(lastErrorNames("maxCTAs"));
  ncclCollConfig_t bad = NCCL_COLLCONFIG_INITIALIZER;
  bad.magic = 1;
  CHILD_EXPECT(ncclAllReduceConfig(send[0], recv[0], count, ncclInt32, ncclSum, comms[0], streams[0], &bad) ==
               ncclInvalidArgument);
  for (int r = 0; r < n; ++r) {
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(cudaFree(send[r]));
    CHILD_CUDA(cudaFree(recv[r]));
    CHILD_CUDA(cudaStreamDestroy(streams[r]));
  }
  return 0;
}

TEST(HostApi232, ConfigCollectives) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, runInChild([n] {
              std::vector<ncclComm_t> comms(n, nullptr);
              CHILD_NCCL(ncclCommInitAll(comms.data(), n, nullptr));
              if (runConfigCollectives(comms) != 0) return 1;
              for (ncclComm_t c : comms) CHILD_NCCL(ncclCommDestroy(c));
              return 0;
            }));
}

// PyTorch 2.15 is built against NCCL 2.30.7: its configs are 96 bytes of version 23007.
TEST(HostApi232, Config230AsPyTorch215PassesIt) {
  EXPECT_EQ(0, runInChild([] {
              CHILD_CUDA(cudaSetDevice(0));
              alignas(8) unsigned char bytes[sizeof(ncclConfig_t)];
              std::memset(bytes, 0xcd, sizeof(bytes));
              ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
              config.size = 96;
              config.version = 23007;
              config.blocking = 1;
              config.graphUsageMode = 2;
              config.maxP2pPeers = 4;
              config.graphStreamOrdering = 1;
              std::memcpy(bytes, &config, 96);
              ncclUniqueId id;
              CHILD_NCCL(ncclGetUniqueId(&id));
              ncclComm_t comm = nullptr;
              CHILD_NCCL(ncclCommInitRankConfig(&comm, 1, id, 0, reinterpret_cast<ncclConfig_t*>(bytes)));
              CHILD_NCCL(ncclCommDestroy(comm));

              ncclConfig_t cft = NCCL_CONFIG_INITIALIZER;
              cft.hostCftMode = ncclHostCftEnable;
              CHILD_NCCL(ncclGetUniqueId(&id));
              CHILD_EXPECT(ncclCommInitRankConfig(&comm, 1, id, 0, &cft) == ncclInvalidUsage);
              CHILD_EXPECT(lastErrorNames("hostCftMode"));
              return 0;
            }));
}

}  // namespace
