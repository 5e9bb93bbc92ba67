/*
 * A C program compiled against NVIDIA's own nccl.h (the CUDA toolkit's include directory, no
 * other nccl.h on its path), linked against Weft's libnccl.so.2, and launched by mpirun: every
 * collective on host buffers, checked exactly, then a bad argument that must be refused without
 * harming the communicator. Exits 0 when every check passes on every rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#ifdef WEFT_NCCL_H_
#error "this program must be compiled against NVIDIA's nccl.h, not Weft's include/nccl.h"
#endif

enum { kCount = 1021 };

static int rank = 0, nranks = 1, failures = 0;

static void check(int ok, const char* what, size_t index) {
  if (!ok && failures++ < 5) fprintf(stderr, "rank %d: %s wrong at element %zu\n", rank, what, index);
}

static void call(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) {
    fprintf(stderr, "rank %d: %s returned %s: %s\n", rank, what, ncclGetErrorString(result), ncclGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* Element i of rank r's input. */
static int input(int r, size_t i) { return (int)((r + 1) * 1000 + i % 97); }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  ncclUniqueId id;
  if (rank == 0) call(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  call(ncclCommInitRank(&comm, nranks, id, rank), "ncclCommInitRank");

  size_t n = (size_t)nranks;
  int* send = malloc(sizeof(int) * kCount * n);
  int* recv = malloc(sizeof(int) * kCount * n);
  int root = nranks - 1;
  for (size_t i = 0; i < kCount * n; ++i) send[i] = input(rank, i);

  call(ncclAllReduce(send, recv, kCount, ncclInt32, ncclSum, comm, NULL), "ncclAllReduce");
  for (size_t i = 0; i < kCount; ++i) {
    int want = 0;
    for (int r = 0; r < nranks; ++r) want += input(r, i);
    check(recv[i] == want, "AllReduce", i);
  }
  call(ncclAllGather(send, recv, kCount, ncclInt32, comm, NULL), "ncclAllGather");
  for (size_t i = 0; i < kCount * n; ++i) check(recv[i] == input((int)(i / kCount), i % kCount), "AllGather", i);
  call(ncclReduceScatter(send, recv, kCount, ncclInt32, ncclMax, comm, NULL), "ncclReduceScatter");
  for (size_t i = 0; i < kCount; ++i) check(recv[i] == input(nranks - 1, rank * kCount + i), "ReduceScatter", i);
  call(ncclBroadcast(send, recv, kCount, ncclInt32, root, comm, NULL), "ncclBroadcast");
  for (size_t i = 0; i < kCount; ++i) check(recv[i] == input(root, i), "Broadcast", i);
  memset(recv, 0, sizeof(int) * kCount);
  call(ncclReduce(send, recv, kCount, ncclInt32, ncclMin, root, comm, NULL), "ncclReduce");
  for (size_t i = 0; rank == root && i < kCount; ++i) check(recv[i] == input(0, i), "Reduce", i);
  call(ncclAlltoAll(send, recv, kCount, ncclInt32, comm, NULL), "ncclAlltoAll");
  for (size_t i = 0; i < kCount * n; ++i) {
    check(recv[i] == input((int)(i / kCount), rank * kCount + i % kCount), "AlltoAll", i);
  }
  call(ncclGather(send, recv, kCount, ncclInt32, root, comm, NULL), "ncclGather");
  for (size_t i = 0; rank == root && i < kCount * n; ++i) {
    check(recv[i] == input((int)(i / kCount), i % kCount), "Gather", i);
  }
  call(ncclScatter(send, recv, kCount, ncclInt32, root, comm, NULL), "ncclScatter");
  for (size_t i = 0; i < kCount; ++i) check(recv[i] == input(root, rank * kCount + i), "Scatter", i);
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  call(ncclGroupStart(), "ncclGroupStart");
  call(ncclSend(send, kCount, ncclInt32, next, comm, NULL), "ncclSend");
  call(ncclRecv(recv, kCount, ncclInt32, prev, comm, NULL), "ncclRecv");
  call(ncclGroupEnd(), "ncclGroupEnd");
  for (size_t i = 0; i < kCount; ++i) check(recv[i] == input(prev, i), "Send/Recv", i);

  /* A bad argument changes nothing; the communicator keeps working. */
  ncclResult_t bad = ncclAllReduce(NULL, recv, kCount, ncclInt32, ncclSum, comm, NULL);
  check(bad == ncclInvalidArgument, "NULL sendbuff not refused with ncclInvalidArgument", 0);
  bad = ncclBroadcast(send, recv, kCount, ncclInt32, nranks, comm, NULL);
  check(bad == ncclInvalidArgument, "root out of range not refused with ncclInvalidArgument", 0);
  call(ncclAllReduce(send, recv, kCount, ncclInt32, ncclSum, comm, NULL), "ncclAllReduce after bad calls");
  for (size_t i = 0; i < kCount; ++i) {
    int want = 0;
    for (int r = 0; r < nranks; ++r) want += input(r, i);
    check(recv[i] == want, "AllReduce after bad calls", i);
  }

  call(ncclCommDestroy(comm), "ncclCommDestroy");
  free(send);
  free(recv);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: %d ranks, %d wrong\n", total ? "FAILED" : "OK", nranks, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
