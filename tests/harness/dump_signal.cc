#include "tests/harness/dump_signal.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace weft::harness {
namespace {

constexpr std::chrono::seconds kPrintTime{1};

}  // namespace

int dumpSignal() {
  const char* value = std::getenv("WEFT_DUMP_SIGNAL");
  if (value == nullptr) return 0;
  const std::string name = value;
  if (name == "USR1" || name == "SIGUSR1") return SIGUSR1;
  if (name == "USR2" || name == "SIGUSR2") return SIGUSR2;
  char* end = nullptr;
  const long number = std::strtol(value, &end, 10);
  return end != value && *end == '\0' && number > 0 && number < NSIG ? static_cast<int>(number) : 0;
}

void askForProgressDumps(const std::vector<pid_t>& pids) {
  const int signal = dumpSignal();
  if (signal == 0 || pids.empty()) return;
  for (pid_t pid : pids) kill(pid, signal);
  std::this_thread::sleep_for(kPrintTime);
}

void askThisProcessForProgressDump() {
  const int signal = dumpSignal();
  struct sigaction current = {};
  if (signal == 0 || sigaction(signal, nullptr, &current) != 0) return;
  if (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN) return;  // it would end us
  raise(signal);
  std::this_thread::sleep_for(kPrintTime);
}

}  // namespace weft::harness
