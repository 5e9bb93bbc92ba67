#include "src/exec/landings.h"

#include <algorithm>

namespace weft::exec {

using algorithms::BufferKind;
using algorithms::Step;

namespace {

// Where step `step` may have its received pieces written directly: the start of its output, or
// nullptr.
char* directOutput(const core::Op& op, const Step& step, size_t elementSize,
                   const transport::RegistrationTable& registrations, transport::RegisteredMemory** memory) {
  *memory = nullptr;
  const UserBytes output = userBytes(op, step.dst, step.count, elementSize);
  if (step.contribute || output.empty()) return nullptr;
  *memory = registrations.find(output.begin, step.count * elementSize);
  return *memory != nullptr ? const_cast<char*>(output.begin) : nullptr;
}

}  // namespace

UserBytes userBytes(const core::Op& op, const algorithms::BufferSlice& slice, size_t count, size_t elementSize) {
  if (slice.buffer != BufferKind::kSend && slice.buffer != BufferKind::kRecv) return {};
  const char* base = slice.buffer == BufferKind::kSend ? static_cast<const char*>(op.sendbuff)
                                                       : static_cast<const char*>(op.recvbuff);
  const char* begin = base + slice.offset * elementSize;
  return {begin, begin + count * elementSize};
}

void phaseLandings(const core::Op& op, const algorithms::Lane& lane, size_t phaseBegin, size_t phaseEnd,
                   size_t slotElements, int peer, const transport::RegistrationTable& registrations,
                   const std::function<bool(size_t)>& mustWait, std::vector<transport::Landing>* landings) {
  landings->clear();
  const size_t elementSize = algorithms::dataTypeSize(op.type);
  struct Receiving {
    const Step* step;
    char* output;
    transport::RegisteredMemory* memory;
  };
  std::vector<Receiving> receiving;
  size_t rounds = 0;
  for (size_t s = phaseBegin; s < phaseEnd; ++s) {
    const Step& step = lane.steps[s];
    if (step.recvPeer != peer) continue;
    Receiving entry{&step, nullptr, nullptr};
    if (!registrations.empty() && !mustWait(s)) {
      entry.output = directOutput(op, step, elementSize, registrations, &entry.memory);
    }
    receiving.push_back(entry);
    rounds = std::max(rounds, (step.count + slotElements - 1) / slotElements);
  }
  for (size_t round = 0; round < rounds; ++round) {
    for (const Receiving& entry : receiving) {
      const size_t begin = round * slotElements;
      if (begin >= entry.step->count) continue;
      const size_t bytes = std::min(entry.step->count - begin, slotElements) * elementSize;
      if (entry.output == nullptr) {
        landings->push_back(transport::Landing{nullptr, bytes, nullptr});
      } else {
        landings->push_back(transport::Landing{entry.output + begin * elementSize, bytes, entry.memory});
      }
    }
  }
}

}  // namespace weft::exec
