#include "src/base/log.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "src/base/knobs.h"
#include "src/base/version.h"

namespace weft::log {
namespace {

std::mutex gMutex;
std::atomic<bool> gInitialized{false};
std::atomic<int> gLevel{0};
std::atomic<uint32_t> gSubsys{0};
FILE* gOut = stdout;
char gHost[64] = "";
thread_local int tDevice = -1;

Level parseLevel(const std::string& text) {
  if (strcasecmp(text.c_str(), "VERSION") == 0) return Level::kVersion;
  if (strcasecmp(text.c_str(), "WARN") == 0) return Level::kWarn;
  if (strcasecmp(text.c_str(), "INFO") == 0) return Level::kInfo;
  if (strcasecmp(text.c_str(), "TRACE") == 0) return Level::kTrace;
  return Level::kNone;
}

uint32_t subsysBit(const std::string& name) {
  static const struct {
    const char* name;
    uint32_t bit;
  } kNames[] = {{"INIT", kInit},   {"COLL", kColl},   {"P2P", kP2p},     {"SHM", kShm},
                {"NET", kNet},     {"GRAPH", kGraph}, {"TUNING", kTuning}, {"ENV", kEnv},
                {"ALLOC", kAlloc}, {"CALL", kCall},   {"PROXY", kProxy}, {"BOOTSTRAP", kBootstrap},
                {"REG", kReg},     {"ALL", kAll}};
  for (const auto& entry : kNames) {
    if (strcasecmp(entry.name, name.c_str()) == 0) return entry.bit;
  }
  return 0;
}

uint32_t parseSubsys(const std::string& text) {
  bool invert = !text.empty() && text[0] == '^';
  uint32_t mask = 0;
  size_t begin = invert ? 1 : 0;
  while (begin <= text.size()) {
    size_t comma = text.find(',', begin);
    if (comma == std::string::npos) comma = text.size();
    mask |= subsysBit(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return invert ? ~mask : mask;
}

std::string expandPath(const std::string& pattern) {
  std::string path;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char code = pattern[++i];
      if (code == 'h') path += gHost;
      else if (code == 'p') path += std::to_string(getpid());
      else if (code == '%') path += '%';
      else path += std::string("%") + code;
    } else {
      path += pattern[i];
    }
  }
  return path;
}

void initLocked() {
  gethostname(gHost, sizeof(gHost) - 1);
  if (char* dot = strchr(gHost, '.')) *dot = '\0';
  gLevel = static_cast<int>(parseLevel(knobs::getString(knobs::KnobId::kDebug)));
  gSubsys = parseSubsys(knobs::getString(knobs::KnobId::kDebugSubsys));
  if (gOut != stdout && gOut != stderr) fclose(gOut);
  gOut = stdout;
  std::string file = knobs::getString(knobs::KnobId::kDebugFile);
  if (!file.empty() && gLevel.load() > 0) {
    if (FILE* f = fopen(expandPath(file).c_str(), "w")) {
      setvbuf(f, nullptr, _IOLBF, 0);
      gOut = f;
    }
  }
  gInitialized = true;
}

void ensureInitialized() {
  if (gInitialized.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gInitialized) initLocked();
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kWarn: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kTrace: return "TRACE";
    default: return "";
  }
}

}  // namespace

bool enabled(Level level, uint32_t subsys) {
  ensureInitialized();
  if (static_cast<int>(level) > gLevel.load(std::memory_order_relaxed)) return false;
  return level == Level::kWarn || (subsys & gSubsys.load(std::memory_order_relaxed)) != 0;
}

void write(Level level, uint32_t /*subsys*/, const char* file, int line, const char* format, ...) {
  char message[2048];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  char device[16] = "";
  if (tDevice >= 0) snprintf(device, sizeof(device), " [%d]", tDevice);
  long tid = syscall(SYS_gettid);
  std::lock_guard<std::mutex> lock(gMutex);
  if (level == Level::kTrace) {
    const char* base = strrchr(file, '/');
    fprintf(gOut, "%s:%d:%ld%s NCCL %s %s:%d %s\n", gHost, getpid(), tid, device, levelName(level),
            base ? base + 1 : file, line, message);
  } else {
    fprintf(gOut, "%s:%d:%ld%s NCCL %s %s\n", gHost, getpid(), tid, device, levelName(level), message);
  }
  fflush(gOut);
}

void setLogDevice(int device) { tDevice = device; }

void reset() {
  std::lock_guard<std::mutex> lock(gMutex);
  initLocked();
}

void printVersionOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    ensureInitialized();
    if (gLevel.load() >= static_cast<int>(Level::kVersion)) {
      std::lock_guard<std::mutex> lock(gMutex);
      fprintf(gOut, "%s:%d:%ld NCCL INFO %s\n", gHost, getpid(), static_cast<long>(syscall(SYS_gettid)),
              versionBanner());
      fflush(gOut);
    }
  });
}

}  // namespace weft::log
