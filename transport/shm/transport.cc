#include "transport/shm/transport.h"

#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <utility>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "transport/shm/blob.h"
#include "transport/shm/connection.h"
#include "transport/shm/layout.h"
#include "transport/shm/segment.h"
#include "transport/shm/stream_trial.h"

namespace weft::transport::shm {
namespace {

std::string shmFolder() {
  std::string dir = knobs::getString(knobs::KnobId::kShmDir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// WEFT_SHM_STREAM_SLOTS. Non-temporal stores are x86-64's here: elsewhere slots go through the
// caches, with no trials.
SlotStreamTrial::Policy slotWritesPolicy() {
  const int64_t value = knobs::getInt(knobs::KnobId::kShmStreamSlots);
#if defined(__x86_64__)
  if (value == 0) return SlotStreamTrial::Policy::kCached;
  if (value == 1) return SlotStreamTrial::Policy::kStreamed;
  if (value != -1) {
    static std::once_flag warned;
    std::call_once(warned, [value] {
      WEFT_WARN("WEFT_SHM_STREAM_SLOTS=%lld: expected 1, 0 or -1; each shm sender measures (-1)",
                static_cast<long long>(value));
    });
  }
  return SlotStreamTrial::Policy::kMeasure;
#else
  (void)value;
  return SlotStreamTrial::Policy::kCached;
#endif
}

const char* policyName(SlotStreamTrial::Policy policy) {
  switch (policy) {
    case SlotStreamTrial::Policy::kCached: return slotWritesName(false);
    case SlotStreamTrial::Policy::kStreamed: return slotWritesName(true);
    case SlotStreamTrial::Policy::kMeasure: break;
  }
  return "as measured";
}

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "shm"; }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return self.sameHost(peer) && self.shmDevice == peer.shmDevice;
  }

  Status listen(const ConnectionParams& params, std::unique_ptr<RecvConnection>* connection,
                std::vector<uint8_t>* blob) override {
    RingLayout layout;
    WEFT_RETURN_IF_ERROR(RingLayout::compute(params.slotBytes, params.slotCount, params.llSlotBytes, &layout));
    char names[96];
    snprintf(names, sizeof(names), "%d-%d-c%d-", params.self.pid, params.peer.pid, params.channel);
    std::string prefix = segmentNamePrefix(params.commHash) + names;
    std::unique_ptr<ShmSegment> segment;
    WEFT_RETURN_IF_ERROR(
        ShmSegment::create(shmFolder(), prefix, layout.totalBytes, params.peer.rank, &segment));

    ShmBlob description{layout.totalBytes, layout.slotBytes, static_cast<uint32_t>(layout.slotCount),
                        layout.llSlotBytes, segment->path()};
    WEFT_INFO(log::kShm,
              "shm: rank %d receives from rank %d on channel %d through %s (%d slots of %zu bytes, LL %zu, "
              "%zu bytes)",
              params.self.rank, params.peer.rank, params.channel, segment->path().c_str(), layout.slotCount,
              layout.slotBytes, layout.llSlotBytes, layout.totalBytes);
    *blob = encodeBlob(description);
    *connection =
        std::make_unique<ShmRecvConnection>(std::move(segment), layout, params.peer.rank, params.channel);
    return Status::ok();
  }

  Status connect(const ConnectionParams& params, std::span<const uint8_t> blob,
                 std::unique_ptr<SendConnection>* connection) override {
    RingLayout layout;
    WEFT_RETURN_IF_ERROR(RingLayout::compute(params.slotBytes, params.slotCount, params.llSlotBytes, &layout));
    ShmBlob description;
    WEFT_RETURN_IF_ERROR(decodeBlob(blob, params.peer.rank, &description));
    if (description.segmentBytes != layout.totalBytes || description.slotBytes != layout.slotBytes ||
        description.slotCount != static_cast<uint32_t>(layout.slotCount) ||
        description.llSlotBytes != layout.llSlotBytes) {
      return invalidArgument("rank %d set up channel %d with %u slots of %" PRIu64 " bytes (LL: %" PRIu64
                             "), rank %d expects %d of %zu (LL: %zu): all ranks must use the same NCCL_BUFFSIZE, "
                             "NCCL_LL_BUFFSIZE and build",
                             params.peer.rank, params.channel, description.slotCount, description.slotBytes,
                             description.llSlotBytes, params.self.rank, layout.slotCount, layout.slotBytes,
                             layout.llSlotBytes);
    }
    std::unique_ptr<ShmSegment> segment;
    WEFT_RETURN_IF_ERROR(ShmSegment::open(description.path, layout.totalBytes, params.peer.rank, &segment));
    WEFT_RETURN_IF_ERROR(segment->unlinkName());

    const auto* header = static_cast<const RingHeader*>(segment->base());
    if (header->magic != kRingMagic || header->slotBytes != layout.slotBytes ||
        header->slotCount != static_cast<uint64_t>(layout.slotCount) || header->llSlotBytes != layout.llSlotBytes) {
      return internalError(
          "shared-memory segment %s of rank %d does not hold a ring of %d slots of %zu bytes: "
          "it was not written by this Weft build",
          description.path.c_str(), params.peer.rank, layout.slotCount, layout.slotBytes);
    }
    const SlotStreamTrial::Policy slotWrites = slotWritesPolicy();
    WEFT_INFO(log::kShm,
              "shm: rank %d sends to rank %d on channel %d through %s (%d slots of %zu bytes, "
              "%zu bytes; slots written %s)",
              params.self.rank, params.peer.rank, params.channel, description.path.c_str(), layout.slotCount,
              layout.slotBytes, layout.totalBytes, policyName(slotWrites));
    *connection = std::make_unique<ShmSendConnection>(std::move(segment), layout, params.self.rank,
                                                      params.peer.rank, params.channel, slotWrites);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<ShmTransport>(); }

std::string segmentNamePrefix(uint64_t commHash) {
  char prefix[32];
  snprintf(prefix, sizeof(prefix), "weft-%016" PRIx64 "-", commHash);
  return prefix;
}

}  // namespace weft::transport::shm
