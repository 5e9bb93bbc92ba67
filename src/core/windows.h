#pragma once
// Memory windows (ncclCommWindowRegister): a buffer that every rank of a communicator registers in
// the same call, so that each rank learns where its peers' windows lie in its own address space:
// a peer's that is a thread of this process at its own address; a peer's in another process of
// this host where its window is memory from ncclMemAlloc, whose file (src/core/mem_allocations.h)
// the peer passes over an FdMailbox to be mapped here. A collective on host buffers inside windows
// that every rank reaches (an allreduce, allgather, reducescatter or broadcast) reads its
// peers' inputs and writes their outputs in place (src/exec/direct_collectives.h), with no copy
// through the slots.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "src/base/status.h"

namespace weft::core {

class Communicator;

/// One rank's side of one window registration.
class Window {
 public:
  /// `number`: the registration's, the same on every rank (WindowTable::nextNumber).
  Window(uint64_t number, char* base, size_t bytes, int nranks);
  /// Unmaps the peers' windows mapped here.
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  uint64_t number() const { return number_; }
  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  /// Where [address, address + bytes) lies in this rank's window, or false if it does not.
  bool offsetOf(const void* address, size_t bytes, size_t* offset) const;
  /// Where `rank`'s window lies in this process (this rank's own base for itself), or null where
  /// this rank cannot reach it.
  char* peerBase(int rank) const { return peers_[rank].base; }
  size_t peerBytes(int rank) const { return peers_[rank].bytes; }
  /// Whether every rank reaches every rank's window, as all of them agreed at registration.
  bool reachedByEveryRank() const { return reachedByEveryRank_; }
  /// The communicator's registration of the window's buffer (RegistrationTable's handle), which
  /// ends with the window.
  const void* registration() const { return registration_; }
  void setRegistration(const void* handle) { registration_ = handle; }

  /// Exchanges the windows with every rank of `comm` (all of them call it for the same number)
  /// and maps what this rank can reach. Fails only where the bootstrap does (a dead peer); a
  /// window this rank cannot map is logged and left unreached.
  Status exchange(Communicator& comm);

  /// Whether the window's exchange is still to run (registered in a group that has not ended).
  bool pending() const { return pending_; }

 private:
  struct WindowOffer;
  /// Maps `peer`'s file (closing the descriptor) as `offer` describes its window; false, logged,
  /// where it fails.
  bool mapPeerFile(int peer, const WindowOffer& offer, int file);

  struct PeerWindow {
    char* base = nullptr;
    size_t bytes = 0;
    void* mapping = nullptr;  // where this rank mapped the peer's file, to unmap; null if not mapped
    size_t mappingBytes = 0;
  };

  uint64_t number_;
  char* base_;
  size_t bytes_;
  std::vector<PeerWindow> peers_;
  bool reachedByEveryRank_ = false;
  bool pending_ = true;
  const void* registration_ = nullptr;
};

/// A communicator's windows, by handle (the Window itself). Used by one thread at a time.
class WindowTable {
 public:
  /// The number of the next registration: 1, 2, ... in call order, so the same on every rank.
  uint64_t nextNumber() { return ++numbered_; }
  Window* add(std::unique_ptr<Window> window);
  /// Removes the window `handle` and hands it over; null, changing nothing, if it is not a live
  /// one of this table.
  std::unique_ptr<Window> take(const void* handle);
  /// The live window `handle`, or null.
  const Window* find(const void* handle) const;
  /// The window numbered `number`, or null.
  const Window* numbered(uint64_t number) const;
  /// A window every rank reaches that holds [address, address + bytes), or null.
  const Window* reachedWindowOf(const void* address, size_t bytes) const;

 private:
  uint64_t numbered_ = 0;
  std::map<const void*, std::unique_ptr<Window>> byHandle_;
};

}  // namespace weft::core
