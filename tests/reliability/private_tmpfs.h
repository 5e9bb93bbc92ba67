#pragma once
// A small tmpfs that only one test sees: a forked child enters a mount namespace of its own
// (unshare(CLONE_NEWNS), as root) and mounts a tmpfs of a chosen size on a fresh folder, so a full
// shared-memory folder can be tested without filling the machine's /dev/shm.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace weft::reliability {

struct TmpfsRun {
  /// Set when no private tmpfs could be mounted here (no privilege for a mount namespace): why.
  std::string skipped;
  /// Empty when `body` passed; otherwise its failure, or how the child ended (a signal, the
  /// deadline).
  std::string failure;
};

/// Runs `body(folder)` in a forked child whose mount namespace has a tmpfs of `bytes` on `folder`.
/// `body` returns an empty string or what was wrong; it may fork or start threads. The child is
/// killed at `deadline`. The folder is removed afterwards (the mount ends with the namespace).
TmpfsRun runWithPrivateTmpfs(size_t bytes, std::chrono::seconds deadline,
                             const std::function<std::string(const std::string& folder)>& body);

}  // namespace weft::reliability
