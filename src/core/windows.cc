#include "src/core/windows.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "src/base/fd_mailbox.h"
#include "src/base/log.h"
#include "src/core/communicator.h"
#include "src/core/mem_allocations.h"

namespace weft::core {
namespace {

// Whether `self` reaches `peer`'s window only by mapping its file: another process of its host.
bool needsFile(const PeerInfo& self, const PeerInfo& peer) { return peer.sameHost(self) && !peer.sameProcess(self); }

// The tag of the file `sender` passes for registration `number`: only the communicator's ranks
// know the clique id.
uint64_t fileTag(uint64_t cliqueId, uint64_t number, int sender) {
  uint64_t value = cliqueId ^ (number * 0x9e3779b97f4a7c15ull) ^ (static_cast<uint64_t>(sender) << 48);
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

// Allgathers one flag per rank; true if every rank's is set.
Status everyRank(Bootstrap& bootstrap, int rank, int nranks, bool mine, std::vector<int32_t>* flags, bool* all) {
  flags->assign(static_cast<size_t>(nranks), 0);
  (*flags)[static_cast<size_t>(rank)] = mine ? 1 : 0;
  WEFT_RETURN_IF_ERROR(bootstrap.allGather(flags->data(), sizeof(int32_t)));
  *all = std::all_of(flags->begin(), flags->end(), [](int32_t flag) { return flag != 0; });
  return Status::ok();
}

// Closes its descriptor when it goes.
struct OwnedFile {
  int fd = -1;
  ~OwnedFile() {
    if (fd >= 0) close(fd);
  }
};

// Ranks of one host that send their files in one round: a mailbox must queue them all.
constexpr int kSendersPerRound = 8;

// The round in which each rank sends its file: its place among the ranks of its host, in batches
// of kSendersPerRound.
std::vector<int> sendingRounds(const std::vector<PeerInfo>& peers) {
  std::vector<int> rounds(peers.size(), 0);
  for (size_t r = 0; r < peers.size(); ++r) {
    int place = 0;
    for (size_t q = 0; q < r; ++q) place += peers[q].sameHost(peers[r]) ? 1 : 0;
    rounds[r] = place / kSendersPerRound;
  }
  return rounds;
}

}  // namespace

// What each rank tells the others about its window, allgathered.
struct Window::WindowOffer {
  uint64_t address = 0;     // the window's base in its own process
  uint64_t bytes = 0;
  uint64_t fileOffset = 0;  // where the window starts in its file (hasFile)
  int32_t hasFile = 0;      // 1: the window lies in an ncclMemAlloc file this rank sends its peers
  int32_t reserved = 0;
  char mailbox[FdMailbox::kMaxNameBytes] = {};  // where peers send their files; empty: nowhere
};

Window::Window(uint64_t number, char* base, size_t bytes, int nranks)
    : number_(number), base_(base), bytes_(bytes), peers_(static_cast<size_t>(nranks)) {}

Window::~Window() {
  for (const PeerWindow& peer : peers_) {
    if (peer.mapping != nullptr) munmap(peer.mapping, peer.mappingBytes);
  }
}

bool Window::offsetOf(const void* address, size_t bytes, size_t* offset) const {
  const auto begin = reinterpret_cast<uintptr_t>(base_);
  const auto at = reinterpret_cast<uintptr_t>(address);
  if (at < begin || at - begin > bytes_ || bytes > bytes_ - (at - begin)) return false;
  *offset = at - begin;
  return true;
}

Status Window::exchange(Communicator& comm) {
  const int rank = comm.rank();
  const int nranks = comm.nranks();
  const PeerInfo& self = comm.peer(rank);
  const bool filesWanted = std::any_of(comm.peers().begin(), comm.peers().end(),
                                       [&](const PeerInfo& peer) { return needsFile(self, peer); });

  // 1: every rank's window, and whether (and where) it takes and gives files.
  FdMailbox mailbox;
  OwnedFile file;
  std::vector<WindowOffer> offers(static_cast<size_t>(nranks));
  WindowOffer& mine = offers[static_cast<size_t>(rank)];
  mine.address = reinterpret_cast<uint64_t>(base_);
  mine.bytes = bytes_;
  if (filesWanted) {
    size_t fileOffset = 0;
    if (duplicateBackingFile(base_, bytes_, &file.fd, &fileOffset)) {
      mine.hasFile = 1;
      mine.fileOffset = fileOffset;
    }
    const Status opened = FdMailbox::open(&mailbox);
    if (opened.isOk()) {
      std::snprintf(mine.mailbox, sizeof(mine.mailbox), "%s", mailbox.name().c_str());
    } else {
      WEFT_INFO(log::kReg, "window %llu: this rank cannot take its peers' files, so it reaches no other process's "
                "window: %s", static_cast<unsigned long long>(number_), opened.message().c_str());
    }
  }
  WEFT_RETURN_IF_ERROR(comm.bootstrap().allGather(offers.data(), sizeof(WindowOffer)));

  // A peer thread's window is at its own address; another host's cannot be reached.
  bool reachesAll = true;
  for (int peer = 0; peer < nranks; ++peer) {
    const WindowOffer& offer = offers[static_cast<size_t>(peer)];
    if (peer == rank || comm.peer(peer).sameProcess(self)) {
      peers_[static_cast<size_t>(peer)].base = reinterpret_cast<char*>(offer.address);
      peers_[static_cast<size_t>(peer)].bytes = offer.bytes;
    } else if (!needsFile(self, comm.peer(peer))) {
      reachesAll = false;
    }
  }

  // 2: the files, passed to the other processes of each host in rounds: a mailbox queues only a
  // few messages (net.unix.max_dgram_qlen, 10 by default), so in each round only the ranks whose
  // place among their host's ranks falls in that round's batch send, then every rank takes its.
  const std::vector<int> batches = sendingRounds(comm.peers());
  const int rounds = *std::max_element(batches.begin(), batches.end()) + 1;
  for (int round = 0; round < rounds; ++round) {
    // Every rank has taken the last round's files before this round's go out.
    if (round > 0) WEFT_RETURN_IF_ERROR(comm.bootstrap().barrier());
    bool sentAll = true;
    for (int peer = 0; batches[rank] == round && mine.hasFile != 0 && peer < nranks; ++peer) {
      const WindowOffer& offer = offers[static_cast<size_t>(peer)];
      if (!needsFile(self, comm.peer(peer)) || offer.mailbox[0] == '\0') continue;
      const std::string name(offer.mailbox, strnlen(offer.mailbox, sizeof(offer.mailbox)));
      const Status sent = FdMailbox::send(name, fileTag(comm.cliqueId(), number_, rank), file.fd);
      if (!sent.isOk()) {
        WEFT_INFO(log::kReg, "window %llu: passing its file to rank %d failed: %s",
                  static_cast<unsigned long long>(number_), peer, sent.message().c_str());
        sentAll = false;
      }
    }
    std::vector<int32_t> sent;
    bool unused = false;
    WEFT_RETURN_IF_ERROR(everyRank(comm.bootstrap(), rank, nranks, sentAll, &sent, &unused));
    std::vector<uint64_t> tags;
    std::vector<int> senders;
    for (int peer = 0; peer < nranks; ++peer) {
      if (batches[peer] != round || !needsFile(self, comm.peer(peer))) continue;
      if (offers[static_cast<size_t>(peer)].hasFile != 0 && sent[static_cast<size_t>(peer)] != 0 &&
          mine.mailbox[0] != '\0') {
        tags.push_back(fileTag(comm.cliqueId(), number_, peer));
        senders.push_back(peer);
      } else {
        reachesAll = false;
      }
    }
    for (size_t received = 0; received < tags.size(); ++received) {
      size_t which = 0;
      int peerFile = -1;
      const Status taken = mailbox.receiveAny(tags.data(), tags.size(), &which, &peerFile);
      if (!taken.isOk()) {
        WEFT_INFO(log::kReg, "window %llu: %s", static_cast<unsigned long long>(number_), taken.message().c_str());
        reachesAll = false;
        break;
      }
      reachesAll &= mapPeerFile(senders[which], offers[static_cast<size_t>(senders[which])], peerFile);
    }
  }

  // 3: whether every rank reached every window.
  std::vector<int32_t> reached;
  WEFT_RETURN_IF_ERROR(everyRank(comm.bootstrap(), rank, nranks, reachesAll, &reached, &reachedByEveryRank_));
  pending_ = false;
  WEFT_INFO(log::kReg, "window %llu: %p, %zu bytes; %s", static_cast<unsigned long long>(number_),
            static_cast<void*>(base_), bytes_,
            reachedByEveryRank_
                ? "every rank reaches every window: allreduces in it read the peers' buffers in place"
                : "some rank cannot reach every window (one not in ncclMemAlloc's memory, on another host, or "
                  "whose file could not be passed or mapped: NCCL_DEBUG_SUBSYS=REG on every rank says which): a "
                  "registration only");
  return Status::ok();
}

bool Window::mapPeerFile(int peer, const WindowOffer& offer, int file) {
  const OwnedFile owned{file};
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t inPage = offer.fileOffset % page;
  const size_t length = offer.bytes + inPage;
  // Every page is mapped now (MAP_POPULATE), not at its first access from a collective: under a
  // hypervisor a page fault costs microseconds, and a call that walked into pages of the peer's
  // window it had not touched yet ran 1.5x longer (a 1 MiB reducescatter in place).
  void* mapping = offer.bytes == 0 ? MAP_FAILED
                                   : mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, file,
                                          static_cast<off_t>(offer.fileOffset - inPage));
  const int mapError = errno;
  if (mapping == MAP_FAILED) {
    WEFT_INFO(log::kReg, "window %llu: mapping rank %d's window of %llu bytes failed: %s",
              static_cast<unsigned long long>(number_), peer, static_cast<unsigned long long>(offer.bytes),
              offer.bytes == 0 ? "it is empty" : std::strerror(mapError));
    return false;
  }
  PeerWindow& window = peers_[static_cast<size_t>(peer)];
  window.mapping = mapping;
  window.mappingBytes = length;
  window.base = static_cast<char*>(mapping) + inPage;
  window.bytes = offer.bytes;
  return true;
}

Window* WindowTable::add(std::unique_ptr<Window> window) {
  Window* handle = window.get();
  byHandle_.emplace(handle, std::move(window));
  return handle;
}

std::unique_ptr<Window> WindowTable::take(const void* handle) {
  auto found = byHandle_.find(handle);
  if (found == byHandle_.end()) return nullptr;
  std::unique_ptr<Window> window = std::move(found->second);
  byHandle_.erase(found);
  return window;
}

const Window* WindowTable::find(const void* handle) const {
  auto found = byHandle_.find(handle);
  return found == byHandle_.end() ? nullptr : found->second.get();
}

const Window* WindowTable::numbered(uint64_t number) const {
  for (const auto& [handle, window] : byHandle_) {
    if (window->number() == number) return window.get();
  }
  return nullptr;
}

const Window* WindowTable::reachedWindowOf(const void* address, size_t bytes) const {
  size_t offset = 0;
  for (const auto& [handle, window] : byHandle_) {
    if (window->reachedByEveryRank() && window->offsetOf(address, bytes, &offset)) return window.get();
  }
  return nullptr;
}

}  // namespace weft::core
