#include "net/ready_scan.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>

namespace braid::net {

ReadyScan::ReadyScan() : epollFd_(epoll_create1(EPOLL_CLOEXEC)) {}

ReadyScan::~ReadyScan() {
  if (epollFd_ >= 0) close(epollFd_);
}

ReadyScan& ReadyScan::threadLocal() {
  thread_local ReadyScan scan;
  return scan;
}

bool ReadyScan::add(const std::vector<int>& fds) {
  if (epollFd_ < 0) return false;
  for (int fd : fds) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      forget(fds);
      return false;
    }
    if (static_cast<size_t>(fd) >= ready_.size()) ready_.resize(static_cast<size_t>(fd) + 1, 0);
    ready_[fd] = 1;  // until the first scan says otherwise
    registered_++;
  }
  return true;
}

void ReadyScan::forget(const std::vector<int>& fds) {
  for (int fd : fds) {
    if (epollFd_ >= 0) (void)epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
    if (static_cast<size_t>(fd) < ready_.size()) ready_[fd] = 0;
  }
}

bool ReadyScan::mayRead(const std::vector<int>& fds, uint64_t* lastEpoch) {
  if (*lastEpoch == epoch_) refresh();  // asked again since the last scan: a new sweep
  *lastEpoch = epoch_;
  for (int fd : fds) {
    if (static_cast<size_t>(fd) < ready_.size() && ready_[fd] != 0) return true;
  }
  return false;
}

void ReadyScan::refresh() {
  epoch_++;
  std::fill(ready_.begin(), ready_.end(), 0);
  events_.resize(std::max<size_t>(registered_, 1));
  const int n = epoll_wait(epollFd_, events_.data(), static_cast<int>(events_.size()), 0);
  for (int i = 0; i < n; i++) {
    const int fd = events_[i].data.fd;
    if (fd >= 0 && static_cast<size_t>(fd) < ready_.size()) ready_[fd] = 1;
  }
}

}  // namespace braid::net
