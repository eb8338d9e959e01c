#include "window/offer.h"

#include <algorithm>
#include <cstdio>

namespace braid::window {
namespace {

std::string hex(int value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%x", static_cast<unsigned>(value));
  return text;
}

OfferVerdict refuse(ncclResult_t result, std::string why) {
  OfferVerdict v;
  v.result = result;
  v.why = std::move(why);
  return v;
}

}  // namespace

OfferVerdict judgeOffers(const std::vector<WindowOffer>& offers, int lsaBase, int lsaSize) {
  for (size_t r = 0; r < offers.size(); ++r) {
    if (offers[r].magic != kOfferMagic) return refuse(ncclInternalError, "rank " + std::to_string(r) + " sent garbage");
    if (offers[r].status != ncclSuccess) {
      return refuse(static_cast<ncclResult_t>(offers[r].status),
                    "rank " + std::to_string(r) + " refused its part (its WARN says why)");
    }
  }
  for (size_t r = 1; r < offers.size(); ++r) {
    if (offers[r].serial != offers[0].serial || offers[r].role != offers[0].role) {
      return refuse(ncclInternalError, "ranks 0 and " + std::to_string(r) + " are at different registrations (" +
                                           std::to_string(offers[0].serial) + ", " + std::to_string(offers[r].serial) +
                                           ")");
    }
    if (offers[r].winFlags != offers[0].winFlags) {
      return refuse(ncclInvalidUsage, "rank 0 passed winFlags " + hex(offers[0].winFlags) + " and rank " +
                                          std::to_string(r) + " winFlags " + hex(offers[r].winFlags) +
                                          "; every rank must pass the same flags");
    }
  }
  if (lsaBase < 0 || lsaSize < 1 || static_cast<size_t>(lsaBase) + static_cast<size_t>(lsaSize) > offers.size()) {
    return refuse(ncclInternalError, "the LSA team lies outside the communicator");
  }
  OfferVerdict v;
  std::vector<RankExtent> extents;
  for (int i = 0; i < lsaSize; ++i) {
    const WindowOffer& o = offers[lsaBase + i];
    extents.push_back(RankExtent{o.allocBytes, o.memOffset, o.userBytes});
    v.granularity = std::max(v.granularity, o.granularity);
  }
  std::string why;
  if (!planFlatLayout(extents, v.granularity, &v.layout, &why)) return refuse(ncclInvalidUsage, why);
  return v;
}

}  // namespace braid::window
