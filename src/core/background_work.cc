#include "core/background_work.h"

#include <chrono>
#include <system_error>

#include "util/log.h"

namespace braid {
namespace {

void startOrRunHere(std::thread* thread, const char* what, const std::function<void()>& body) {
  try {
    *thread = std::thread(body);
  } catch (const std::system_error& e) {
    WARN("Cannot start a thread for %s (%s); running it in this call", what, e.what());
    body();
  }
}

}  // namespace

void BackgroundWork::startCreation(const char* what, const std::function<void()>& body) {
  startOrRunHere(&creation_, what, body);
}

void BackgroundWork::joinCreation() {
  if (creation_.joinable()) creation_.join();
}

void BackgroundWork::startExchange(const char* what, const std::function<void()>& body) {
  if (exchange_.joinable()) exchange_.join();  // an earlier one, ended: the parent allows one at a time
  startOrRunHere(&exchange_, what, body);
}

void BackgroundWork::joinExchanges() {
  while (exchangeRunning()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (exchange_.joinable()) exchange_.join();
}

void BackgroundWork::waitGroupJob() {
  if (groupJob_) groupJob_->wait();
}

}  // namespace braid
