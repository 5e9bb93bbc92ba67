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

std::mutex registryMutex;
std::vector<Entry>& registry() {
  static std::vector<Entry>* entries = new std::vector<Entry>();  // outlives static destructors
  return *entries;
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
