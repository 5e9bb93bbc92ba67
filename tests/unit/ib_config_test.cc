// The ib transport's configuration, without a device: NCCL_IB_HCA, the RoCE GID choice, the
// setup blob's checks, and which transport a pair of ranks gets under NCCL_NET.
#if WEFT_IB
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/harness/scoped_env.h"
#include "transport/ib/gid.h"
#include "transport/ib/hca_filter.h"
#include "transport/ib/port_choice.h"
#include "transport/ib/wire.h"
#include "transport/registry.h"

namespace weft::transport::ib {
namespace {

HcaFilter parsed(const char* text) {
  HcaFilter filter;
  Status status = parseHcaFilter(text, &filter);
  EXPECT_TRUE(status.isOk()) << text << ": " << status.message();
  return filter;
}

TEST(IbHcaFilter, EmptyAllowsEveryPort) {
  HcaFilter filter = parsed("");
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
  EXPECT_TRUE(filter.allows("rxe0", 2));
}

TEST(IbHcaFilter, NamesArePrefixesAndPortsOptional) {
  HcaFilter filter = parsed("mlx5_0:1,mlx5_1");
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
  EXPECT_FALSE(filter.allows("mlx5_0", 2));
  EXPECT_TRUE(filter.allows("mlx5_1", 2));
  EXPECT_TRUE(filter.allows("mlx5_10", 1)) << "mlx5_1 is a prefix of mlx5_10 without '='";
  EXPECT_FALSE(filter.allows("rxe0", 1));
}

TEST(IbHcaFilter, CaretExcludes) {
  HcaFilter filter = parsed("^mlx5_1,rxe0:2");
  EXPECT_FALSE(filter.allows("mlx5_1", 1));
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
  EXPECT_TRUE(filter.allows("rxe0", 1));
  EXPECT_FALSE(filter.allows("rxe0", 2));
}

TEST(IbHcaFilter, EqualsMatchesExactNames) {
  HcaFilter filter = parsed("=mlx5_1");
  EXPECT_TRUE(filter.allows("mlx5_1", 1));
  EXPECT_FALSE(filter.allows("mlx5_10", 1));
  HcaFilter excluded = parsed("^=mlx5_1");
  EXPECT_FALSE(excluded.allows("mlx5_1", 1));
  EXPECT_TRUE(excluded.allows("mlx5_10", 1));
}

TEST(IbHcaFilter, MalformedValuesAreErrorsThatQuoteThem) {
  for (const char* bad : {"mlx5_0:x", "mlx5_0:0", "mlx5_0:", ",mlx5_0", "mlx5_0,,rxe0", "^", "=", ":1"}) {
    HcaFilter filter;
    Status status = parseHcaFilter(bad, &filter);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find(std::string("NCCL_IB_HCA=") + bad), std::string::npos) << status.message();
  }
}

GidEntry entry(int index, const char* text, int roceVersion) {
  GidEntry gid;
  gid.index = index;
  EXPECT_EQ(inet_pton(AF_INET6, text, gid.raw), 1) << text;
  gid.roceVersion = roceVersion;
  return gid;
}

// A RoCE port's table as rxe shows it once eth0 has an IPv4 address.
std::vector<GidEntry> roceTable() {
  return {entry(0, "fe80::5054:ff:fe12:3456", 1), entry(1, "fe80::5054:ff:fe12:3456", 2),
          entry(2, "::ffff:10.0.2.15", 1), entry(3, "::ffff:10.0.2.15", 2), entry(4, "::", 0)};
}

TEST(IbGid, DefaultIsRoceV2Ipv4) {
  EXPECT_EQ(chooseGid(roceTable(), GidPreference{-1, 2, AF_INET}), 3);
  EXPECT_EQ(gidText(roceTable()[3].raw), "::ffff:10.0.2.15");
  EXPECT_EQ(gidFamily(roceTable()[3].raw), AF_INET);
}

TEST(IbGid, VersionAndFamilyArePreferences) {
  EXPECT_EQ(chooseGid(roceTable(), GidPreference{-1, 1, AF_INET}), 2);
  EXPECT_EQ(chooseGid(roceTable(), GidPreference{-1, 2, AF_INET6}), 1);
}

TEST(IbGid, ForcedIndexWinsButNeverAZeroGid) {
  EXPECT_EQ(chooseGid(roceTable(), GidPreference{0, 2, AF_INET}), 0);
  EXPECT_EQ(chooseGid(roceTable(), GidPreference{4, 2, AF_INET}), -1) << "index 4 holds the zero GID";
  EXPECT_EQ(chooseGid(roceTable(), GidPreference{9, 2, AF_INET}), -1);
}

TEST(IbGid, WithoutAnIpv4AddressFallsBackToAnyValidGid) {
  std::vector<GidEntry> linkLocalOnly = {entry(0, "::", 0), entry(1, "fe80::1", 2)};
  EXPECT_EQ(chooseGid(linkLocalOnly, GidPreference{-1, 2, AF_INET}), 1);
  std::vector<GidEntry> empty = {entry(0, "::", 0)};
  EXPECT_EQ(chooseGid(empty, GidPreference{-1, 2, AF_INET}), -1);
}

// Two root complexes; on the first, a switch (00:01.0 -> 3b:00.0 -> 3c:0x.0) holds GPU0 and mlx5_0.
constexpr const char* kGpu0 = "/sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0/0000:3c:00.0/0000:3d:00.0";
constexpr const char* kGpu1 = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";

IbPort portAt(const char* device, const char* pciPath, int numaNode) {
  IbPort port;
  port.device = device;
  port.pciPath = pciPath;
  port.numaNode = numaNode;
  return port;
}

std::vector<IbPort> twoSocketPorts() {
  return {portAt("mlx5_0", "/sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0/0000:3c:01.0/0000:3e:00.0", 0),
          portAt("mlx5_1", "/sys/devices/pci0000:00/0000:00:02.0/0000:50:00.0", 0),
          portAt("mlx5_2", "/sys/devices/pci0000:80/0000:80:02.0/0000:82:00.0", 1),
          portAt("rxe0", "", -1)};
}

TEST(IbPortChoice, SharedPciLevelsCountTheCommonWayDown) {
  EXPECT_EQ(sharedPciLevels(kGpu0, twoSocketPorts()[0].pciPath), 3);  // root, 00:01.0, the switch 3b:00.0
  EXPECT_EQ(sharedPciLevels(kGpu0, twoSocketPorts()[1].pciPath), 1);  // the root complex only
  EXPECT_EQ(sharedPciLevels(kGpu0, twoSocketPorts()[2].pciPath), 0);
  EXPECT_EQ(sharedPciLevels(kGpu0, ""), 0);
  EXPECT_EQ(sharedPciLevels("/sys/devices/virtual/net/eth0", kGpu0), 0);
}

TEST(IbPortChoice, ADevicesBusIdIsItsLastPciFunction) {
  EXPECT_EQ(pciBusIdOf(twoSocketPorts()[0].pciPath), "0000:3e:00.0");
  EXPECT_EQ(pciBusIdOf("/sys/devices/pci0000:00/0000:00:03.0/virtio0"), "0000:00:03.0");  // a virtio netdev's
  EXPECT_EQ(pciBusIdOf("/sys/devices/pci0000:00"), "");
  EXPECT_EQ(pciBusIdOf("/sys/devices/virtual/net/eth0"), "");
  EXPECT_EQ(pciBusIdOf(""), "");
}

TEST(IbPortChoice, TheNicNearestTheGpuWinsForEveryChannel) {
  for (int channel = 0; channel < 4; ++channel) {
    EXPECT_EQ(choosePort(twoSocketPorts(), kGpu0, 1, channel).device, "mlx5_0") << channel;
    EXPECT_EQ(choosePort(twoSocketPorts(), kGpu1, 0, channel).device, "mlx5_2") << channel;
  }
}

TEST(IbPortChoice, HostRanksUseTheirNumaNodesPortsChannelByChannel) {
  EXPECT_EQ(choosePort(twoSocketPorts(), "", 0, 0).device, "mlx5_0");
  EXPECT_EQ(choosePort(twoSocketPorts(), "", 0, 1).device, "mlx5_1");
  EXPECT_EQ(choosePort(twoSocketPorts(), "", 0, 2).device, "mlx5_0");
  EXPECT_EQ(choosePort(twoSocketPorts(), "", 1, 5).device, "mlx5_2");
}

TEST(IbPortChoice, AVirtualDeviceWithoutAPlaceIsStillUsed) {
  std::vector<IbPort> onlyRxe = {portAt("rxe0", "", -1)};
  EXPECT_EQ(choosePort(onlyRxe, kGpu0, 0, 3).device, "rxe0");
  EXPECT_EQ(choosePort(onlyRxe, "", 1, 0).device, "rxe0");
}

ConnectionParams connectionParams() {
  ConnectionParams params;
  params.self.rank = 1;
  params.peer.rank = 0;
  snprintf(params.peer.hostname, sizeof(params.peer.hostname), "%s", "host0");
  params.commHash = 0xabcdef;
  params.channel = 3;
  params.slotBytes = 4096;
  params.slotCount = 8;
  return params;
}

TEST(IbWire, BlobRoundTripsAndBelongsToItsConnection) {
  ConnectionParams params = connectionParams();
  IbBlob blob;
  blob.receiverRank = 0;
  blob.commHash = params.commHash;
  blob.channel = params.channel;
  blob.slotBytes = params.slotBytes;
  blob.slotCount = params.slotCount;
  blob.queuePairs[0].qpNumber = 77;
  std::vector<uint8_t> bytes;
  encodeBlob(blob, &bytes);
  IbBlob decoded;
  ASSERT_TRUE(decodeBlob(bytes, params, &decoded).isOk());
  EXPECT_EQ(decoded.queuePairs[0].qpNumber, 77u);

  params.channel = 4;
  Status wrongChannel = decodeBlob(bytes, params, &decoded);
  EXPECT_EQ(wrongChannel.code(), StatusCode::kInternalError);
  EXPECT_NE(wrongChannel.message().find("mixed up"), std::string::npos) << wrongChannel.message();

  bytes.pop_back();
  Status truncated = decodeBlob(bytes, connectionParams(), &decoded);
  EXPECT_EQ(truncated.code(), StatusCode::kInvalidUsage);
  EXPECT_NE(truncated.message().find("different builds"), std::string::npos) << truncated.message();
}

PeerInfo peerOnHost(int rank, const char* host, int ibPorts) {
  PeerInfo peer;
  peer.rank = rank;
  peer.hostHash = std::hash<std::string>{}(host);
  snprintf(peer.hostId, sizeof(peer.hostId), "%s", host);
  snprintf(peer.hostname, sizeof(peer.hostname), "%s", host);
  peer.ibPorts = ibPorts;
  return peer;
}

std::string picked(const PeerInfo& self, const PeerInfo& peer, Status* status = nullptr) {
  Transport* transport = nullptr;
  Status result = pickTransport(self, peer, &transport);
  if (status != nullptr) *status = result;
  return transport != nullptr ? transport->name() : "none";
}

TEST(IbTransportChoice, IbBetweenHostsWhenBothHavePortsElseSockets) {
  harness::ScopedEnv unset("NCCL_NET", nullptr);
  EXPECT_EQ(picked(peerOnHost(0, "a", 1), peerOnHost(1, "b", 2)), "ib");
  EXPECT_EQ(picked(peerOnHost(0, "a", 1), peerOnHost(1, "b", 0)), "socket");
  EXPECT_EQ(picked(peerOnHost(0, "a", 0), peerOnHost(1, "b", 1)), "socket");
}

TEST(IbTransportChoice, NcclNetPicksTheNetworkNotShm) {
  harness::ScopedEnv socket("NCCL_NET", "Socket");
  EXPECT_EQ(picked(peerOnHost(0, "a", 1), peerOnHost(1, "b", 1)), "socket");
  harness::ScopedEnv ib("NCCL_NET", "ib");
  EXPECT_EQ(picked(peerOnHost(0, "a", 1), peerOnHost(1, "b", 1)), "ib");
}

TEST(IbTransportChoice, ForcedIbWithoutPortsFailsNamingTheRank) {
  harness::ScopedEnv ib("NCCL_NET", "IB");
  Status status;
  EXPECT_EQ(picked(peerOnHost(0, "a", 1), peerOnHost(5, "b", 0), &status), "none");
  EXPECT_EQ(status.code(), StatusCode::kInvalidUsage);
  EXPECT_NE(status.message().find("rank 5 (b) has no usable verbs port"), std::string::npos) << status.message();
  EXPECT_EQ(picked(peerOnHost(2, "a", 0), peerOnHost(5, "b", 1), &status), "none");
  EXPECT_NE(status.message().find("rank 2 (a) has no usable verbs port"), std::string::npos) << status.message();
}

TEST(IbTransportChoice, UnknownNetworkIsAnError) {
  harness::ScopedEnv bogus("NCCL_NET", "Carrier-Pigeon");
  Status status;
  EXPECT_EQ(picked(peerOnHost(0, "a", 1), peerOnHost(1, "b", 1), &status), "none");
  EXPECT_NE(status.message().find("NCCL_NET=Carrier-Pigeon"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace weft::transport::ib
#endif  // WEFT_IB
