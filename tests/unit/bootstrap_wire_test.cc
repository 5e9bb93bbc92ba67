#include "src/core/bootstrap_wire.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft::core::wire {
namespace {

net::SocketAddress address(const char* text) {
  net::SocketAddress parsed;
  EXPECT_TRUE(net::SocketAddress::parse(text, &parsed).isOk()) << text;
  return parsed;
}

TEST(BootstrapWire, AddressesRoundTrip) {
  for (const char* text : {"10.0.0.7:29500", "[fd00::2]:1", "[fe80::1%lo]:65535"}) {
    uint8_t bytes[kAddressBytes];
    encodeAddress(address(text), bytes);
    net::SocketAddress back;
    ASSERT_TRUE(parseAddress(bytes, &back).isOk()) << text;
    EXPECT_EQ(back.toString(), address(text).toString());
  }
}

TEST(BootstrapWire, RejectsUnknownAddressFamiliesAndPadding) {
  uint8_t bytes[kAddressBytes];
  encodeAddress(address("1.2.3.4:5"), bytes);
  bytes[0] = 5;
  net::SocketAddress out;
  EXPECT_EQ(parseAddress(bytes, &out).code(), StatusCode::kInvalidArgument);
  encodeAddress(address("1.2.3.4:5"), bytes);
  bytes[kAddressBytes - 1] = 1;
  EXPECT_EQ(parseAddress(bytes, &out).code(), StatusCode::kInvalidArgument);
}

TEST(BootstrapWire, UniqueIdRoundTrips) {
  IdContents contents;
  contents.kind = IdKind::kCommId;
  contents.secret = secretFromText("x");
  contents.root = address("192.0.2.2:29500");
  UniqueId id;
  encodeUniqueId(contents, &id);
  IdContents back;
  ASSERT_TRUE(parseUniqueId(id, &back).isOk());
  EXPECT_EQ(back.kind, IdKind::kCommId);
  EXPECT_TRUE(secretsEqual(back.secret, contents.secret));
  EXPECT_EQ(back.root.toString(), "192.0.2.2:29500");

  UniqueId wrongKind = id;
  wrongKind.bytes[5] = 9;
  EXPECT_EQ(parseUniqueId(wrongKind, &back).code(), StatusCode::kInvalidArgument);
  UniqueId wrongVersion = id;
  wrongVersion.bytes[4] = kVersion + 1;
  Status status = parseUniqueId(wrongVersion, &back);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("same Weft build"), std::string::npos) << status.message();
}

TEST(BootstrapWire, RootHelloRoundTripsAndEveryTruncationFails) {
  RootHello hello{secretFromText("s"), 3, 8, address("127.0.0.1:4000")};
  auto bytes = encodeRootHello(hello);
  RootHello back;
  ASSERT_TRUE(parseRootHello(bytes, &back).isOk());
  EXPECT_EQ(back.rank, 3u);
  EXPECT_EQ(back.nranks, 8u);
  EXPECT_TRUE(secretsEqual(back.secret, hello.secret));
  EXPECT_EQ(back.listenAddress.toString(), "127.0.0.1:4000");
  for (size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_FALSE(parseRootHello(std::span(bytes).first(size), &back).isOk()) << size;
  }
  std::vector<uint8_t> longer(bytes.begin(), bytes.end());
  longer.push_back(0);
  EXPECT_FALSE(parseRootHello(longer, &back).isOk());
}

