#include "transport/ib/transport.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "transport/ib/connection.h"
#include "transport/ib/port_choice.h"
#include "transport/ib/ports.h"
#include "transport/ib/wire.h"

namespace weft::transport::ib {
namespace {

Status checkParams(const ConnectionParams& params, const char* side) {
  if (params.slotBytes == 0 || params.slotCount <= 0 || params.slotBytes > UINT32_MAX) {
    return invalidArgument("ib transport %s (rank %d, peer rank %d, channel %d): %d slots of %zu bytes; both must "
                           "be positive and a slot at most 4 GiB",
                           side, params.self.rank, params.peer.rank, params.channel, params.slotCount,
                           params.slotBytes);
  }
  return Status::ok();
}

// The port this rank uses for `channel`: the one the topology layer chose (params.netDevice), or
// else the nearest to its GPU, or on its NUMA node (port_choice.h).
Status pickPort(const ConnectionParams& params, const IbPort** port) {
  const PortScan& scan = usablePorts();
  if (!scan.configError.isOk()) return scan.configError;
  if (scan.usable.empty()) {
    return invalidUsage("ib transport: rank %d has no usable verbs port (%s)", params.self.rank, scan.report.c_str());
  }
  if (params.netDevice >= 0 && params.netDevice < static_cast<int>(scan.usable.size())) {
    *port = &scan.usable[params.netDevice];
    return Status::ok();
  }
  std::string gpuPath;
  if (params.self.gpuBusId[0] != '\0') {
    std::string busId = params.self.gpuBusId;
    std::transform(busId.begin(), busId.end(), busId.begin(), [](unsigned char c) { return std::tolower(c); });
    std::error_code error;
    gpuPath = std::filesystem::canonical("/sys/bus/pci/devices/" + busId, error).string();
  }
  *port = &choosePort(scan.usable, gpuPath, params.self.numaNode, params.channel);
  return Status::ok();
}

class IbTransport final : public Transport {
 public:
  const char* name() const override { return "ib"; }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return self.ibPorts > 0 && peer.ibPorts > 0;
  }

  std::vector<NetDevice> netDevices() const override {
    std::vector<NetDevice> devices;
    const PortScan& scan = usablePorts();
    if (!scan.configError.isOk()) return devices;
    for (const IbPort& port : scan.usable) {
      devices.push_back(NetDevice{port.name(), port.device, port.netdev, pciBusIdOf(port.pciPath)});
    }
    return devices;
  }

  Status listen(const ConnectionParams& params, std::unique_ptr<RecvConnection>* connection,
                std::vector<uint8_t>* blob) override {
    WEFT_RETURN_IF_ERROR(checkParams(params, "listen"));
    const IbPort* port = nullptr;
    WEFT_RETURN_IF_ERROR(pickPort(params, &port));
    std::unique_ptr<IbRecvConnection> created;
    IbBlob published;
    WEFT_RETURN_IF_ERROR(IbRecvConnection::create(params, *port, &created, &published));
    encodeBlob(published, blob);
    *connection = std::move(created);
    return Status::ok();
  }

  Status connect(const ConnectionParams& params, std::span<const uint8_t> blob,
                 std::unique_ptr<SendConnection>* connection) override {
    WEFT_RETURN_IF_ERROR(checkParams(params, "connect"));
    IbBlob published;
    WEFT_RETURN_IF_ERROR(decodeBlob(blob, params, &published));
    const IbPort* port = nullptr;
    WEFT_RETURN_IF_ERROR(pickPort(params, &port));
    std::unique_ptr<IbSendConnection> created;
    WEFT_RETURN_IF_ERROR(IbSendConnection::create(params, *port, published, &created));
    *connection = std::move(created);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Transport> makeIbTransport() { return std::make_unique<IbTransport>(); }

int usablePortCount() {
  const PortScan& scan = usablePorts();
  return scan.configError.isOk() ? static_cast<int>(scan.usable.size()) : 0;
}

}  // namespace weft::transport::ib
