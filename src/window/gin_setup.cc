// The proxy GIN connection of a device communicator (gin_comm.h): whether this rank can serve one,
// the ids of its signals and counters, and its start and stop around the resource window's life.
#include <algorithm>
#include <chrono>
#include <thread>

#include "util/check.h"
#include "util/log.h"
#include "window/manager.h"

namespace braid::window {
namespace {

constexpr int kMaxGinContexts = 16;
constexpr uint32_t kDefaultGinQueue = 512;
constexpr uint32_t kMaxGinQueue = 1u << 14;
constexpr int kMaxGinIds = 1 << 23;  // a counter id has 23 bits in a GFD

uint32_t queueSizeFor(int depth) {
  uint32_t q = depth <= 0 ? kDefaultGinQueue : 2;
  while (depth > 0 && q < static_cast<uint32_t>(depth) && q < kMaxGinQueue) q <<= 1;
  return q;
}

// Hands out `count` ids after *next; false past kMaxGinIds.
bool handOut(int count, int* next, uint32_t* start) {
  if (count < 0 || count > kMaxGinIds - *next) return false;
  if (start != nullptr) *start = static_cast<uint32_t>(*next);
  *next += count;
  return true;
}

}  // namespace

ncclResult_t Manager::readyGin() {
  if (!oneSided_.ready()) {
    WARN("ncclDevCommCreate: %s: GIN needs the one-sided operations' machinery, which is off here (%s)",
         ctx_.me().c_str(), oneSided_.why().empty() ? "see above" : oneSided_.why().c_str());
    return ncclInvalidUsage;
  }
  if (oneSided_.network() != nullptr) return ncclSuccess;
  if (ctx_.lsaSize < ctx_.nranks) {
    WARN("ncclDevCommCreate: %s: GIN reaches other hosts through the network, whose connections failed (see above)",
         ctx_.me().c_str());
    return ncclInvalidUsage;
  }
  NCCLCHECK(oneSided_.makeLocalNetwork());
  for (const std::unique_ptr<Window>& w : windows_.all()) {
    if (!w->deregistered && w->info->role != WindowRole::kSignals) oneSided_.network()->addWindow(w->serial, w->info);
  }
  return ncclSuccess;
}

ncclResult_t Manager::planGin(const DevCommAsk& ask, GinShape* shape, GinPlaces* places, std::vector<ResourceAsk>* asks,
                              DevCommMade* made) {
  const int railSize = ctx_.nranks / ctx_.lsaSize;
  int signals = 0, counters = 0;
  bool ok = handOut(ask.ginSignals, &signals, nullptr) && handOut(ask.ginCounters, &counters, nullptr);
  for (const GinIdAsk& a : ask.ginSignalAsks) ok = ok && handOut(a.count, &signals, a.outStart);
  for (const GinIdAsk& a : ask.ginCounterAsks) ok = ok && handOut(a.count, &counters, a.outStart);
  ok = ok && ask.railGinBarriers <= kMaxGinIds / railSize && ask.worldGinBarriers <= kMaxGinIds / ctx_.nranks &&
       ask.hybridGinBarriers <= kMaxGinIds / ctx_.nranks &&
       handOut(ask.railGinBarriers * railSize, &signals, &made->railGinBarrierSignal0) &&
       handOut(ask.worldGinBarriers * ctx_.nranks, &signals, &made->worldGinBarrierSignal0) &&
       handOut(ask.hybridGinBarriers * railSize, &signals, &made->hybridRailGinBarrierSignal0) &&
       handOut(ask.hybridGinBarriers * ctx_.nranks, &signals, &made->hybridDenseGinBarrierSignal0);
  if (!ok) {
    WARN("ncclDevCommCreate: %s: the requirements ask for more than %d GIN signals or counters", ctx_.me().c_str(),
         kMaxGinIds);
    return ncclInvalidArgument;
  }
  shape->contexts = std::clamp(ask.ginContexts, 1, kMaxGinContexts);
  shape->signals = signals;
  shape->counters = counters;
  shape->nranks = ctx_.nranks;
  shape->queueSize = queueSizeFor(ask.queueDepth);
  askGinResources(*shape, places, asks);
  return ncclSuccess;
}

ncclResult_t Manager::startGin(const GinShape& shape, const GinPlaces& places, Window* resources, DevCommMade* made) {
  std::unique_ptr<GinComm> gin;
  NCCLCHECK(GinComm::create(shape, places, resources->info, resources->serial, registrar_.setupStream(), &gin));
  made->ginContexts = shape.contexts;
  made->ginSignals = shape.signals;
  made->ginCounters = shape.counters;
  made->ginHandle = gin->deviceHandle();
  made->ginSignalShadows = gin->signalShadows();
  std::shared_ptr<GinComm> shared(std::move(gin));
  gins_[resources->serial] = shared;
  oneSided_.network()->addGin(std::move(shared));
  INFO(kLogInit, "ncclDevCommCreate: %s: proxy GIN connection: %d contexts, %d signals, %d counters, rings of %u",
       ctx_.me().c_str(), shape.contexts, shape.signals, shape.counters, shape.queueSize);
  return ncclSuccess;
}

void Manager::stopGin(uint64_t serial) {
  auto it = gins_.find(serial);
  if (it == gins_.end()) return;
  oneSided_.network()->removeGin(serial);
  // The network thread may be in the middle of one of its operations: its resource window goes
  // once the thread has let go.
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (it->second.use_count() > 1 && std::chrono::steady_clock::now() < giveUp) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  gins_.erase(it);
}

}  // namespace braid::window
