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

// The blocks of the record's latest kernel that have a record, and that kernel's number.
int recordedBlocks(const ProgressRecord& record, const GpuBlockProgress** blocks, uint64_t* kernel) {
  *blocks = record.blocks.load(std::memory_order_acquire);
  *kernel = record.kernel.load(std::memory_order_relaxed);
  if (*blocks == nullptr || *kernel == 0) return 0;
  const int launched = record.kernelBlocks.load(std::memory_order_relaxed);
  return launched < static_cast<int>(kRecordedBlocks) ? launched : static_cast<int>(kRecordedBlocks);
}

// "lane 0 step 2/3 piece 0: waiting to receive from rank 1 on channel 0 (posted 1, needs 2)", or
// "running", "done".
void describeWait(const GpuBlockProgress& block, LineWriter& line) {
  const auto activity = static_cast<BlockActivity>(block.activity);
  if (activity == BlockActivity::kReceiving || activity == BlockActivity::kSending ||
      activity == BlockActivity::kReceivingLine) {
    line.text("lane ").number(block.lane).text(" step ").number(block.step + 1).text("/").number(block.steps);
    line.text(" piece ").number(block.piece).text(": ");
  }
  switch (activity) {
    case BlockActivity::kReceiving: line.text("waiting to receive from rank "); break;
    case BlockActivity::kSending: line.text("waiting for a free slot to send to rank "); break;
    case BlockActivity::kReceivingLine: line.text("waiting for an LL line from rank "); break;
    case BlockActivity::kArriving:
    case BlockActivity::kFinishing: line.text("direct allreduce: waiting for rank "); break;
    case BlockActivity::kAtBarrier: line.text("NVLS allreduce: waiting at the barrier of the team's blocks"); break;
    case BlockActivity::kRunning: line.text("running"); return;
    case BlockActivity::kDone: line.text("done"); return;
    default: line.text("in no known state"); return;
  }
  if (activity == BlockActivity::kAtBarrier) {
    line.text(" (").number(block.seen).text(" arrivals, needs ").number(block.wanted).text(")");
    return;
  }
  line.signedNumber(block.peer);
  if (activity == BlockActivity::kArriving || activity == BlockActivity::kFinishing) {
    line.text(activity == BlockActivity::kArriving ? " to publish its buffers for call " : " to finish call ");
    line.number(block.wanted).text(" (it is at call ").number(block.seen).text(")");
    return;
  }
  line.text(" on channel ").signedNumber(block.channel).text(" (");
  if (activity == BlockActivity::kReceiving) line.text("posted ");
  else if (activity == BlockActivity::kSending) line.text("released ");
  else line.text("flag ");
  line.number(block.seen).text(", needs ");
  line.number(block.wanted).text(")");
}

// The line of block `b` of the latest kernel; false (writing nothing) where it is done with it.
bool formatBlock(const GpuBlockProgress& block, int b, uint64_t kernel, LineWriter& line) {
  const uint64_t its = block.kernel;
  if (its == kernel && static_cast<BlockActivity>(block.activity) == BlockActivity::kDone) return false;
  line.text("GPU block ").number(static_cast<uint64_t>(b));
  if (its != kernel) {
    line.text(": not in kernel ").number(kernel).text(" yet (last: ");
    if (its == 0) return line.text("none)"), true;
    line.text("kernel ").number(its).text(", ");  // a graph's replay numbers its kernels as at capture
    describeWait(block, line);
    line.text(")");
    return true;
  }
  line.text(" of kernel ").number(kernel).text(": ");
  describeWait(block, line);
  return true;
}

// "GPU kernel 7, 4 blocks: 2 done, 1 waiting, 0 running, 1 not started".
void formatKernel(const GpuBlockProgress* blocks, int count, uint64_t kernel, LineWriter& line) {
  int done = 0;
  int waiting = 0;
  int running = 0;
  for (int b = 0; b < count; ++b) {
    const GpuBlockProgress block = readGpuBlock(blocks[b]);
    if (block.kernel != kernel) continue;
    const auto activity = static_cast<BlockActivity>(block.activity);
    if (activity == BlockActivity::kDone) ++done;
    else if (activity == BlockActivity::kRunning) ++running;
    else ++waiting;
  }
  line.text("GPU kernel ").number(kernel).text(", ").number(static_cast<uint64_t>(count));
  line.text(count == 1 ? " block: " : " blocks: ");
  line.number(static_cast<uint64_t>(done)).text(" done, ").number(static_cast<uint64_t>(waiting)).text(" waiting, ");
  line.number(static_cast<uint64_t>(running)).text(" running, ");
  line.number(static_cast<uint64_t>(count - done - waiting - running)).text(" not started");
}

}  // namespace