TEST(BootstrapWire, RootHelloRejectsBadFields) {
  RootHello back;
  auto badRank = encodeRootHello({secretFromText("s"), 8, 8, address("127.0.0.1:4000")});
  EXPECT_EQ(parseRootHello(badRank, &back).code(), StatusCode::kInvalidArgument);
  auto tooMany = encodeRootHello({secretFromText("s"), 0, kMaxRanks + 1, address("127.0.0.1:4000")});
  EXPECT_EQ(parseRootHello(tooMany, &back).code(), StatusCode::kInvalidArgument);
  auto portZero = encodeRootHello({secretFromText("s"), 0, 2, address("127.0.0.1:0")});
  EXPECT_EQ(parseRootHello(portZero, &back).code(), StatusCode::kInvalidArgument);
  auto badMagic = encodeRootHello({secretFromText("s"), 0, 2, address("127.0.0.1:4000")});
  badMagic[0] ^= 1;
  EXPECT_EQ(parseRootHello(badMagic, &back).code(), StatusCode::kInvalidArgument);
  // A peer hello is not a root hello, even at the right size.
  auto peer = encodePeerHello({secretFromText("s"), 0, 2});
  std::vector<uint8_t> padded(peer.begin(), peer.end());
  padded.resize(kRootHelloBytes, 0);
  EXPECT_EQ(parseRootHello(padded, &back).code(), StatusCode::kInvalidArgument);
}

TEST(BootstrapWire, PeerHelloAndTableHeader) {
  auto bytes = encodePeerHello({secretFromText("p"), 1, 2});
  PeerHello back;
  ASSERT_TRUE(parsePeerHello(bytes, &back).isOk());
  EXPECT_EQ(back.rank, 1u);
  EXPECT_EQ(back.nranks, 2u);
  EXPECT_FALSE(parsePeerHello(std::span(bytes).first(bytes.size() - 1), &back).isOk());

  auto header = encodeTableHeader(5);
  EXPECT_TRUE(parseTableHeader(header, 5).isOk());
  EXPECT_EQ(parseTableHeader(header, 4).code(), StatusCode::kInvalidArgument);
}

TEST(BootstrapWire, WelcomeNamesItsRank) {
  auto welcome = encodeWelcome(3, 8);
  EXPECT_TRUE(parseWelcome(welcome, 3, 8).isOk());
  EXPECT_EQ(parseWelcome(welcome, 2, 8).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parseWelcome(welcome, 3, 9).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(parseWelcome(std::span(welcome).first(welcome.size() - 1), 3, 8).isOk());
  auto otherType = welcome;
  otherType[5] = static_cast<uint8_t>(MessageType::kTable);
  Status typeStatus = parseWelcome(otherType, 3, 8);
  EXPECT_NE(typeStatus.message().find("type 2, expected 4"), std::string::npos) << typeStatus.message();
  auto older = welcome;
  older[4] = kVersion - 1;  // an older Weft build's root
  Status olderStatus = parseWelcome(older, 3, 8);
  EXPECT_NE(olderStatus.message().find("version 1"), std::string::npos) << olderStatus.message();
}

TEST(BootstrapWire, FrameHeaderBoundsTheSize) {
  FrameHeader back;
  ASSERT_TRUE(parseFrameHeader(encodeFrameHeader({0xabcd, 12345}), &back).isOk());
  EXPECT_EQ(back.tag, 0xabcdu);
  EXPECT_EQ(back.size, 12345u);
  EXPECT_TRUE(parseFrameHeader(encodeFrameHeader({1, kMaxFrameBytes}), &back).isOk());
  EXPECT_EQ(parseFrameHeader(encodeFrameHeader({1, kMaxFrameBytes + 1}), &back).code(), StatusCode::kInvalidArgument);
}

TEST(BootstrapWire, SecretsFromTextAndRandom) {
  EXPECT_TRUE(secretsEqual(secretFromText("abc"), secretFromText("abc")));
  EXPECT_FALSE(secretsEqual(secretFromText("abc"), secretFromText("abd")));
  EXPECT_FALSE(secretsEqual(secretFromText(""), secretFromText(std::string(1, '\0'))));
  Secret a;
  Secret b;
  ASSERT_TRUE(randomSecret(&a).isOk());
  ASSERT_TRUE(randomSecret(&b).isOk());
  EXPECT_FALSE(secretsEqual(a, b));
}

}  // namespace
}  // namespace weft::core::wire
