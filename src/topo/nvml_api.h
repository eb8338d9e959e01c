// The few NVML entry points topology detection uses, as a table of function pointers, so that NVML
// is reached through dlopen (the library loads on machines without a driver) and so that tests can
// substitute a recorded machine for the real one. Types and constants are declared here from the
// NVML API reference (no nvml.h is needed); C enums are int-sized, so they are passed as int.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "topo/topo.h"

namespace braid::topo {

using NvmlReturn = int;                  // nvmlReturn_t
using NvmlDevice = struct NvmlDevice_*;  // nvmlDevice_t (opaque)

constexpr NvmlReturn kNvmlSuccess = 0;       // NVML_SUCCESS
constexpr unsigned kNvmlMaxLinks = 18;       // NVML_NVLINK_MAX_LINKS (NVML 12.x/13.x headers)
constexpr int kNvmlFeatureEnabled = 1;       // NVML_FEATURE_ENABLED (nvmlEnableState_t)
constexpr int kNvmlP2pCapsRead = 0;          // NVML_P2P_CAPS_INDEX_READ
constexpr int kNvmlP2pCapsWrite = 1;         // NVML_P2P_CAPS_INDEX_WRITE
constexpr int kNvmlP2pStatusOk = 0;          // NVML_P2P_STATUS_OK
constexpr int kNvmlNvlinkDeviceGpu = 0;      // NVML_NVLINK_DEVICE_TYPE_GPU
constexpr int kNvmlNvlinkDeviceSwitch = 2;   // NVML_NVLINK_DEVICE_TYPE_SWITCH
constexpr int kNvmlTopologyInternal = 0;     // NVML_TOPOLOGY_INTERNAL (same board)
constexpr int kNvmlTopologySingle = 10;      // NVML_TOPOLOGY_SINGLE (one PCIe switch)
constexpr int kNvmlTopologyMultiple = 20;    // NVML_TOPOLOGY_MULTIPLE (several PCIe switches)
constexpr int kNvmlTopologyHostBridge = 30;  // NVML_TOPOLOGY_HOSTBRIDGE
constexpr int kNvmlTopologyNode = 40;        // NVML_TOPOLOGY_NODE (same NUMA node)
constexpr int kNvmlTopologySystem = 50;      // NVML_TOPOLOGY_SYSTEM (across sockets)

// nvmlPciInfo_t (NVML >= 9: busIdLegacy first, then the 32-byte busId "00000000:07:00.0").
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

struct NvmlApi {
  NvmlReturn (*init)();  // nvmlInit_v2
  const char* (*errorString)(NvmlReturn);
  NvmlReturn (*deviceByBusId)(const char* busId, NvmlDevice* device);  // nvmlDeviceGetHandleByPciBusId_v2
  NvmlReturn (*nvlinkState)(NvmlDevice device, unsigned link, int* isActive);
  NvmlReturn (*nvlinkRemotePci)(NvmlDevice device, unsigned link, NvmlPciInfo* pci);  // ..._v2
  NvmlReturn (*nvlinkRemoteType)(NvmlDevice device, unsigned link, int* type);        // optional (may be null)
  NvmlReturn (*p2pStatus)(NvmlDevice a, NvmlDevice b, int capsIndex, int* status);
  NvmlReturn (*commonAncestor)(NvmlDevice a, NvmlDevice b, int* level);
  NvmlReturn (*cpuAffinity)(NvmlDevice device, unsigned setSize, unsigned long* cpuSet);  // optional
  NvmlReturn (*deviceIndex)(NvmlDevice device, unsigned* index);                          // optional
};

// Loads `soname` with dlopen, resolves the table and calls nvmlInit_v2. Returns false (with an INFO
// line saying why) when the library, a required symbol or the init is missing. The handle is kept
// open for the life of the process.
bool nvmlLoad(const char* soname, NvmlApi* api);

// The process-wide table for "libnvidia-ml.so.1", loaded once (thread safe); nullptr if unavailable.
const NvmlApi* nvmlApi();

// detectLinks on an explicit table; api == nullptr takes the no-NVML fallback. For tests.
[[nodiscard]] ncclResult_t detectLinksWith(const NvmlApi* api, const std::vector<RankPlace>& ranks, int self,
                                           std::vector<Link>* row);

// NVML's index of the GPU at a packed bus id (what nvidia-smi numbers it), or -1 where NVML or the
// GPU is not there.
int nvmlIndexOfBusId(int64_t busId);

// "dddd:bb:dd.f" for a packed bus id, and the packed id for any "d+:bb:dd.f" string (-1 if bad).
std::string busIdText(int64_t busId);
int64_t busIdParse(const char* text);

}  // namespace braid::topo
