#include "src/device/local_clique.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace weft::device {
namespace {

struct Entry {
  uint64_t cliqueId;
  int device;
  LocalCliqueMember* member;
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
// Leftovers of ranks that left while others of their clique were registered. Never destroyed
// itself: a process that exits with communicators alive frees nothing of theirs either.
std::vector<Kept>& kept() {
  static std::vector<Kept>* leftovers = new std::vector<Kept>();
  return *leftovers;
}

}  // namespace

void joinLocalClique(uint64_t cliqueId, int device, LocalCliqueMember* member) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().push_back({cliqueId, device, member});
}

void leaveLocalClique(LocalCliqueMember* member) {
  std::lock_guard<std::mutex> lock(registryMutex);
  std::vector<Entry>& entries = registry();
  entries.erase(std::remove_if(entries.begin(), entries.end(), [member](const Entry& e) { return e.member == member; }),
                entries.end());
}

void freeWhenCliqueHasLeft(uint64_t cliqueId, std::unique_ptr<LocalCliqueLeftovers> leftovers) {
  std::vector<std::unique_ptr<LocalCliqueLeftovers>> freed;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    const std::vector<Entry>& entries = registry();
    const bool othersStay =
        std::any_of(entries.begin(), entries.end(), [cliqueId](const Entry& e) { return e.cliqueId == cliqueId; });
    std::vector<Kept>& waiting = kept();
    if (othersStay) {
      waiting.push_back({cliqueId, std::move(leftovers)});
      return;
    }
    for (Kept& entry : waiting) {
      if (entry.cliqueId == cliqueId) freed.push_back(std::move(entry.leftovers));
    }
    waiting.erase(std::remove_if(waiting.begin(), waiting.end(), [](const Kept& e) { return e.leftovers == nullptr; }),
                  waiting.end());
    freed.push_back(std::move(leftovers));
  }
  freed.clear();  // the frees wait for the GPU: not under the lock
}

int endLocalPeers(uint64_t cliqueId, int device, const LocalCliqueMember* aborted, const Status& why) {
  std::lock_guard<std::mutex> lock(registryMutex);
  int ended = 0;
  for (const Entry& entry : registry()) {
    if (entry.cliqueId != cliqueId || entry.device != device || entry.member == aborted) continue;
    entry.member->endKernels(why);
    ++ended;
  }
  return ended;
}

}  // namespace weft::device
