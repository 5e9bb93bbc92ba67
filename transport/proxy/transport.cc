#include "transport/proxy/transport.h"

#include <string>

#include "transport/proxy/connection.h"

namespace weft::transport::proxy {
namespace {

class ProxyTransport final : public Transport {
 public:
  ProxyTransport(Transport* network, StagingAllocator allocate)
      : network_(network), allocate_(allocate), name_(std::string("proxy/") + network->name()) {}

  const char* name() const override { return name_.c_str(); }
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return network_->canConnect(self, peer);
  }
  std::vector<NetDevice> netDevices() const override { return network_->netDevices(); }

  Status listen(const ConnectionParams& params, std::unique_ptr<RecvConnection>* connection,
                std::vector<uint8_t>* blob) override {
    std::unique_ptr<RecvConnection> network;
    WEFT_RETURN_IF_ERROR(network_->listen(params, &network, blob));
    std::unique_ptr<ProxyRecvConnection> proxied;
    WEFT_RETURN_IF_ERROR(
        ProxyRecvConnection::create(std::move(network), allocate_, params, network_->name(), &proxied));
    *connection = std::move(proxied);
    return Status::ok();
  }

  Status connect(const ConnectionParams& params, std::span<const uint8_t> blob,
                 std::unique_ptr<SendConnection>* connection) override {
    std::unique_ptr<SendConnection> network;
    WEFT_RETURN_IF_ERROR(network_->connect(params, blob, &network));
    std::unique_ptr<ProxySendConnection> proxied;
    WEFT_RETURN_IF_ERROR(
        ProxySendConnection::create(std::move(network), allocate_, params, network_->name(), &proxied));
    *connection = std::move(proxied);
    return Status::ok();
  }

 private:
  Transport* network_;
  StagingAllocator allocate_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Transport> makeProxyTransport(Transport* network, StagingAllocator allocate) {
  return std::make_unique<ProxyTransport>(network, allocate);
}

}  // namespace weft::transport::proxy
