#pragma once
// Step programs: what a schedule produces and an executor runs.
// A schedule turns one operation into the lanes of steps that this rank performs. A step moves `count` elements: it may receive from one peer, combine with a local input,
// write a local output and send to one peer. Schedules are pure: no I/O, no clocks.
//
// The executor streams each step through the connection's slots in pieces of at most
// `slotElements`; sender and receiver cut a step the same way, so piece i of a send matches
// piece i of the corresponding receive. A lane runs its steps in rounds (piece k of every step,
// then piece k + 1), so that a step may send what an earlier step of its lane is still receiving;
// a step marked `startsPhase` begins a new phase, whose rounds start only once every piece of the
// steps before it has run.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft::algorithms {

/// Which buffer a slice refers to: the user's send or receive buffer, or the operation's scratch:
/// memory the executor gives it, at most as many elements as the larger of its two buffers, for
/// partial results that must not sit in the output (host executor only).
enum class BufferKind : uint8_t { kNone, kSend, kRecv, kScratch };

/// A range of a user buffer, in elements from the buffer's start.
struct BufferSlice {
  BufferKind buffer = BufferKind::kNone;
  size_t offset = 0;  // elements
  bool present() const { return buffer != BufferKind::kNone; }
};

struct Step {
  int recvPeer = -1;   // rank to receive from, or -1
  int sendPeer = -1;   // rank to send to, or -1
  BufferSlice src;     // local input
  BufferSlice dst;     // local output
  size_t count = 0;    // elements moved by this step
  /// src is this rank's reduction input: it is scaled by the op (PreMulSum) and, when a receive is
  /// present, combined with the received data. When false, data passes through unchanged and a
  /// step must not have both a receive and a src.
  bool contribute = false;
  /// With contribute and a receive: src holds a partial result this rank wrote earlier in the
  /// program (its own input already scaled and combined), so it is combined with the received data
  /// as it is, not scaled again (a tree node adding its second child's data).
  bool srcIsPartial = false;
  /// Apply the op's final transform (integer average division) to the result of this step.
  bool finalize = false;
  /// This step and the ones after it wait until every piece of the steps before it has run: for
  /// log-step schedules (recursive halving, Bruck's reduce-scatter), whose sends read results that
  /// any piece of an earlier receive may write. Each phase must itself be free of deadlock when
  /// run in rounds (a send and the receive it exchanges with one peer in the same phase).
  bool startsPhase = false;
};

/// A sequence of steps run in order. Lanes of one program progress independently of each other
/// (a ring channel is one lane; an all-to-all has one lane per peer and direction). A lane's
/// connections are those of its channel: (channel, peer, direction).
struct Lane {
  int channel = 0;
  std::vector<Step> steps;
};

/// The end of the phase that starts at step `begin` of `steps`: the next step that starts a phase,
/// or steps.size().
inline size_t phaseEnd(const std::vector<Step>& steps, size_t begin) {
  size_t end = begin + 1;
  while (end < steps.size() && !steps[end].startsPhase) ++end;
  return end;
}

/// The program of one rank for one operation.
struct Program {
  std::vector<Lane> lanes;
};

}  // namespace weft::algorithms
