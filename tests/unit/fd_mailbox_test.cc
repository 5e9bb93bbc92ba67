// A descriptor sent to a mailbox arrives as a working descriptor of the same file; one sent with
// another tag (any local process can send one) is dropped; an empty mailbox or a missing one is a
// clear error, never a wait.

#include "src/base/fd_mailbox.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace weft {
namespace {

constexpr uint64_t kTag = 0x5eedf00dcafe1234ull;

struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int ends[2];
    if (::pipe(ends) == 0) {
      read = ends[0];
      write = ends[1];
    }
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

TEST(FdMailbox, ADescriptorArrivesAsTheSameFile) {
  FdMailbox mailbox;
  ASSERT_TRUE(FdMailbox::open(&mailbox).isOk());
  Pipe pipe;
  ASSERT_GE(pipe.write, 0);
  ASSERT_TRUE(FdMailbox::send(mailbox.name(), kTag, pipe.write).isOk());
  int received = -1;
  const Status status = mailbox.receive(kTag, &received);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_NE(received, pipe.write);
  ASSERT_EQ(::write(received, "w", 1), 1);
  ::close(received);
  char byte = 0;
  ASSERT_EQ(::read(pipe.read, &byte, 1), 1);
  EXPECT_EQ(byte, 'w');
}

TEST(FdMailbox, ADescriptorCrossesToAnotherProcess) {
  FdMailbox mailbox;
  ASSERT_TRUE(FdMailbox::open(&mailbox).isOk());
  const std::string name = mailbox.name();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child's own pipe: only the descriptor can carry it to the parent.
    int ends[2];
    if (::pipe(ends) != 0 || ::write(ends[1], "c", 1) != 1) ::_exit(2);
    ::_exit(FdMailbox::send(name, kTag, ends[0]).isOk() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not send";
  int received = -1;
  ASSERT_TRUE(mailbox.receive(kTag, &received).isOk());
  char byte = 0;
  EXPECT_EQ(::read(received, &byte, 1), 1);
  EXPECT_EQ(byte, 'c');
  ::close(received);
}

TEST(FdMailbox, ADescriptorWithAnotherTagIsDroppedAndOursStillArrives) {
  FdMailbox mailbox;
  ASSERT_TRUE(FdMailbox::open(&mailbox).isOk());
  Pipe stranger;
  Pipe ours;
  ASSERT_TRUE(FdMailbox::send(mailbox.name(), kTag + 1, stranger.write).isOk());
  ASSERT_TRUE(FdMailbox::send(mailbox.name(), kTag, ours.write).isOk());
  int received = -1;
  ASSERT_TRUE(mailbox.receive(kTag, &received).isOk());
  ASSERT_EQ(::write(received, "o", 1), 1);
  ::close(received);
  char byte = 0;
  ASSERT_EQ(::read(ours.read, &byte, 1), 1);
  EXPECT_EQ(byte, 'o');
  // The stranger's duplicate was closed: with our own end closed, its pipe has no writer left.
  ::close(stranger.write);
  stranger.write = -1;
  EXPECT_EQ(::read(stranger.read, &byte, 1), 0);
}

TEST(FdMailbox, AnEmptyMailboxAndAMissingOneAreErrors) {
  FdMailbox mailbox;
  ASSERT_TRUE(FdMailbox::open(&mailbox).isOk());
  int received = -1;
  const Status empty = mailbox.receive(kTag, &received);
  EXPECT_FALSE(empty.isOk());
  EXPECT_NE(empty.message().find("holds no descriptor"), std::string::npos) << empty.message();
  Pipe pipe;
  const Status missing = FdMailbox::send("weft-fd-nobody-listens-here", kTag, pipe.write);
  EXPECT_FALSE(missing.isOk());
  EXPECT_NE(missing.message().find("@weft-fd-nobody-listens-here"), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("network namespace"), std::string::npos) << missing.message();
}

TEST(FdMailbox, AFullMailboxIsAnErrorNotAWait) {
  FdMailbox mailbox;
  ASSERT_TRUE(FdMailbox::open(&mailbox).isOk());
  Pipe pipe;
  Status status;
  for (int sent = 0; sent < 100000 && status.isOk(); ++sent) status = FdMailbox::send(mailbox.name(), kTag, pipe.write);
  ASSERT_FALSE(status.isOk()) << "a mailbox took every descriptor sent";
  EXPECT_NE(status.message().find("the mailbox is full"), std::string::npos) << status.message();
  int received = -1;
  ASSERT_TRUE(mailbox.receive(kTag, &received).isOk()) << "what was queued is still there";
  ::close(received);
}

TEST(FdMailbox, EachMailboxHasItsOwnName) {
  FdMailbox a;
  FdMailbox b;
  ASSERT_TRUE(FdMailbox::open(&a).isOk());
  ASSERT_TRUE(FdMailbox::open(&b).isOk());
  EXPECT_NE(a.name(), b.name());
  EXPECT_LT(a.name().size(), FdMailbox::kMaxNameBytes);
}

}  // namespace
}  // namespace weft
