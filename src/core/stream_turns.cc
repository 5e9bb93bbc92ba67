#include "src/core/stream_turns.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace weft::core {
namespace {

// Where a launch is with a turn it holds.
enum class TurnState {
  kTaken,      // on its way to enqueue, or to set up: later launches wait for it
  kSettingUp,  // may wait for peers: later launches go ahead of it
  kReady,      // awaiting its turn
  kEnqueuing,  // putting its work on the stream
};

// One thread's launches on one stream: the turns taken and not yet passed, by number.
struct Line {
  uint64_t taken = 0;
  std::map<uint64_t, TurnState> held;
};

// A thread, by a number never reused (std::thread::id may be, once a thread has ended).
uint64_t thisThreadNumber() {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t number = next.fetch_add(1);
  return number;
}

// The legacy default stream, which a null cudaStream_t also names (cudaStreamLegacy's value).
const void* const kLegacyStream = reinterpret_cast<const void*>(uintptr_t{1});

struct Lines {
  std::mutex mutex;
  std::map<std::pair<uint64_t, const void*>, Line> byKey;  // a line leaves once no turn is held

  Line& of(uint64_t thread, const void* stream) { return byKey.at({thread, stream}); }

  // Whether the launch that holds turn `number` of (`thread`, `stream`) may put its work there now.
  bool mayEnqueue(uint64_t thread, const void* stream, uint64_t number) {
    for (const auto& [other, state] : of(thread, stream).held) {
      if (other == number) continue;
      if (state == TurnState::kEnqueuing) return false;                  // another launch is there
      if (other < number && state != TurnState::kSettingUp) return false;  // an earlier one
    }
    return true;
  }
};

Lines& lines() {
  static Lines* all = new Lines();  // never destroyed: background launches may outlive main()
  return *all;
}

}  // namespace

LaunchTurns LaunchTurns::take(std::span<const Op> ops) {
  LaunchTurns launch;
  const uint64_t self = thisThreadNumber();
  Lines& all = lines();
  std::lock_guard<std::mutex> lock(all.mutex);
  for (const Op& op : ops) {
    if (!op.onDevice) continue;
    const void* stream = op.stream == nullptr ? kLegacyStream : op.stream;
    const bool taken = std::any_of(launch.turns_.begin(), launch.turns_.end(),
                                   [stream](const Turn& turn) { return turn.stream == stream; });
    if (taken) continue;
    Line& line = all.byKey[{self, stream}];
    const uint64_t number = line.taken++;
    line.held.emplace(number, TurnState::kTaken);
    launch.turns_.push_back({self, stream, number});
  }
  return launch;
}

LaunchTurns::LaunchTurns(LaunchTurns&& other) noexcept : turns_(std::move(other.turns_)) { other.turns_.clear(); }

LaunchTurns& LaunchTurns::operator=(LaunchTurns&& other) noexcept {
  if (this != &other) {
    pass();
    turns_ = std::move(other.turns_);
    other.turns_.clear();
  }
  return *this;
}

LaunchTurns::~LaunchTurns() { pass(); }

void LaunchTurns::pass() {
  if (turns_.empty()) return;
  Lines& all = lines();
  std::lock_guard<std::mutex> lock(all.mutex);
  for (const Turn& turn : turns_) {
    auto found = all.byKey.find({turn.thread, turn.stream});
    found->second.held.erase(turn.number);
    if (found->second.held.empty()) all.byKey.erase(found);
  }
  turns_.clear();
}

void LaunchTurns::settingUp() {
  if (turns_.empty()) return;
  Lines& all = lines();
  std::lock_guard<std::mutex> lock(all.mutex);
  for (const Turn& turn : turns_) {
    TurnState& state = all.of(turn.thread, turn.stream).held[turn.number];
    if (state == TurnState::kTaken) state = TurnState::kSettingUp;
  }
}

Status LaunchTurns::await(const WaitContext& context) {
  if (turns_.empty()) return Status::ok();
  Lines& all = lines();
  {
    std::lock_guard<std::mutex> lock(all.mutex);
    for (const Turn& turn : turns_) all.of(turn.thread, turn.stream).held[turn.number] = TurnState::kReady;
  }
  // Every stream at once, or none: a launch never holds one stream while it waits for another.
  return waitUntil(context, [this, &all] {
    std::lock_guard<std::mutex> lock(all.mutex);
    const bool now = std::all_of(turns_.begin(), turns_.end(), [&all](const Turn& turn) {
      return all.mayEnqueue(turn.thread, turn.stream, turn.number);
    });
    if (!now) return false;
    for (const Turn& turn : turns_) all.of(turn.thread, turn.stream).held[turn.number] = TurnState::kEnqueuing;
    return true;
  });
}

}  // namespace weft::core
