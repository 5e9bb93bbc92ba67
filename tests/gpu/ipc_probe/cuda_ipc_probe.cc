// Whether CUDA IPC works between two processes of this machine, asked without Weft, so that the
// GPU check can tell "this machine cannot" from "Weft cannot". The process forks before either
// side touches CUDA; the parent allocates device memory, fills it and exports an IPC handle
// through a pipe; the child opens the handle, checks what it reads and writes a reply pattern,
// which the parent checks after the child has ended.
// Exit status: 0 IPC works; 1 it does not (the failing call is printed); 2 no usable GPU; 3 the
// probe could not set itself up (a pipe, a fork, or the parent's own memory failed): no answer.

#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr size_t kWords = 1 << 20;  // 4 MiB
constexpr uint32_t kParentSalt = 0x9e3779b9u;
constexpr uint32_t kChildSalt = 0x7f4a7c15u;

bool failed(cudaError_t error, const char* side, const char* call) {
  if (error == cudaSuccess) return false;
  std::printf("cuda ipc probe: %s: %s failed: %s (%s)\n", side, call, cudaGetErrorName(error),
              cudaGetErrorString(error));
  return true;
}

std::vector<uint32_t> pattern(uint32_t salt) {
  std::vector<uint32_t> words(kWords);
  for (size_t i = 0; i < kWords; ++i) words[i] = static_cast<uint32_t>(i) * 2654435761u ^ salt;
  return words;
}

bool transfer(bool writing, int fd, void* data, size_t bytes) {
  auto* cursor = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t done = writing ? write(fd, cursor, bytes) : read(fd, cursor, bytes);
    if (done <= 0) return false;
    cursor += done;
    bytes -= static_cast<size_t>(done);
  }
  return true;
}

// Whether `memory` holds pattern(salt), read back to the host; prints `wrong` (for `side`) if not.
bool holdsPattern(const void* memory, uint32_t salt, const char* side, const char* wrong) {
  std::vector<uint32_t> got(kWords);
  if (failed(cudaMemcpy(got.data(), memory, kWords * 4, cudaMemcpyDeviceToHost), side, "cudaMemcpy out")) return false;
  if (got == pattern(salt)) return true;
  std::printf("cuda ipc probe: %s: %s\n", side, wrong);
  return false;
}

// The child: opens the parent's memory, checks it, writes its own pattern over it.
int child(int handleFd) {
  cudaIpcMemHandle_t handle;
  if (!transfer(false, handleFd, &handle, sizeof(handle))) {
    std::printf("cuda ipc probe: child: the parent sent no handle\n");
    return 1;
  }
  void* memory = nullptr;
  if (failed(cudaIpcOpenMemHandle(&memory, handle, cudaIpcMemLazyEnablePeerAccess), "child", "cudaIpcOpenMemHandle")) {
    return 1;
  }
  if (!holdsPattern(memory, kParentSalt, "child", "the parent's memory read back wrong")) return 1;
  const std::vector<uint32_t> reply = pattern(kChildSalt);
  if (failed(cudaMemcpy(memory, reply.data(), kWords * 4, cudaMemcpyHostToDevice), "child", "cudaMemcpy in")) return 1;
  // A copy from pageable memory may return before it lands: done before the parent looks.
  if (failed(cudaDeviceSynchronize(), "child", "cudaDeviceSynchronize")) return 1;
  if (failed(cudaIpcCloseMemHandle(memory), "child", "cudaIpcCloseMemHandle")) return 1;
  return 0;
}

}  // namespace

int main() {
  signal(SIGPIPE, SIG_IGN);  // a child that died early is reported as a failed write, not a killed parent
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("cuda ipc probe: pipe");
    return 3;
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("cuda ipc probe: fork");
    return 3;
  }
  if (pid == 0) {
    close(fds[1]);
    alarm(30);  // never outlive a parent that hangs
    const int status = child(fds[0]);
    std::fflush(stdout);
    _exit(status);
  }
  close(fds[0]);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    std::printf("cuda ipc probe: no usable GPU\n");
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return 2;
  }
  void* memory = nullptr;
  const std::vector<uint32_t> sent = pattern(kParentSalt);
  cudaIpcMemHandle_t handle;
  const bool filled = !failed(cudaMalloc(&memory, kWords * 4), "parent", "cudaMalloc") &&
                      !failed(cudaMemcpy(memory, sent.data(), kWords * 4, cudaMemcpyHostToDevice), "parent",
                              "cudaMemcpy in") &&
                      !failed(cudaDeviceSynchronize(), "parent", "cudaDeviceSynchronize");
  const bool exported = filled && !failed(cudaIpcGetMemHandle(&handle, memory), "parent", "cudaIpcGetMemHandle");
  const bool handed = exported && transfer(true, fds[1], &handle, sizeof(handle));
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!filled) return 3;
  if (!exported) return 1;
  if (!handed) {
    std::printf("cuda ipc probe: the handle could not be written to the child (status %d)\n", status);
    return 1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("cuda ipc probe: the child failed (status %d)\n", status);
    return 1;
  }
  if (!holdsPattern(memory, kChildSalt, "parent", "the child's writes did not reach its memory")) return 1;
  std::printf("cuda ipc probe: a child process read and wrote the parent's GPU memory through CUDA IPC\n");
  return 0;
}
