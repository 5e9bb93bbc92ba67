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
  if (step.contribute || !step.dst.present() || step.dst.buffer == BufferKind::kScratch || step.count == 0) {
    return nullptr;
  }
  char* base = step.dst.buffer == BufferKind::kSend ? const_cast<char*>(static_cast<const char*>(op.sendbuff))
                                                     : static_cast<char*>(op.recvbuff);
  char* output = base + step.dst.offset * elementSize;
  *memory = registrations.find(output, step.count * elementSize);
  return *memory != nullptr ? output : nullptr;
}

}  // namespace

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
    if (!registrations.empty() && !mustWait(s)) entry.output = directOutput(op, step, elementSize, registrations, &entry.memory);
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
