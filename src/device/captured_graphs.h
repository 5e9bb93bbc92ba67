#pragma once
// What a communicator keeps for each CUDA graph its launches were captured into, for as long as
// CUDA keeps the graph or an instance of it: the pinned memory its replays read their tables
// from, what its host nodes read, and where its latest kernel in the capture was, so that its next
// kernel there follows it.
//
// The graph holds each record through a CUDA user object, whose destructor CUDA calls on a thread
// of its own once the last graph and instance made from the capture are destroyed (and their
// launches done). It may make no CUDA call, so it only marks the record released; a later capture
// reuses the record's memory and event. Memory is freed only with the communicator's other GPU
// memory (local_clique.h): freeing pinned memory can wait for every kernel on the GPU, among them
// peers' kernels that wait for this rank.

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <vector>

#include "src/base/status.h"

namespace weft::device {

struct StreamCapture;

class CapturedGraphs {
 public:
  /// One capture sequence of the communicator's launches.
  struct Capture {
    unsigned long long id = 0;
    /// Whether the communicator has a kernel in the capture yet, and an event recorded right after
    /// its latest one, for edges of the graph from it.
    bool hasKernel = false;
    cudaEvent_t afterLastKernel = nullptr;
  };

  CapturedGraphs() = default;
  ~CapturedGraphs();
  CapturedGraphs(const CapturedGraphs&) = delete;
  CapturedGraphs& operator=(const CapturedGraphs&) = delete;

  /// Allocates the memory (one slab: 128 KiB of tables) and event of one capture ahead, so that a
  /// communicator's first capture (and each later one while no other is alive) allocates nothing
  /// while a peer's kernel may wait, unless its tables outgrow the slab.
  Status reserve();
  /// The record of `capture` (active), made where there is none, with the graph's hold on it.
  Status findOrMake(const StreamCapture& capture, Capture** out);
  /// `bytes` of pinned memory, 16-byte aligned, that `capture`'s replays may read for as long as its
  /// graph lives: at `*host` for this thread to write, at `*device` for the kernel to read.
  Status tables(Capture* capture, size_t bytes, char** host, char** device);
  /// Keeps `object` for as long as `capture`'s graph lives (what a host node of it reads).
  Status keep(Capture* capture, std::shared_ptr<const void> object);

 private:
  struct Slab {
    char* host = nullptr;
    char* device = nullptr;
    size_t capacity = 0;
  };
  struct Record {
    Capture capture;
    std::shared_ptr<std::atomic<bool>> released;  // set by CUDA once no graph holds the record
    std::vector<Slab> slabs;                      // the last one is being filled
    size_t used = 0;                              // bytes of the last slab taken
    std::vector<std::shared_ptr<const void>> kept;
  };

  // The record of `capture` (active), or null before the communicator's first launch in it.
  Capture* find(const StreamCapture& capture);
  Status recordOf(const Capture* capture, Record** out);

  // A slab of at least `bytes` for `record`: a free one, else a new one.
  Status addSlab(Record* record, size_t bytes);
  // Allocates a slab of `bytes`.
  static Status allocateSlab(size_t bytes, Slab* out);
  // Returns the slabs and event of released records to the free lists, and forgets the records.
  void reclaim();

  std::vector<std::unique_ptr<Record>> records_;
  std::vector<Slab> freeSlabs_;
  std::vector<cudaEvent_t> freeEvents_;
};

}  // namespace weft::device
