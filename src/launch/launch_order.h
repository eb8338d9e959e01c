// The order of one communicator's launches. Every operation of a communicator shares its FIFOs and
// step counters, so two of its kernels must never run at the same time, whatever streams they were
// enqueued on and whether they run eagerly or as nodes of CUDA graphs replayed later.
//
//  - Eager launch: waits on the GPU for the previous launch when it is on another stream (or always,
//    once a graph was captured with mixing support: a graph may have run since, on any stream), and
//    records `last_` after itself.
//  - Captured launch (cudaStreamBeginCapture on its stream, either capture mode), with
//    NCCL_GRAPH_MIXING_SUPPORT=1 (the default): the first launch of a capture gets an external wait
//    node on `last_`; the capture gets one external record node of `last_`, added to the graph beside
//    the stream (a leaf), that every captured launch of the communicator precedes. Each replay
//    therefore runs after the communicator's work enqueued before it, eager or another graph, and
//    work enqueued after the replay waits for all of its launches, while consecutive launches inside
//    the graph stay kernel to kernel (a record node between them would cost ~1 us each and break
//    programmatic dependent launch). Launches of one capture on different streams are ordered
//    through an internal event, `captured_` (no graph node). With NCCL_GRAPH_MIXING_SUPPORT=0 graphs
//    get no external nodes, and the user promises that a graph never runs at the same time as other
//    work of the communicator.
//
// Only the latest capture is tracked. Interleaving the launches of two captures of one communicator
// that are in progress at the same time is not supported: a capture that is returned to gets a
// second wait and a second record node, and work after its replay may then wait for part of it only.
//
// Mixing captured and eager work is safe on one rank; across ranks, every rank must still issue the
// communicator's operations (replays included) in the same order, or they wait for each other forever.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <unordered_set>

namespace braid {

class LaunchOrder {
 public:
  LaunchOrder() = default;
  ~LaunchOrder();
  LaunchOrder(const LaunchOrder&) = delete;
  LaunchOrder& operator=(const LaunchOrder&) = delete;

  // Creates the events on the current device; `mixing` is NCCL_GRAPH_MIXING_SUPPORT.
  [[nodiscard]] ncclResult_t init(bool mixing);
  // Before a launch on `stream`: waits for the communicator's previous launch where needed.
  [[nodiscard]] ncclResult_t before(cudaStream_t stream);
  // After the launch on `stream` (the stream before() was given): marks it as the communicator's latest.
  [[nodiscard]] ncclResult_t after(cudaStream_t stream);
  // Whether the launch that before() prepared is captured into a CUDA graph.
  bool launchCaptured() const { return launchCapture_ != 0; }
  // Makes `other` (another stream of the same group) wait for the launch just made.
  [[nodiscard]] ncclResult_t join(cudaStream_t other);
  // The event recorded after every launch (eager, or replay of a captured one): complete when the
  // communicator has nothing in flight. Valid from init() to destruction.
  cudaEvent_t latestEvent() const { return last_; }

 private:
  [[nodiscard]] ncclResult_t linkToRecordNode(cudaStream_t stream, unsigned long long id);

  cudaEvent_t last_ = nullptr;      // eager launches, and external records of captured ones
  cudaEvent_t captured_ = nullptr;  // internal record of the latest captured launch
  bool mixing_ = true;
  bool launchedAny_ = false;   // an eager launch was made
  bool capturedAny_ = false;   // a captured launch was made (with mixing: graphs may run between launches)
  bool lastCaptured_ = false;  // the latest launch was captured
  cudaStream_t lastStream_ = nullptr;
  unsigned long long captureId_ = 0;      // the capture of the latest captured launch (ids start at 1)
  unsigned long long launchCapture_ = 0;  // the capture of the launch between before() and after() (0: eager)
  cudaStream_t captureStream_ = nullptr;
  unsigned long long recordCaptureId_ = 0;            // the capture that recordNode_ belongs to
  cudaGraphNode_t recordNode_ = nullptr;              // its external record of last_
  std::unordered_set<cudaGraphNode_t> recordLinked_;  // the nodes already linked to it
};

}  // namespace braid
