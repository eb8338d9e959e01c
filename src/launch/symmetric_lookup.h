// Which of a queued collective's buffers lie in symmetric windows (core/windows_base.h), as the
// plan (collective_plan.cc) and the zero-copy exchange (reg_launch.cc) both ask: every rank looks
// up its own buffers, and every rank that registered alike gets the same answer.
#pragma once

#include "core/windows_base.h"
#include "launch/coll_task.h"
#include "plan/plan.h"

namespace braid {

struct SymmetricLookup {
  plan::SymmetricBuffers buffers;
  SymmetricCopies send;
  SymmetricCopies recv;
};

// Each buffer as the collective's peers reach it (collSendBytes / collRecvBytes).
inline SymmetricLookup lookUpSymmetric(const CommWindowsBase* windows, const CollTask& task, int nranks) {
  SymmetricLookup out;
  if (windows == nullptr || nranks < 2) return out;
  out.buffers.send = windows->symmetricCopies(task.sendbuff, collSendBytes(task, nranks), &out.send);
  out.buffers.recv = windows->symmetricCopies(task.recvbuff, collRecvBytes(task, nranks), &out.recv);
  return out;
}

}  // namespace braid
