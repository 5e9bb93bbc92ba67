#pragma once
// How long step programs take on connections of given bandwidth and latency.
//
// Every rank's program runs as the executors run it: each lane takes its steps in rounds (piece k
// of every step, then piece k + 1; a step that starts a phase waits for every piece before it,
// and the phase's steps run in rounds of their own), a piece being at most `pieceBytes` of the
// step, and each connection holds `slots` pieces. A piece is sent when the lane has received what
// it forwards, when the connection has a free slot (the receiver released the piece `slots`
// earlier) and when the connection finished sending the previous piece; it occupies the
// connection for bytes / bandwidth and arrives `latency` later. The receiver releases the slot when it has
// forwarded or stored the piece. Connections do not share bandwidth with each other: the fabric
// model (fabric.h) gives each its share beforehand.
//
// The engine is event-driven without a clock queue: a lane runs until it needs a piece not sent
// yet or a slot not released yet, and is woken when that happens. Pure; memory is 16 bytes per
// step of the programs given.

#include <cstddef>
#include <functional>
#include <string>

#include "algorithms/step.h"

namespace weft::sim {

/// One direction of one connection.
struct LinkTiming {
  double bytesPerMicrosecond = 0;      // GB/s x 1000
  double pieceLatencyMicroseconds = 0;  // every piece but a step's first
  double stepLatencyMicroseconds = 0;   // a step's first piece
};

struct TimingOptions {
  size_t pieceBytes = 512 * 1024;  // a slot: NCCL_BUFFSIZE / 8 by default
  int slots = 8;                   // slots per connection (at most 8)
  size_t elementSize = 4;          // bytes per element of the programs' counts
  /// Bytes per microsecond of a step that only copies or reduces into local memory.
  double localBytesPerMicrosecond = 1.0e6;
};

struct TimingResult {
  double microseconds = 0;  // when the last lane finished
  long pieces = 0;          // pieces sent, all connections together
  std::string error;        // set when the programs cannot finish (a deadlock, a mismatch)
  bool ok() const { return error.empty(); }
};

/// Builds rank `rank`'s program into `program` (which it may reuse).
using ProgramSource = std::function<void(int rank, algorithms::Program* program)>;
/// The connection from rank `from` to rank `to` on lane channel `channel`.
using LinkSource = std::function<LinkTiming(int channel, int from, int to)>;

/// Times one operation over `nranks` ranks whose programs `programOf` builds (each is asked for
/// once), on the connections `linkOf` describes (asked once per connection). Each end of a
/// connection must belong to one lane, as in every schedule's programs.
TimingResult timePrograms(int nranks, const ProgramSource& programOf, const LinkSource& linkOf,
                          const TimingOptions& options);

}  // namespace weft::sim
