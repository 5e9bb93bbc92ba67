#include "tests/gpu/gpu_presence.h"

#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace weft::gpu_tests {
namespace {

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
  char buffer[256] = {};
  ssize_t got = read(fds[0], buffer, sizeof(buffer) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
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

}  // namespace weft::gpu_tests
