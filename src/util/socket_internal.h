// What socket.cc (Socket), socket_connector.cc and socket_acceptor.cc (SocketAcceptor) share, and
// nothing else uses.
#pragma once

#include <cstdint>

#include "util/log.h"

namespace braid::socket_detail {

constexpr uint64_t kSocketLogSubsys = kLogBootstrap | kLogNet;

// TCP_NODELAY on `fd`.
void setNoDelay(int fd);

}  // namespace braid::socket_detail
