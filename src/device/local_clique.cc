#include "src/device/local_clique.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <vector>

#include "src/base/log.h"

namespace weft::device {
namespace {

// One stream of a launch (claimStreams), and the last call the launch holds.
struct Claim {
  unsigned long long stream;
  uint64_t lastCall;
};
constexpr size_t kKeptLaunches = 64;

struct Entry {
  uint64_t cliqueId;
  int device;
  int ranksHere;  // of its communicator, in this process
  LocalCliqueMember* member;
  std::deque<std::vector<Claim>> launches;  // its latest, newest last
};

struct Kept {
  uint64_t cliqueId;
  std::unique_ptr<LocalCliqueLeftovers> leftovers;
};

std::mutex registryMutex;
std::vector<Entry>& registry() {
  static std::vector<Entry>* entries = new std::vector<Entry>();  // outlives static destructors
  return *entries;
}
constexpr size_t kKeptWarning = 32;  // ranks' leftovers kept at once that first earn a warning

// Leftovers of ranks that left while others of their clique, or a clique of threads, were
// registered. Never destroyed itself: a process that exits with communicators alive frees nothing
// of theirs either.
std::vector<Kept>& kept() {
  static std::vector<Kept>* leftovers = new std::vector<Kept>();
  return *leftovers;
}

// The registered entry of `member`, or null. Under the registry's lock.
Entry* entryOf(const LocalCliqueMember* member) {
  std::vector<Entry>& entries = registry();
  const auto found = std::find_if(entries.begin(), entries.end(), [member](const Entry& e) { return e.member == member; });
  return found == entries.end() ? nullptr : &*found;
}

}  // namespace

void joinLocalClique(uint64_t cliqueId, int device, int ranksHere, LocalCliqueMember* member) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().push_back({cliqueId, device, ranksHere, member, {}});
}

void leaveLocalClique(LocalCliqueMember* member) {
  std::lock_guard<std::mutex> lock(registryMutex);
  std::vector<Entry>& entries = registry();
  entries.erase(std::remove_if(entries.begin(), entries.end(), [member](const Entry& e) { return e.member == member; }),
                entries.end());
}

namespace {

// Takes out of `waiting` the leftovers that may be freed now: all those whose clique has no rank
// registered, unless a registered rank's communicator has two or more ranks here. Under the lock.
std::vector<std::unique_ptr<LocalCliqueLeftovers>> takeFreeable(std::vector<Kept>& waiting) {
  const std::vector<Entry>& entries = registry();
  std::vector<std::unique_ptr<LocalCliqueLeftovers>> freeable;
  if (std::any_of(entries.begin(), entries.end(), [](const Entry& e) { return e.ranksHere > 1; })) return freeable;
  for (Kept& entry : waiting) {
    const bool cliqueStays = std::any_of(entries.begin(), entries.end(),
                                         [&entry](const Entry& e) { return e.cliqueId == entry.cliqueId; });
    if (!cliqueStays) freeable.push_back(std::move(entry.leftovers));
  }
  waiting.erase(std::remove_if(waiting.begin(), waiting.end(), [](const Kept& e) { return e.leftovers == nullptr; }),
                waiting.end());
  return freeable;
}

}  // namespace

void freeWhenCliqueHasLeft(uint64_t cliqueId, std::unique_ptr<LocalCliqueLeftovers> leftovers) {
  std::vector<std::unique_ptr<LocalCliqueLeftovers>> freed;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    std::vector<Kept>& waiting = kept();
    waiting.push_back({cliqueId, std::move(leftovers)});
    freed = takeFreeable(waiting);
    if (waiting.size() >= kKeptWarning && (waiting.size() & (waiting.size() - 1)) == 0) {
      WEFT_WARN("the GPU memory of %zu destroyed ranks is kept while a communicator with ranks that are threads of "
                "this process lasts: freeing it could wait for ever for that communicator's kernels",
                waiting.size());
    }
  }
  freed.clear();  // the frees wait for the GPU: not under the lock
}

void freeKeptLeftovers() {
  std::vector<std::unique_ptr<LocalCliqueLeftovers>> freed;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    freed = takeFreeable(kept());
  }
  freed.clear();  // not under the lock
}

Status claimStreams(LocalCliqueMember* member, const LaunchStreams& launch) {
  std::lock_guard<std::mutex> lock(registryMutex);
  Entry* self = entryOf(member);
  if (self == nullptr) return internalError("rank %d claims streams without having joined its clique", member->rank());
  for (const Entry& peer : registry()) {
    if (peer.member == member || peer.cliqueId != self->cliqueId || peer.device != self->device) continue;
    for (const std::vector<Claim>& claims : peer.launches) {
      for (const Claim& claim : claims) {
        if (claim.lastCall < launch.firstCall) continue;
        if (std::find(launch.streamIds.begin(), launch.streamIds.end(), claim.stream) == launch.streamIds.end()) {
          continue;
        }
        return invalidUsage("ranks %d and %d of one communicator, threads of this process on one GPU, enqueue on "
                            "the same CUDA stream (id %llu): rank %d's kernel there waits for a kernel of rank "
                            "%d's from call %llu on, which would queue behind it; give each rank its own stream",
                            peer.member->rank(), member->rank(), claim.stream, peer.member->rank(), member->rank(),
                            static_cast<unsigned long long>(launch.firstCall));
      }
    }
  }
  const uint64_t lastCall = launch.firstCall + std::max<uint64_t>(launch.calls, 1) - 1;
  std::vector<Claim> claims;
  for (unsigned long long stream : launch.streamIds) claims.push_back({stream, lastCall});
  self->launches.push_back(std::move(claims));
  if (self->launches.size() > kKeptLaunches) self->launches.pop_front();
  return Status::ok();
}

void withdrawLatestClaim(LocalCliqueMember* member) {
  std::lock_guard<std::mutex> lock(registryMutex);
  Entry* self = entryOf(member);
  if (self != nullptr && !self->launches.empty()) self->launches.pop_back();
}

int endLocalPeers(uint64_t cliqueId, int device, const LocalCliqueMember* aborted, const Status& why) {
  std::lock_guard<std::mutex> lock(registryMutex);
  int ended = 0;
  for (const Entry& entry : registry()) {
    if (entry.cliqueId != cliqueId || entry.device != device || entry.member == aborted) continue;
    entry.member->endKernelsUnderLock(why);
    ++ended;
  }
  return ended;
}

}  // namespace weft::device
