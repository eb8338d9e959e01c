// Communicators that share connections: a child made by ncclCommSplit with splitShare = 1 (or
// ncclCommShrink with shrinkShare = 1) joins its parent's share group. Members of a group on one
// rank reuse each other's ring and point-to-point connections (FIFO buffers and step counters) to
// the same peer GPU on the same channel, instead of allocating their own, and launch their kernels
// in one order (a shared connection must never carry two kernels at once). So every rank must issue
// the operations of a group's members in one order, as if they were one communicator. launch/ keeps what the
// group holds (launch/shared_connections.h); core only hands the group from parent to child.
//
// A communicator's data path joins the group it has when the data path is made (its first
// operation). A parent that has run operations joins at its first sharing split or shrink
// (DataPathBase::joinShareGroup): it brings its launch order and offers its connections, but
// reuses none (launch/shared_connections.h). The split decides the parent's membership the same
// way on every rank.
//
// What sharing costs: the members' launches are ordered as one communicator's (graph captures
// included: two members capturing at the same time are two interleaved captures, which
// launch/launch_order.h does not support), finalize waits for the whole group's launched work, and
// aborting or revoking a member leaves the connections it shares in the middle of an operation, so
// its sharing relatives must be aborted too (no later connect reuses them).
#pragma once

#include <memory>
#include <mutex>

namespace braid {

// What launch/ keeps for a group (made by its first member's data path).
class ShareGroupState {
 public:
  virtual ~ShareGroupState() = default;
};

struct ShareGroup {
  std::mutex mutex;  // guards `state` and every member's launch (launch/shared_connections.h)
  std::unique_ptr<ShareGroupState> state;
};

}  // namespace braid
