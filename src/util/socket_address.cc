// SocketAddress helpers and Deadline (see socket.h).
#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "util/log.h"
#include "util/socket.h"
#include "util/text.h"

namespace braid {

bool socketAddressIsValid(const SocketAddress& addr) {
  return addr.sa.sa_family == AF_INET || addr.sa.sa_family == AF_INET6;
}

socklen_t socketAddressLength(const SocketAddress& addr) {
  return addr.sa.sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

uint16_t socketAddressPort(const SocketAddress& addr) {
  return ntohs(addr.sa.sa_family == AF_INET6 ? addr.sin6.sin6_port : addr.sin.sin_port);
}

void socketAddressSetPort(SocketAddress* addr, uint16_t port) {
  if (addr->sa.sa_family == AF_INET6) {
    addr->sin6.sin6_port = htons(port);
  } else {
    addr->sin.sin_port = htons(port);
  }
}

std::string socketAddressToString(const SocketAddress& addr) {
  char host[INET6_ADDRSTRLEN] = {};
  if (addr.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &addr.sin.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(socketAddressPort(addr));
  }
  if (addr.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &addr.sin6.sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(socketAddressPort(addr));
  }
  return "<invalid address family " + std::to_string(addr.sa.sa_family) + ">";
}

namespace {

// Host and port parts of "host:port" / "[v6]:port"; false if the shape is wrong.
bool splitHostPort(const std::string& text, std::string* host, std::string* port) {
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return false;
    *host = text.substr(1, close - 1);
    *port = text.substr(close + 2);
    return !host->empty();
  }
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *host = text.substr(0, colon);
  *port = text.substr(colon + 1);
  // An unbracketed IPv6 address would be ambiguous ("fd00::2:5000").
  return host->find(':') == std::string::npos;
}

}  // namespace

ncclResult_t socketAddressParse(const std::string& text, int family, const char* what, SocketAddress* out) {
  std::string host, portText;
  int64_t port = 0;
  if (!splitHostPort(std::string(trimWhitespace(text)), &host, &portText) ||
      parseInt64(portText, &port) != ncclSuccess || port < 1 || port > 65535) {
    WARN(
        "%s=\"%s\" is not an address: expected <ipv4>:<port>, [<ipv6>]:<port> or <hostname>:<port> with a port in "
        "1-65535",
        what, text.c_str());
    return ncclInvalidUsage;
  }
  SocketAddress addr{};
  if (family != AF_INET6 && inet_pton(AF_INET, host.c_str(), &addr.sin.sin_addr) == 1) {
    addr.sin.sin_family = AF_INET;
  } else if (family != AF_INET && inet_pton(AF_INET6, host.c_str(), &addr.sin6.sin6_addr) == 1) {
    addr.sin6.sin6_family = AF_INET6;
  } else {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* results = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &results);
    if (rc != 0) {
      WARN("%s=\"%s\": cannot resolve host \"%s\": %s", what, text.c_str(), host.c_str(), gai_strerror(rc));
      return ncclInvalidUsage;
    }
    // Prefer IPv4 (what an interface search picks first too), then whatever came first.
    const addrinfo* chosen = nullptr;
    for (const addrinfo* ai = results; ai != nullptr; ai = ai->ai_next) {
      if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
      if (chosen == nullptr || (chosen->ai_family != AF_INET && ai->ai_family == AF_INET)) chosen = ai;
    }
    if (chosen != nullptr) std::memcpy(&addr, chosen->ai_addr, std::min<size_t>(chosen->ai_addrlen, sizeof(addr)));
    freeaddrinfo(results);
    if (chosen == nullptr) {
      WARN("%s=\"%s\": host \"%s\" has no IPv4 or IPv6 address", what, text.c_str(), host.c_str());
      return ncclInvalidUsage;
    }
  }
  socketAddressSetPort(&addr, static_cast<uint16_t>(port));
  *out = addr;
  return ncclSuccess;
}

Deadline Deadline::after(std::chrono::milliseconds timeout, const std::atomic<int>* abortFlag) {
  Deadline d;
  d.when_ = Clock::now() + timeout;
  d.infinite_ = false;
  d.timeoutSeconds_ = std::chrono::duration<double>(timeout).count();
  d.abortFlag_ = abortFlag;
  return d;
}

Deadline Deadline::never(const std::atomic<int>* abortFlag) {
  Deadline d;
  d.abortFlag_ = abortFlag;
  return d;
}

Deadline Deadline::capped(std::chrono::milliseconds timeout) const {
  Deadline shorter = after(timeout, abortFlag_);
  return (!infinite_ && when_ <= shorter.when_) ? *this : shorter;
}

int Deadline::sliceMs(int maxSliceMs) const {
  if (infinite_) return maxSliceMs;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when_ - Clock::now()).count();
  // Round up so that a wait does not spin on the last sub-millisecond.
  return static_cast<int>(std::clamp<int64_t>(left + 1, 0, maxSliceMs));
}

bool deadlineSleep(int ms, const Deadline& deadline) {
  Deadline wake = Deadline::after(std::chrono::milliseconds(ms));
  while (!wake.expired()) {
    if (deadline.aborted() || deadline.expired()) return false;
    int slice = std::min(wake.sliceMs(), deadline.sliceMs());
    if (slice > 0) poll(nullptr, 0, slice);
  }
  return !deadline.aborted() && !deadline.expired();
}

}  // namespace braid
