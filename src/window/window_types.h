// The device-side window struct that ncclWindow_t points to. Device code of NCCL's device API,
// compiled into users' binaries (nccl_device.h), dereferences the handle, so it lives in device
// memory with the byte layout those headers expect. The first seven fields have kept their offsets
// from NCCL 2.29 to 2.32; 2.32 appended the flags, GIN and CFT fields: the window's GIN handle on
// the proxy connection (its serial), and "none" for CFT and multicast. The static_asserts below pin every offset.
//
// Addressing (the contract with device code): LSA rank r's copy of byte `offset` of the window is
// at lsaFlatBase + r * (uint64_t(stride4G) << 32) + offset, in the address space of the rank that
// owns the struct.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::window {

constexpr int kGinMaxConnections = 4;           // NCCL_GIN_MAX_CONNECTIONS of 2.29-2.32
constexpr uint32_t kLeIdInvalid = 0xffffffffu;  // NCCL_LE_ID_INVALID: no CFT logical endpoint

struct WindowVidmem {
  void* winHost;      // the owning rank's host record (never read by device code)
  char* lsaFlatBase;  // LSA rank 0's copy of byte 0
  int32_t lsaRank;
  int32_t worldRank;
  uint32_t stride4G;                  // distance between LSA ranks' copies, in units of 4 GiB
  uint32_t mcOffset4K;                // multicast offset: 0, Braid never creates multicast objects
  uint32_t ginOffset4K;               // GIN offset: 0 (a GIN offset is the window's own)
  uint32_t winFlags;                  // the NCCL_WIN_* flags it was registered with (2.32)
  void* ginWins[kGinMaxConnections];  // 2.30-2.32: per-connection GIN handles ([0]: the serial)
  void* ginMultiSegmentWins;          // 2.30-2.32: per-segment GIN windows (none)
  int32_t numSegments;                // physical segments behind the window
  int32_t cftFlatRank;                // 2.32: -1, no CFT
  uint32_t ucLeIdBase;                // 2.32: kLeIdInvalid
  uint32_t reserved;
};

static_assert(offsetof(WindowVidmem, winHost) == 0, "NCCL window layout: winHost");
static_assert(offsetof(WindowVidmem, lsaFlatBase) == 8, "NCCL window layout: lsaFlatBase");
static_assert(offsetof(WindowVidmem, lsaRank) == 16, "NCCL window layout: lsaRank");
static_assert(offsetof(WindowVidmem, worldRank) == 20, "NCCL window layout: worldRank");
static_assert(offsetof(WindowVidmem, stride4G) == 24, "NCCL window layout: stride4G");
static_assert(offsetof(WindowVidmem, mcOffset4K) == 28, "NCCL window layout: mcOffset4K");
static_assert(offsetof(WindowVidmem, ginOffset4K) == 32, "NCCL window layout: ginOffset4K");
static_assert(offsetof(WindowVidmem, winFlags) == 36, "NCCL 2.32 window layout: winFlags");
static_assert(offsetof(WindowVidmem, ginWins) == 40, "NCCL 2.30-2.32 window layout: GIN windows");
static_assert(offsetof(WindowVidmem, ginMultiSegmentWins) == 72, "NCCL 2.30-2.32 window layout: segment windows");
static_assert(offsetof(WindowVidmem, numSegments) == 80, "NCCL 2.30-2.32 window layout: numSegments");
static_assert(offsetof(WindowVidmem, cftFlatRank) == 84, "NCCL 2.32 window layout: cftFlatRank");
static_assert(offsetof(WindowVidmem, ucLeIdBase) == 88, "NCCL 2.32 window layout: ucLeIdBase");
static_assert(sizeof(WindowVidmem) == 96, "NCCL 2.32 window layout: size");

// Every flag of ncclCommWindowRegister that NCCL 2.32 defines.
constexpr int kWinCollSymmetric = 0x01;
constexpr int kWinStrictOrdering = 0x02;
constexpr int kWinGinOnly = 0x04;
constexpr int kWinCftCounted = 0x08;
constexpr int kWinKnownFlags = kWinCollSymmetric | kWinStrictOrdering | kWinGinOnly | kWinCftCounted;
// The alignment of a window's start inside its allocation (NCCL_WIN_REQUIRED_ALIGNMENT).
constexpr uint64_t kWinAlignment = 4096;
// Strides are whole multiples of this (stride4G counts them).
constexpr uint64_t kStrideUnit = uint64_t{1} << 32;

}  // namespace braid::window
