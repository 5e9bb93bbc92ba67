#include "tests/gpu/gpu_presence.h"

#include <cuda_runtime_api.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace weft::gpu_tests {
namespace {

constexpr int kProbeLimitMs = 10000;

struct Answer {
  bool present = false;
  std::string why;
};

Answer ask() {
  int fds[2];
  if (pipe(fds) != 0) return {false, "cannot ask a child process about CUDA (pipe failed)"};
  pid_t child = fork();
  if (child < 0) return {false, "cannot ask a child process about CUDA (fork failed)"};
  if (child == 0) {
    close(fds[0]);
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    char message[256];
    int length = error == cudaSuccess
                     ? snprintf(message, sizeof(message), "%d", count)
                     : snprintf(message, sizeof(message), "-%s: %s", cudaGetErrorName(error), cudaGetErrorString(error));
    if (write(fds[1], message, static_cast<size_t>(length)) < 0) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  // A wedged driver (after a killed kernel, say) must not hang every test that asks.
  pollfd answer = {fds[0], POLLIN, 0};
  const bool answered = poll(&answer, 1, kProbeLimitMs) == 1;
  char buffer[256] = {};
  const ssize_t got = answered ? read(fds[0], buffer, sizeof(buffer) - 1) : 0;
  close(fds[0]);
  if (!answered) kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  if (!answered) return {false, "the CUDA probe process hung in cudaGetDeviceCount (killed after 10 s)"};
  if (got <= 0) return {false, "the CUDA probe process ended without answering"};
  if (buffer[0] == '-') return {false, std::string("no usable CUDA device (") + (buffer + 1) + ")"};
  if (atoi(buffer) < 1) return {false, "no CUDA device on this machine"};
  return {true, ""};
}

}  // namespace

bool gpuRequired() {
  const char* value = std::getenv("WEFT_GPU_TESTS_REQUIRE_GPU");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

bool gpuPresent(std::string* why) {
  static const Answer answer = ask();
  if (why != nullptr) *why = answer.why;
  return answer.present;
}

bool cudaStartedHere() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/libcuda.so") != std::string::npos) return true;
  }
  return false;
}

std::chrono::seconds gpuTestDeadline(std::chrono::seconds usual) {
  const char* value = std::getenv("WEFT_GPU_TEST_DEADLINE_S");
  const int seconds = value != nullptr ? std::atoi(value) : 0;
  return seconds > 0 ? std::chrono::seconds(seconds) : usual;
}

}  // namespace weft::gpu_tests
