#include "src/core/progress_record.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "algorithms/collective.h"
#include "algorithms/datatype.h"
#include "src/base/knobs.h"
#include "src/base/log.h"

namespace weft::core {
namespace {

constexpr size_t kPoolSize = 4096;
ProgressRecord gPool[kPoolSize];

/// Appends text and numbers to a fixed buffer without allocating (usable in a signal handler).
class LineWriter {
 public:
  LineWriter(char* buffer, size_t capacity) : buffer_(buffer), capacity_(capacity) { terminate(); }

  LineWriter& text(const char* text) {
    while (*text != '\0' && length_ + 1 < capacity_) buffer_[length_++] = *text++;
    return terminate();
  }
  LineWriter& number(uint64_t value, unsigned base = 10) {
    char digits[24];
    size_t n = 0;
    do {
      digits[n++] = "0123456789abcdef"[value % base];
      value /= base;
    } while (value != 0);
    while (n > 0 && length_ + 1 < capacity_) buffer_[length_++] = digits[--n];
    return terminate();
  }
  LineWriter& signedNumber(int64_t value) {
    if (value < 0) return text("-").number(static_cast<uint64_t>(-value));
    return number(static_cast<uint64_t>(value));
  }
  size_t length() const { return length_; }

 private:
  LineWriter& terminate() {
    if (capacity_ > 0) buffer_[length_ < capacity_ ? length_ : capacity_ - 1] = '\0';
    return *this;
  }

  char* buffer_;
  size_t capacity_;
  size_t length_ = 0;
};

struct sigaction gPreviousAction;
int gDumpSignal = 0;

void onDumpSignal(int signal, siginfo_t* info, void* context) {
  int savedErrno = errno;
  dumpProgress(STDERR_FILENO);
  errno = savedErrno;
  if (gPreviousAction.sa_flags & SA_SIGINFO) {
    if (gPreviousAction.sa_sigaction != nullptr) gPreviousAction.sa_sigaction(signal, info, context);
  } else if (gPreviousAction.sa_handler != SIG_DFL && gPreviousAction.sa_handler != SIG_IGN &&
             gPreviousAction.sa_handler != nullptr) {
    gPreviousAction.sa_handler(signal);
  }
  // SIG_DFL of USR1/USR2 would end the process: the user asked for a report, not an exit.
}

int parseSignal(const std::string& name) {
  if (name == "USR1" || name == "SIGUSR1") return SIGUSR1;
  if (name == "USR2" || name == "SIGUSR2") return SIGUSR2;
  char* end = nullptr;
  long number = strtol(name.c_str(), &end, 10);
  if (end != name.c_str() && *end == '\0' && number > 0 && number < NSIG) return static_cast<int>(number);
  return 0;
}

}  // namespace

ProgressRecord* acquireProgressRecord(uint64_t commHash, int rank, int nranks) {
  for (ProgressRecord& record : gPool) {
    bool expected = false;
    if (!record.inUse.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) continue;
    record.commHash.store(commHash, std::memory_order_relaxed);
    record.rank.store(rank, std::memory_order_relaxed);
    record.nranks.store(nranks, std::memory_order_relaxed);
    record.state.store(static_cast<int>(ProgressState::kIdle), std::memory_order_relaxed);
    record.sequence.store(0, std::memory_order_relaxed);
    return &record;
  }
  return nullptr;
}

void recordCall(ProgressRecord* record, ProgressState state, int collective, int type, uint64_t count,
                uint64_t sequence) {
  record->state.store(static_cast<int>(state), std::memory_order_relaxed);
  record->collective.store(collective, std::memory_order_relaxed);
  record->type.store(type, std::memory_order_relaxed);
  record->count.store(count, std::memory_order_relaxed);
  record->sequence.store(sequence, std::memory_order_relaxed);
}

void releaseProgressRecord(ProgressRecord* record) {
  if (record != nullptr) record->inUse.store(false, std::memory_order_release);
}

size_t formatProgress(const ProgressRecord& record, char* buffer, size_t capacity) {
  auto load = [](const auto& field) { return field.load(std::memory_order_relaxed); };
  LineWriter line(buffer, capacity);
  line.text("rank ").number(load(record.rank)).text("/").number(load(record.nranks));
  line.text(" comm 0x").number(load(record.commHash), 16).text(": ");
  auto state = static_cast<ProgressState>(load(record.state));
  uint64_t sequence = load(record.sequence);
  const char* name = algorithms::collectiveName(static_cast<algorithms::Collective>(load(record.collective)));
  if (state == ProgressState::kIdle) {
    line.text("no call in progress");
    if (sequence > 0) line.text(" (last: ").text(name).text(" #").number(sequence).text(")");
    return line.length();
  }
  line.text(name).text(" #").number(sequence).text(" (").number(load(record.count)).text(" x ");
  line.text(algorithms::dataTypeName(static_cast<algorithms::DataType>(load(record.type)))).text(")");
  if (state == ProgressState::kRunning) return line.text(": running").length();
  if (state == ProgressState::kLaunched) return line.text(": the last call launched on the GPU").length();
  line.text(", channel ").number(load(record.channel)).text(" step ").number(load(record.step) + 1);
  line.text("/").number(load(record.steps)).text(" piece ").number(load(record.piece)).text(": waiting ");
  auto direction = static_cast<WaitDirection>(load(record.direction));
  if (direction == WaitDirection::kReceive) line.text("to receive from rank ").signedNumber(load(record.peer));
  else if (direction == WaitDirection::kSend) line.text("for a free slot to send to rank ").signedNumber(load(record.peer));
  else if (direction == WaitDirection::kQueued) line.text("for an earlier operation on the same connection");
  else line.text("for its sends to be delivered");
  return line.length();
}

std::string describeProgress(const ProgressRecord& record) {
  char buffer[256];
  size_t length = formatProgress(record, buffer, sizeof(buffer));
  return std::string(buffer, length);
}

void dumpProgress(int fd) {
  char line[320];
  LineWriter header(line, sizeof(line));
  header.text("weft pid ").number(static_cast<uint64_t>(getpid())).text(": progress of this process's communicators\n");
  ssize_t written = write(fd, line, header.length());
  for (const ProgressRecord& record : gPool) {
    if (!record.inUse.load(std::memory_order_acquire)) continue;
    LineWriter prefix(line, sizeof(line));
    prefix.text("weft pid ").number(static_cast<uint64_t>(getpid())).text(": ");
    size_t length = prefix.length();
    length += formatProgress(record, line + length, sizeof(line) - length - 1);
    line[length++] = '\n';
    written = write(fd, line, length);
  }
  (void)written;  // nothing useful to do about a failed write to stderr in a signal handler
}

void installDumpSignalHandler() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string name = knobs::getString(knobs::KnobId::kDumpSignal);
  if (name.empty() || gDumpSignal != 0) return;  // not asked for, or installed already
  int signal = parseSignal(name);
  if (signal == 0) {
    WEFT_WARN("WEFT_DUMP_SIGNAL=%s is not a signal (use USR1, USR2 or a number); no progress dumps", name.c_str());
    return;
  }
  struct sigaction action = {};
  action.sa_sigaction = onDumpSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal, &action, &gPreviousAction) != 0) {
    WEFT_WARN("WEFT_DUMP_SIGNAL=%s: sigaction failed: %s", name.c_str(), strerror(errno));
    return;
  }
  gDumpSignal = signal;
  WEFT_INFO(log::kInit, "signal %d (WEFT_DUMP_SIGNAL) prints what every communicator waits for", signal);
}

}  // namespace weft::core
