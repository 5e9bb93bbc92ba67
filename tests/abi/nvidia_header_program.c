/*
 * A C program written and compiled against NVIDIA's own nccl.h (the CUDA toolkit's include
 * directory is its only include path) and linked against Weft's libnccl.so.2: the binary
 * compatibility test. It calls no CUDA function and does not link the CUDA runtime.
 *
 * Usage: nvidia_header_program [EXPECTED_LIB_DIR]
 * With EXPECTED_LIB_DIR, also checks that the libnccl.so.2 the loader chose lives there.
 * Exits 0 when every check passes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#ifdef WEFT_NCCL_H_
#error "this program must be compiled against NVIDIA's nccl.h, not Weft's include/nccl.h"
#endif

#define kCount 1000

static int failures = 0;

static void expect(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

static int checkResult(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) {
    fprintf(stderr, "FAILED: %s returned %d (%s): %s\n", call, (int)result,
            ncclGetErrorString(result), ncclGetLastError(NULL));
    ++failures;
    return 0;
  }
  return 1;
}

/* Compares the directory of the library that defines ncclGetVersion with expectedDir. */
static void checkLoadedLibrary(const char* expectedDir) {
  Dl_info info;
  if (dladdr((void*)&ncclGetVersion, &info) == 0 || info.dli_fname == NULL) {
    expect(0, "dladdr finds the library that defines ncclGetVersion");
    return;
  }
  printf("libnccl loaded from %s\n", info.dli_fname);
  if (expectedDir == NULL) return;
  char loaded[PATH_MAX];
  char expected[PATH_MAX];
  if (realpath(info.dli_fname, loaded) == NULL || realpath(expectedDir, expected) == NULL) {
    expect(0, "the loaded library and the expected directory resolve");
    return;
  }
  char* slash = strrchr(loaded, '/');
  if (slash != NULL) *slash = '\0';
  if (strcmp(loaded, expected) != 0) {
    fprintf(stderr, "FAILED: libnccl was loaded from %s, expected %s\n", loaded, expected);
    ++failures;
  }
}

int main(int argc, char** argv) {
  checkLoadedLibrary(argc > 1 ? argv[1] : NULL);

  int version = 0;
  if (checkResult(ncclGetVersion(&version), "ncclGetVersion")) {
    printf("ncclGetVersion: %d (header: %d)\n", version, NCCL_VERSION_CODE);
    expect(version / 100 == NCCL_VERSION_CODE / 100, "library and header agree on major.minor");
  }

  const char* text = ncclGetErrorString(ncclInvalidArgument);
  expect(text != NULL && text[0] != '\0', "ncclGetErrorString gives a message");
  text = ncclGetErrorString(ncclSuccess);
  expect(text != NULL, "ncclGetErrorString(ncclSuccess) is not NULL");

  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (!checkResult(ncclGetUniqueId(&id), "ncclGetUniqueId")) return 1;

  ncclComm_t comm = NCCL_COMM_NULL;
  if (!checkResult(ncclCommInitRank(&comm, 1, id, 0), "ncclCommInitRank")) return 1;

  int count = 0;
  int rank = -1;
  if (checkResult(ncclCommCount(comm, &count), "ncclCommCount")) expect(count == 1, "one rank");
  if (checkResult(ncclCommUserRank(comm, &rank), "ncclCommUserRank")) expect(rank == 0, "rank 0");

  static float send[kCount];
  static float recv[kCount];
  for (int i = 0; i < kCount; ++i) {
    send[i] = (float)(i % 97) * 0.5f - 7.0f;
    recv[i] = -1.0f;
  }
  cudaStream_t stream = (cudaStream_t)0;
  if (checkResult(ncclAllReduce(send, recv, kCount, ncclFloat, ncclSum, comm, stream),
                  "ncclAllReduce")) {
    int wrong = 0;
    for (int i = 0; i < kCount; ++i) wrong += memcmp(&send[i], &recv[i], sizeof(float)) != 0;
    if (wrong != 0) fprintf(stderr, "%d of %d elements differ\n", wrong, kCount);
    expect(wrong == 0, "a 1-rank float sum returns its input");
  }

  checkResult(ncclCommDestroy(comm), "ncclCommDestroy");

  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("OK\n");
  return 0;
}
