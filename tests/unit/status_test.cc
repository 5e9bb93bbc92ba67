#include "src/base/status.h"

#include <gtest/gtest.h>

#include "src/base/knobs.h"

namespace weft {
namespace {

TEST(Status, OkIsOk) {
  Status status = Status::ok();
  EXPECT_TRUE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kOk);
}

TEST(Status, FormatsMessageAndKeepsCodeWithContext) {
  Status status = invalidArgument("root %d out of range [0, %d)", 5, 4);
  EXPECT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "root 5 out of range [0, 4)");
  Status wrapped = status.withContext("ncclBroadcast");
  EXPECT_EQ(wrapped.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrapped.message(), "ncclBroadcast: root 5 out of range [0, 4)");
}

TEST(Knobs, ParsesSizes) {
  EXPECT_EQ(knobs::parseSize("123"), 123);
  EXPECT_EQ(knobs::parseSize("4K"), 4096);
  EXPECT_EQ(knobs::parseSize("2M"), 2 << 20);
  EXPECT_EQ(knobs::parseSize("1G"), int64_t{1} << 30);
  EXPECT_FALSE(knobs::parseSize("12Q").has_value());
  EXPECT_FALSE(knobs::parseSize("").has_value());
}

TEST(Knobs, EnvironmentOverridesDefault) {
  unsetenv("NCCL_BUFFSIZE");
  EXPECT_EQ(knobs::getInt(knobs::KnobId::kBuffSize), 4194304);
  setenv("NCCL_BUFFSIZE", "1M", 1);
  EXPECT_EQ(knobs::getInt(knobs::KnobId::kBuffSize), 1 << 20);
  EXPECT_EQ(knobs::source(knobs::KnobId::kBuffSize), "env");
  unsetenv("NCCL_BUFFSIZE");
}

TEST(Knobs, SaysWhetherAValueParses) {
  unsetenv("NCCL_BUFFSIZE");
  EXPECT_TRUE(knobs::valueParses(knobs::KnobId::kBuffSize));  // the default
  setenv("NCCL_BUFFSIZE", " 2M\n", 1);
  EXPECT_TRUE(knobs::valueParses(knobs::KnobId::kBuffSize));
  setenv("NCCL_BUFFSIZE", "lots", 1);
  EXPECT_FALSE(knobs::valueParses(knobs::KnobId::kBuffSize));
  unsetenv("NCCL_BUFFSIZE");
  setenv("NCCL_SHM_DISABLE", "yes", 1);  // a Bool knob reads numbers
  EXPECT_FALSE(knobs::valueParses(knobs::KnobId::kShmDisable));
  unsetenv("NCCL_SHM_DISABLE");
  setenv("NCCL_SOCKET_IFNAME", "lots", 1);  // any text is a string
  EXPECT_TRUE(knobs::valueParses(knobs::KnobId::kSocketIfname));
  unsetenv("NCCL_SOCKET_IFNAME");
}

}  // namespace
}  // namespace weft
