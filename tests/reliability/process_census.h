#pragma once
// What a process holds, counted from /proc/self, and what a folder holds: the resources that must
// come back after a communicator is destroyed or aborted.

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace weft::reliability {

struct ProcessCensus {
  int fds = 0;      // entries of /proc/self/fd (the descriptor used to list them not counted)
  int threads = 0;  // entries of /proc/self/task

  bool operator==(const ProcessCensus&) const = default;
};

ProcessCensus takeCensus();
/// "14 fds, 3 threads".
std::string describe(const ProcessCensus& census);
/// For GoogleTest's messages.
void PrintTo(const ProcessCensus& census, std::ostream* out);
/// The descriptors of this process with what they point at ("7 -> socket:[1234]"), for messages.
std::string listFds();

/// The names in `dir` (without . and ..); empty if it cannot be read.
std::vector<std::string> folderEntries(const std::string& dir);
/// "a, b, c" or "nothing".
std::string joinNames(const std::vector<std::string>& names);

/// Takes censuses until one equals `expected` or `limit` passes, sleeping a little in between;
/// returns the last. For counts that settle after a call returns (a bootstrap root's thread ends
/// once it has sent the ranks their table).
ProcessCensus waitForCensus(const ProcessCensus& expected, std::chrono::seconds limit);

/// Takes censuses until they have agreed for half a second (up to `limit`) and returns the last:
/// a baseline that a bootstrap root still ending (it closes its sockets, then its thread ends)
/// does not blur.
ProcessCensus settledCensus(std::chrono::seconds limit);

/// Runs a communicator of one rank through a whole life (on the loopback interface), so that
/// whatever the library sets up once per process (logging, knobs) is in place, waits until its
/// root's thread has ended, and returns settledCensus: a baseline that holds only what later calls
/// may leave behind.
ProcessCensus censusAfterWarmUp();

/// A fresh folder under /dev/shm for shared-memory segments (point WEFT_SHM_DIR at it), removed
/// with whatever it holds when destroyed, so that a test sees only its own segments.
class ScratchShmFolder {
 public:
  ScratchShmFolder();
  ~ScratchShmFolder();
  ScratchShmFolder(const ScratchShmFolder&) = delete;
  ScratchShmFolder& operator=(const ScratchShmFolder&) = delete;

  /// Empty if the folder could not be made (the test should fail on that).
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace weft::reliability
