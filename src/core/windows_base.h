// The symmetric memory windows of a communicator as core sees them: an object that window/
// implements (window::Manager) and the communicator owns, created at the first
// ncclCommWindowRegister. core only tears it down, so core never depends on window/.
#pragma once

namespace braid {

class CommWindowsBase {
 public:
  virtual ~CommWindowsBase() = default;
  // Destroy (abort false) or abort (true): one-sided operations still pending on the GPU are
  // waited for, or cut short (destroy cuts them short too once `peerFailed` says a peer is gone),
  // so that no stream still reads or writes the memory that is unmapped next. Never waits for a
  // peer. Called once, before the data path and the bootstrap go.
  virtual void release(bool abort, bool peerFailed) = 0;
};

}  // namespace braid
