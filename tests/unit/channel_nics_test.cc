// The network device of each channel, chosen from the topology's NICs (src/core/channel_nics.h),
// on the project's fixtures.

#include "src/core/channel_nics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/topology_fixture.h"

namespace weft::core {
namespace {

namespace fs = std::filesystem;
using transport::NetDevice;

topology::System load(const std::string& name) { return tests::loadTopologyFixture(name); }

PeerInfo hostRank(int numaNode) {
  PeerInfo self;
  self.numaNode = numaNode;
  return self;
}

PeerInfo gpuRank(int numaNode) {
  PeerInfo self = hostRank(numaNode);
  strcpy(self.gpuBusId, "0000:1b:00.0");
  return self;
}

// The H100 server's four NICs as verbs lists them, last first: mlx5_0 and mlx5_1 are on NUMA
// node 0, mlx5_2 and mlx5_3 on node 1.
std::vector<NetDevice> h100DevicesLastFirst() {
  std::vector<NetDevice> devices;
  for (int nic = 3; nic >= 0; --nic) {
    const std::string name = "mlx5_" + std::to_string(nic);
    devices.push_back(NetDevice{name + ":1", name, "", ""});
  }
  return devices;
}

int indexOf(const std::vector<NetDevice>& devices, const std::string& device) {
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].device == device) return static_cast<int>(d);
  }
  return -1;
}

TEST(ChannelNetDevices, GpuRanksSpreadChannelsOverEveryRailInTheTopologysOrder) {
  const topology::System h100 = load("full-dump-h100x8-nvswitch.xml");
  const std::vector<NetDevice> devices = h100DevicesLastFirst();
  const std::vector<int> chosen = channelNetDevices(h100, devices, gpuRank(1), 6);
  const std::vector<std::string> rails = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_0", "mlx5_1"};
  ASSERT_EQ(chosen.size(), rails.size());
  for (size_t channel = 0; channel < rails.size(); ++channel) {
    EXPECT_EQ(chosen[channel], indexOf(devices, rails[channel])) << "channel " << channel;
  }
}

TEST(ChannelNetDevices, ChannelNicsNameTheNicCarryingEachChannelsDevice) {
  const topology::System h100 = load("full-dump-h100x8-nvswitch.xml");
  // Only mlx5_1 and mlx5_3 offered, as NCCL_IB_HCA might leave them.
  std::vector<NetDevice> devices = h100DevicesLastFirst();
  devices.erase(devices.begin() + indexOf(devices, "mlx5_2"));
  devices.erase(devices.begin() + indexOf(devices, "mlx5_0"));
  const std::vector<int> nics = channelNics(h100, devices, gpuRank(1), 3);
  const std::vector<int> chosen = channelNetDevices(h100, devices, gpuRank(1), 3);
  ASSERT_EQ(nics.size(), 3u);
  for (size_t channel = 0; channel < nics.size(); ++channel) {
    ASSERT_GE(nics[channel], 0) << "channel " << channel;
    const topology::Node& nic = h100.node(nics[channel]);
    ASSERT_FALSE(nic.nic.ports.empty());
    EXPECT_EQ(nic.nic.ports.front().name, devices[chosen[channel]].device) << "channel " << channel;
  }
  EXPECT_NE(nics[0], nics[1]);
  EXPECT_EQ(nics[0], nics[2]);
  EXPECT_EQ(channelNics(h100, {}, gpuRank(1), 2), (std::vector<int>{-1, -1}));
}

TEST(ChannelNetDevices, HostRanksUseTheNicsOfTheirOwnNumaNode) {
  const topology::System h100 = load("full-dump-h100x8-nvswitch.xml");
  const std::vector<NetDevice> devices = h100DevicesLastFirst();
  const std::vector<int> socket0 = channelNetDevices(h100, devices, hostRank(0), 4);
  const std::vector<int> socket1 = channelNetDevices(h100, devices, hostRank(1), 4);
  const std::vector<int> unknown = channelNetDevices(h100, devices, hostRank(-1), 4);
  for (int channel = 0; channel < 4; ++channel) {
    EXPECT_EQ(socket0[channel], indexOf(devices, "mlx5_" + std::to_string(channel % 2))) << "channel " << channel;
    EXPECT_EQ(socket1[channel], indexOf(devices, "mlx5_" + std::to_string(2 + channel % 2))) << "channel " << channel;
    EXPECT_EQ(unknown[channel], indexOf(devices, "mlx5_" + std::to_string(channel))) << "channel " << channel;
  }
}

TEST(ChannelNetDevices, AHostRankFarFromEveryNicUsesThemAll) {
  const topology::System h100 = load("full-dump-h100x8-nvswitch.xml");
  const std::vector<NetDevice> devices = h100DevicesLastFirst();
  const std::vector<int> chosen = channelNetDevices(h100, devices, hostRank(7), 4);
  for (int channel = 0; channel < 4; ++channel) {
    EXPECT_EQ(chosen[channel], indexOf(devices, "mlx5_" + std::to_string(channel))) << "channel " << channel;
  }
}

TEST(ChannelNetDevices, DevicesAreFoundByTheirPciFunctionOrTheirNetdev) {
  // Two interfaces (eth0, eth1) at socket 0's CPU and a PCI NIC (86:00.0) on socket 1: a soft-RoCE
  // device on eth1 and an adapter on that PCI function, whose names the file does not give.
  const topology::System system = load("comments-and-gaps.xml");
  const std::vector<NetDevice> devices = {NetDevice{"rxe0:1", "rxe0", "eth1", ""},
                                          NetDevice{"mlx5_9:1", "mlx5_9", "", "0000:86:00.0"}};
  EXPECT_EQ(channelNetDevices(system, devices, hostRank(0), 2), (std::vector<int>{0, 0}));
  EXPECT_EQ(channelNetDevices(system, devices, hostRank(1), 2), (std::vector<int>{1, 1}));
  EXPECT_EQ(channelNetDevices(system, devices, gpuRank(1), 3), (std::vector<int>{0, 1, 0}));
}

TEST(ChannelNetDevices, DevicesOnNoNicOfTheTopologyLeaveTheChoiceToTheTransport) {
  const topology::System h100 = load("full-dump-h100x8-nvswitch.xml");
  const std::vector<NetDevice> devices = {NetDevice{"rxe0:1", "rxe0", "eth0", "0000:00:03.0"}};
  EXPECT_EQ(channelNetDevices(h100, devices, hostRank(0), 3), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(channelNetDevices(h100, {}, gpuRank(0), 2), (std::vector<int>{-1, -1}));
}

}  // namespace
}  // namespace weft::core
