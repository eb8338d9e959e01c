// One rank's part of a window registration, gathered from every rank by one bootstrap allGather,
// and the checks every rank then makes on all of them (pure, tested on any machine). A rank that
// refused the registration locally still takes part, with its refusal in `status`, so that every
// rank fails together instead of waiting for it.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "window/flat_layout.h"

namespace braid::window {

constexpr uint64_t kOfferMagic = 0x4252574f46464552ull;  // "BRWOFFER"

struct WindowOffer {
  uint64_t magic;
  uint64_t serial;  // the communicator's count of registrations: the same on every rank
  int32_t status;   // ncclSuccess, or this rank's refusal
  int32_t winFlags;
  uint64_t userBytes;
  uint64_t allocBytes;   // the physical allocation that holds the window
  uint64_t memOffset;    // where the window starts in it
  uint64_t allocBase;    // the allocation's address in the owner's process (peers of that process retain it)
  uint64_t granularity;  // the allocation's mapping granularity
  int32_t cudaDev;
  int32_t role;       // what the window holds: a WindowRole (window.h)
  char udsName[104];  // where the owner takes file descriptors ("" when no peer process maps its memory)
};
static_assert(sizeof(WindowOffer) == 176, "WindowOffer crosses process boundaries: keep it fixed");

// What every rank concluded from the gathered offers.
struct OfferVerdict {
  ncclResult_t result = ncclSuccess;
  std::string why;    // for the WARN when result is an error
  FlatLayout layout;  // the LSA team's layout (result ncclSuccess only)
  uint64_t granularity = 0;
};

// Checks `offers` (by world rank) for the LSA team of world ranks [lsaBase, lsaBase + lsaSize):
// every rank accepted (else the first refusal's code), the serials and flags agree (else
// ncclInternalError and ncclInvalidUsage), and the team's allocations have a flat layout (else
// ncclInvalidUsage).
OfferVerdict judgeOffers(const std::vector<WindowOffer>& offers, int lsaBase, int lsaSize);

}  // namespace braid::window
