#pragma once
// What the host executor tells a receiving end that takes landings (ib) about the pieces to come:
// their order, and where each may be written directly.

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/step.h"
#include "src/core/op.h"
#include "transport/registered_memory.h"
#include "transport/transport.h"

namespace weft::exec {

/// A range of the user's buffers, [begin, end).
struct UserBytes {
  const char* begin = nullptr;
  const char* end = nullptr;
  bool empty() const { return begin == end; }
  bool overlaps(const UserBytes& other) const { return begin < other.end && other.begin < end; }
};

/// The bytes of the user's send or receive buffer that `slice` of `count` elements covers; empty
/// for scratch and absent slices.
UserBytes userBytes(const core::Op& op, const algorithms::BufferSlice& slice, size_t count, size_t elementSize);

/// The pieces that `lane` receives from `peer` in its phase [phaseBegin, phaseEnd), in the order
/// the executor peeks them (piece k of every step, then piece k + 1; pieces of `slotElements`).
/// A piece that a step only passes into the user's buffer (no reduction) gets its place there as
/// `dst` when `registrations` holds the step's whole output range and `mustWait(step index)` is
/// false (the executor holds the step's writes back until another lane has read what they
/// overwrite); every other piece gets nullptr. Replaces the contents of *landings.
void phaseLandings(const core::Op& op, const algorithms::Lane& lane, size_t phaseBegin, size_t phaseEnd,
                   size_t slotElements, int peer, const transport::RegistrationTable& registrations,
                   const std::function<bool(size_t)>& mustWait, std::vector<transport::Landing>* landings);

}  // namespace weft::exec
