#pragma once
// Symbolic data for simulating step programs. Every element of a send buffer is a Symbol naming
// the rank and element it came from; steps combine symbols the way an executor combines numbers
// (scale the local input when it contributes, reduce it with the received value, finalize), so a
// result shows which contributions it holds, how many were scaled and how often it was finalized.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "algorithms/collective.h"

namespace weft::tests {

using algorithms::Collective;
using algorithms::OpShape;

/// Faults a symbol can carry; they stick to every value computed from it.
inline constexpr uint8_t kFaultGarbage = 1;          // read memory nobody initialized
inline constexpr uint8_t kFaultDoubled = 2;          // a rank's contribution counted twice
inline constexpr uint8_t kFaultMixed = 4;            // combined elements of different indices
inline constexpr uint8_t kFaultRescaled = 8;         // a contribution scaled a second time
inline constexpr uint8_t kFaultFinalizedInput = 16;  // reduced a value that was already finalized

struct Symbol {
  uint64_t ranks = 0;    // ranks whose element the value holds
  uint32_t element = 0;  // index, in its send buffer, of the element the value derives from
  uint8_t scaled = 0;    // how many of those elements were scaled (contributed)
  uint8_t finalizes = 0;
  uint8_t faults = 0;
  bool operator==(const Symbol&) const = default;
};

inline uint64_t rankBit(int rank) { return uint64_t{1} << rank; }
inline uint64_t allRanks(int nranks) { return nranks >= 64 ? ~uint64_t{0} : rankBit(nranks) - 1; }

inline Symbol scaleSymbol(Symbol value) {
  if (value.scaled != 0) value.faults |= kFaultRescaled;
  value.scaled += static_cast<uint8_t>(std::popcount(value.ranks));
  return value;
}

inline Symbol combineSymbols(const Symbol& received, const Symbol& local) {
  Symbol value;
  value.ranks = received.ranks | local.ranks;
  value.element = received.element;
  value.scaled = received.scaled + local.scaled;
  value.finalizes = received.finalizes + local.finalizes;
  value.faults = received.faults | local.faults;
  if ((received.ranks & local.ranks) != 0) value.faults |= kFaultDoubled;
  if (received.element != local.element) value.faults |= kFaultMixed;
  if (received.finalizes != 0 || local.finalizes != 0) value.faults |= kFaultFinalizedInput;
  return value;
}

inline std::string describe(const Symbol& value) {
  char text[160];
  std::snprintf(text, sizeof text, "{ranks=%#llx element=%u scaled=%u finalizes=%u faults=%#x}",
                static_cast<unsigned long long>(value.ranks), value.element, value.scaled, value.finalizes,
                value.faults);
  return text;
}

/// Where a rank's send and receive buffers lie in its memory, sized as the collective's API
/// implies (a buffer the API does not use on this rank has size 0). In place, the smaller buffer
/// lies inside the larger one where NCCL's in-place convention puts it (AllToAll is never in place).
struct BufferLayout {
  size_t memory = 0;
  size_t sendBase = 0;
  size_t sendSize = 0;
  size_t recvBase = 0;
  size_t recvSize = 0;
  size_t scratchBase = 0;  // the operation's scratch (BufferKind::kScratch): as many elements as the
  size_t scratchSize = 0;  // larger buffer, after both, never shared with them
};

inline BufferLayout bufferLayout(const OpShape& shape, bool inPlace) {
  const size_t count = shape.count;
  const size_t all = count * static_cast<size_t>(shape.nranks);
  const bool isRoot = shape.rank == shape.root;
  const size_t rankBlock = count * static_cast<size_t>(shape.rank);
  BufferLayout layout;
  size_t innerOffset = 0;  // of the smaller buffer within the larger, in place
  switch (shape.collective) {
    case Collective::kAllReduce:
      layout.sendSize = layout.recvSize = count;
      break;
    case Collective::kAllGather:
      layout.sendSize = count, layout.recvSize = all, innerOffset = rankBlock;
      break;
    case Collective::kReduceScatter:
      layout.sendSize = all, layout.recvSize = count, innerOffset = rankBlock;
      break;
    case Collective::kBroadcast:
      layout.sendSize = isRoot ? count : 0, layout.recvSize = count;
      break;
    case Collective::kReduce:
      layout.sendSize = count, layout.recvSize = isRoot ? count : 0;
      break;
    case Collective::kAllToAll:
      layout.sendSize = layout.recvSize = all;
      inPlace = false;
      break;
    case Collective::kGather:
      layout.sendSize = count, layout.recvSize = isRoot ? all : 0, innerOffset = rankBlock;
      break;
    case Collective::kScatter:
      layout.sendSize = isRoot ? all : 0, layout.recvSize = count, innerOffset = rankBlock;
      break;
    case Collective::kSend:
      layout.sendSize = count;
      break;
    case Collective::kRecv:
      layout.recvSize = count;
      break;
  }
  if (inPlace && layout.sendSize > 0 && layout.recvSize > 0) {
    if (layout.sendSize <= layout.recvSize) {
      layout.memory = layout.recvSize;
      layout.sendBase = innerOffset;
    } else {
      layout.memory = layout.sendSize;
      layout.recvBase = innerOffset;
    }
  } else {
    layout.recvBase = layout.sendSize;
    layout.memory = layout.sendSize + layout.recvSize;
  }
  layout.scratchBase = layout.memory;
  layout.scratchSize = std::max(layout.sendSize, layout.recvSize);
  layout.memory += layout.scratchSize;
  return layout;
}

inline Symbol initialSend(const OpShape& shape, size_t index) {
  return {rankBit(shape.rank), static_cast<uint32_t>(index), 0, 0, 0};
}

/// What the receive buffer must hold at `index` once the operation is complete.
inline Symbol expectedRecv(const OpShape& shape, size_t index) {
  const size_t count = shape.count;
  const size_t block = count == 0 ? 0 : index / count;
  const size_t within = count == 0 ? 0 : index % count;
  const size_t ownBlock = static_cast<size_t>(shape.rank) * count;
  auto reduced = [&](size_t element) {
    return Symbol{allRanks(shape.nranks), static_cast<uint32_t>(element), static_cast<uint8_t>(shape.nranks), 1, 0};
  };
  auto from = [&](size_t rank, size_t element) {
    return Symbol{rankBit(static_cast<int>(rank)), static_cast<uint32_t>(element), 0, 0, 0};
  };
  switch (shape.collective) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      return reduced(index);
    case Collective::kReduceScatter:
      return reduced(ownBlock + index);
    case Collective::kAllGather:
    case Collective::kGather:
      return from(block, within);
    case Collective::kBroadcast:
      return from(shape.root, index);
    case Collective::kAllToAll:
      return from(block, ownBlock + within);
    case Collective::kScatter:
      return from(shape.root, ownBlock + index);
    case Collective::kRecv:
      return from(shape.root, index);
    case Collective::kSend:
      break;
  }
  return {};
}

}  // namespace weft::tests
