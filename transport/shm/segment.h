#pragma once
// A named shared-memory segment: a file in the shared-memory folder (WEFT_SHM_DIR), mapped.
// The receiving end creates it and owns the name; the sending end opens it by name and removes the
// name at once, so that no name outlives connection setup. The mapping outlives the name.

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "src/base/status.h"

namespace weft::transport::shm {

class ShmSegment {
 public:
  /// Creates a new file `dir`/`prefix`<random hex> (exclusive, mode 0600), reserves `bytes` of
  /// memory for it (posix_fallocate: a full folder fails here, never later with SIGBUS), and maps
  /// it. `peerRank` names the other end in error messages. On failure nothing is left in `dir`.
  /// The returned segment owns the name: its destructor removes the name if still there.
  static Status create(const std::string& dir, const std::string& prefix, size_t bytes, int peerRank,
                       std::unique_ptr<ShmSegment>* segment);

  /// Opens the existing segment at `path`, checks that it is a regular file of exactly `bytes`,
  /// and maps it. The returned segment does not own the name (see unlinkName).
  static Status open(const std::string& path, size_t bytes, int peerRank,
                     std::unique_ptr<ShmSegment>* segment);

  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  /// Unmaps; removes the name if this end created it and it is still there.
  ~ShmSegment();

  /// Removes the name from the folder now; the mapping stays valid. A name already gone is fine.
  Status unlinkName();

  void* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  ShmSegment(std::string path, void* base, size_t bytes, dev_t device, ino_t inode, bool ownsName);

  std::string path_;
  void* base_;
  size_t bytes_;
  dev_t device_;  // identify our file, so that the destructor never removes someone else's
  ino_t inode_;
  bool ownsName_;
};

}  // namespace weft::transport::shm