GpuBlockProgress readGpuBlock(const GpuBlockProgress& record) {
  const volatile GpuBlockProgress& live = record;
  GpuBlockProgress copy;
  copy.kernel = live.kernel;
  copy.activity = live.activity;
  copy.peer = live.peer;
  copy.channel = live.channel;
  copy.lane = live.lane;
  copy.step = live.step;
  copy.steps = live.steps;
  copy.piece = live.piece;
  copy.seen = live.seen;
  copy.wanted = live.wanted;
  copy.blocks = live.blocks;
  return copy;
}

bool isGpuWait(BlockActivity activity) {
  switch (activity) {
    case BlockActivity::kReceiving:
    case BlockActivity::kSending:
    case BlockActivity::kReceivingLine:
    case BlockActivity::kArriving:
    case BlockActivity::kFinishing:
    case BlockActivity::kAtBarrier: return true;
    default: return false;
  }
}

ProgressRecord* acquireProgressRecord(uint64_t commHash, int rank, int nranks) {
  for (ProgressRecord& record : gPool) {
    bool expected = false;
    if (!record.inUse.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) continue;
    record.commHash.store(commHash, std::memory_order_relaxed);
    record.rank.store(rank, std::memory_order_relaxed);
    record.nranks.store(nranks, std::memory_order_relaxed);
    record.state.store(static_cast<int>(ProgressState::kIdle), std::memory_order_relaxed);
    record.sequence.store(0, std::memory_order_relaxed);
    record.kernel.store(0, std::memory_order_relaxed);
    record.kernelBlocks.store(0, std::memory_order_relaxed);
    record.blocks.store(nullptr, std::memory_order_release);
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

void attachGpuBlocks(ProgressRecord* record, const GpuBlockProgress* blocks) {
  record->blocks.store(blocks, std::memory_order_release);
}

void recordKernel(ProgressRecord* record, uint64_t kernel, int blocks) {
  record->kernelBlocks.store(blocks, std::memory_order_relaxed);
  record->kernel.store(kernel, std::memory_order_relaxed);
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

namespace {

// Calls emit(text, length) for each of formatGpuBlocks' lines, each starting with `prefix` and
// ending with '\n'.
template <class Emit>
void forEachGpuLine(const ProgressRecord& record, const char* prefix, Emit emit) {
  const GpuBlockProgress* blocks = nullptr;
  uint64_t kernel = 0;
  const int count = recordedBlocks(record, &blocks, &kernel);
  if (count == 0) return;
  for (int b = -1; b < count; ++b) {  // -1: the kernel's line
    char text[320];
    LineWriter line(text, sizeof(text) - 1);
    line.text(prefix);
    if (b < 0) formatKernel(blocks, count, kernel, line);
    else if (!formatBlock(readGpuBlock(blocks[b]), b, kernel, line)) continue;
    size_t length = line.length();
    text[length++] = '\n';
    emit(text, length);
  }
}

}  // namespace

size_t formatGpuBlocks(const ProgressRecord& record, char* buffer, size_t capacity) {
  LineWriter out(buffer, capacity);
  forEachGpuLine(record, "", [&out](char* text, size_t length) {
    text[length] = '\0';
    out.text(text);
  });
  return out.length();
}

bool gpuBlocksUnfinished(const ProgressRecord& record) {
  const GpuBlockProgress* blocks = nullptr;
  uint64_t kernel = 0;
  const int count = recordedBlocks(record, &blocks, &kernel);
  for (int b = 0; b < count; ++b) {
    const GpuBlockProgress block = readGpuBlock(blocks[b]);
    if (block.kernel != kernel || static_cast<BlockActivity>(block.activity) != BlockActivity::kDone) return true;
  }
  return false;
}

std::string describeGpuBlocks(const ProgressRecord& record) {
  std::string text(64 * 1024, '\0');
  text.resize(formatGpuBlocks(record, text.data(), text.size()));
  return text;
}

std::string describeFirstGpuWait(const GpuBlockProgress* blocks) {
  for (size_t b = 0; b < kRecordedBlocks; ++b) {
    const GpuBlockProgress block = readGpuBlock(blocks[b]);
    if (!isGpuWait(static_cast<BlockActivity>(block.activity))) continue;
    char text[320];
    LineWriter line(text, sizeof(text));
    formatBlock(block, static_cast<int>(b), block.kernel, line);
    return std::string(text, line.length());
  }
  return "";
}

void dumpProgress(int fd) {
  char line[320];
  char gpuPrefix[64];
  LineWriter(gpuPrefix, sizeof(gpuPrefix)).text("weft pid ").number(static_cast<uint64_t>(getpid())).text(":   ");
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
    if (static_cast<ProgressState>(record.state.load(std::memory_order_relaxed)) == ProgressState::kLaunched) {
      forEachGpuLine(record, gpuPrefix, [fd, &written](const char* text, size_t length) {
        written = write(fd, text, length);
      });
    }
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
