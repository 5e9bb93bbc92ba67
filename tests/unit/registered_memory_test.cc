// The registrations ncclCommRegister makes: found by range, ended by handle, caches released.

#include "transport/registered_memory.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft::transport {
namespace {

TEST(RegisteredMemory, HoldsOnlyRangesInsideBothEnds) {
  std::vector<char> buffer(100);
  RegisteredMemory memory(buffer.data(), 100);
  EXPECT_TRUE(memory.contains(buffer.data(), 100));
  EXPECT_TRUE(memory.contains(buffer.data() + 40, 60));
  EXPECT_TRUE(memory.contains(buffer.data() + 100, 0));
  EXPECT_FALSE(memory.contains(buffer.data() + 40, 61));
  EXPECT_FALSE(memory.contains(buffer.data() - 1, 10));
  EXPECT_FALSE(memory.contains(buffer.data() + 101, 0));
  EXPECT_FALSE(memory.contains(buffer.data() + 1, ~size_t{0}));  // no wrap-around
}

TEST(RegistrationTable, FindsTheRegistrationThatHoldsARange) {
  std::vector<char> first(4096), second(4096);
  RegistrationTable table;
  EXPECT_TRUE(table.empty());
  RegisteredMemory* a = table.add(first.data(), first.size());
  RegisteredMemory* b = table.add(second.data(), 1024);
  EXPECT_FALSE(table.empty());
  EXPECT_EQ(table.find(first.data() + 100, 200), a);
  EXPECT_EQ(table.find(second.data(), 1024), b);
  EXPECT_EQ(table.find(second.data() + 1000, 100), nullptr) << "the range runs past the registered 1024 bytes";
  EXPECT_EQ(table.find(second.data() + 2048, 8), nullptr);
}

TEST(RegistrationTable, DeregisteringReleasesTheCacheAndRefusesTheHandleAfterwards) {
  std::vector<char> buffer(256);
  RegistrationTable table;
  RegisteredMemory* handle = table.add(buffer.data(), buffer.size());
  int key = 0;
  int value = 0;
  int released = 0;
  handle->cache(&key, &value, [&released] { ++released; });
  void* found = nullptr;
  ASSERT_TRUE(handle->cached(&key, &found));
  EXPECT_EQ(found, &value);
  EXPECT_FALSE(handle->cached(&value, &found));

  ASSERT_TRUE(table.remove(handle).isOk());
  EXPECT_EQ(released, 1);
  EXPECT_EQ(table.find(buffer.data(), 8), nullptr);
  Status again = table.remove(handle);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("not a registration of this communicator"), std::string::npos) << again.message();
  EXPECT_EQ(table.remove(&buffer).code(), StatusCode::kInvalidArgument) << "a pointer that was never a handle";
}

TEST(RegistrationTable, ARegistrationAtAReusedAddressStartsWithAnEmptyCache) {
  std::vector<char> buffer(256);
  RegistrationTable table;
  int key = 0;
  int stale = 0;
  RegisteredMemory* first = table.add(buffer.data(), buffer.size());
  first->cache(&key, &stale, [] {});
  ASSERT_TRUE(table.remove(first).isOk());
  RegisteredMemory* second = table.add(buffer.data(), buffer.size());
  void* found = nullptr;
  EXPECT_FALSE(second->cached(&key, &found)) << "the new registration found the old one's key";
  EXPECT_EQ(table.find(buffer.data(), 256), second);
}

TEST(RegistrationTable, DestroyingTheTableReleasesWhatIsLeft) {
  std::vector<char> buffer(64);
  int released = 0;
  {
    RegistrationTable table;
    int key = 0;
    table.add(buffer.data(), 64)->cache(&key, nullptr, [&released] { ++released; });
    table.add(buffer.data(), 32)->cache(&key, nullptr, [&released] { ++released; });
  }
  EXPECT_EQ(released, 2);
}

}  // namespace
}  // namespace weft::transport
