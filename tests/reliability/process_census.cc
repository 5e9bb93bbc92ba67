#include "tests/reliability/process_census.h"

#include <dirent.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "nccl.h"
#include "tests/harness/scoped_env.h"

namespace weft::reliability {
namespace {

constexpr auto kSettlePoll = std::chrono::milliseconds(20);
/// Equal censuses in a row (half a second) before a count counts as settled: longer than a busy
/// machine keeps a runnable thread waiting for a core.
constexpr int kSettledSamples = 25;
constexpr auto kWarmUpSettleLimit = std::chrono::seconds(30);

/// Entries of a /proc folder, minus the descriptor that opendir itself holds when listing fds.
int countEntries(const char* dir, bool minusOwnFd) {
  DIR* listing = opendir(dir);
  if (listing == nullptr) return -1;
  int count = 0;
  while (dirent* entry = readdir(listing)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) ++count;
  }
  closedir(listing);
  return minusOwnFd ? count - 1 : count;
}

}  // namespace

ProcessCensus takeCensus() {
  return ProcessCensus{countEntries("/proc/self/fd", true), countEntries("/proc/self/task", false)};
}

std::string describe(const ProcessCensus& census) {
  return std::to_string(census.fds) + " fds, " + std::to_string(census.threads) + " threads";
}

void PrintTo(const ProcessCensus& census, std::ostream* out) { *out << describe(census); }

std::string listFds() {
  std::string text;
  for (const std::string& name : folderEntries("/proc/self/fd")) {
    char target[PATH_MAX] = {};
    std::string link = "/proc/self/fd/" + name;
    ssize_t length = readlink(link.c_str(), target, sizeof(target) - 1);
    if (length < 0) continue;  // the listing's own descriptor, closed by now
    if (!text.empty()) text += ", ";
    text += name + " -> " + std::string(target, static_cast<size_t>(length));
  }
  return text;
}

std::vector<std::string> folderEntries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) return names;
  while (dirent* entry = readdir(listing)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) names.push_back(entry->d_name);
  }
  closedir(listing);
  return names;
}

std::string joinNames(const std::vector<std::string>& names) {
  if (names.empty()) return "nothing";
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

ProcessCensus waitForCensus(const ProcessCensus& expected, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  ProcessCensus census = takeCensus();
  while (!(census == expected) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kSettlePoll);
    census = takeCensus();
  }
  return census;
}

ProcessCensus settledCensus(std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  ProcessCensus census = takeCensus();
  for (int agreeing = 1; agreeing < kSettledSamples && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(kSettlePoll);
    ProcessCensus next = takeCensus();
    agreeing = next == census ? agreeing + 1 : 1;
    census = next;
  }
  return census;
}

ProcessCensus censusAfterWarmUp() {
  const int threads = takeCensus().threads;
  {
    harness::ScopedEnv env(std::vector<harness::EnvVar>{{"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_COMM_ID", std::nullopt}});
    ncclUniqueId id;
    ncclComm_t comm = nullptr;
    if (ncclGetUniqueId(&id) == ncclSuccess && ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess) {
      (void)ncclCommDestroy(comm);
    }
  }
  // The warm-up's root ends shortly after its rank got the table.
  const auto deadline = std::chrono::steady_clock::now() + kWarmUpSettleLimit;
  while (takeCensus().threads > threads && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kSettlePoll);
  }
  return settledCensus(kWarmUpSettleLimit);
}

ScratchShmFolder::ScratchShmFolder() {
  char pattern[] = "/dev/shm/weft-reliability-XXXXXX";
  if (mkdtemp(pattern) != nullptr) path_ = pattern;
}

ScratchShmFolder::~ScratchShmFolder() {
  if (path_.empty()) return;
  for (const std::string& name : folderEntries(path_)) unlink((path_ + "/" + name).c_str());
  rmdir(path_.c_str());
}

}  // namespace weft::reliability
